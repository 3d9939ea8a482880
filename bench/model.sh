#!/usr/bin/env bash
# The benchmark model shared by side-by-side.sh and kernel-ab.sh: prints the
# path of a Q4_0 .cflow, either MODEL or a seeded GEOMETRY (tinyllama)
# checkpoint synthesized and converted under OUT once. Usage:
# model.sh CFLOWC OUT.
set -euo pipefail
cflowc="$1"
out="$2"
geometry="${GEOMETRY:-tinyllama}"
if [ -n "${MODEL:-}" ]; then
	echo "$MODEL"
	exit 0
fi
ckpt="$out/$geometry-f16"
cflow="$out/$geometry-q4_0.cflow"
if [ ! -f "$ckpt/config.json" ]; then
	"$cflowc" dev synth --geometry "$geometry" -o "$ckpt" >&2
fi
[ -f "$cflow" ] || "$cflowc" convert --quant q4_0 -o "$cflow" "$ckpt" >&2
echo "$cflow"
