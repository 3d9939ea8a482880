#!/usr/bin/env bash
# Predicts a quant kernel's main loop in LLVM's pipeline models (llvm-mca),
# for CPUs this machine is not: cycles per loop iteration on each -mcpu, and
# the ports or dependencies that bound it. A model, not a measurement: on
# the Zen 3 VM it put q4avx2i8x4's loop at 171 cycles per 4096 multiply-adds,
# against ~5500-6200 measured cycles per 128x256 tile of 32 iterations
# (docs/PERFORMANCE.md, Zen 3 VM, "Kernels"; the measurement is in the log
# that page names, "Session 12: the VNNI four-column kernel in a pipeline
# model"). Decide kernels by `make bench-kernels` on the CPU itself.
#
#   bench/kernel-mca.sh q4vnni512x4 [CPU ...]   (default: sapphirerapids znver4 znver5)
#
# The loop is the kernel's longest innermost loop body, taken
# from the quant test binary; llvm-mca-19 comes from Debian on first use.
# BOTTLENECK=1 adds llvm-mca's bottleneck analysis.
set -euo pipefail
cd "$(dirname "$0")/.."
sym=${1:?usage: bench/kernel-mca.sh KERNEL [CPU ...]}
shift
cpus=("$@")
[ ${#cpus[@]} -gt 0 ] || cpus=(sapphirerapids znver4 znver5)

mca=$(command -v llvm-mca-19 || true)
if [ -z "$mca" ]; then
  echo "kernel-mca: installing llvm-19 (Debian) for llvm-mca-19" >&2
  if [ "$(id -u)" = 0 ]; then sudo=; else sudo=sudo; fi
  $sudo apt-get install -y llvm-19 >/dev/null || { $sudo apt-get update >/dev/null && $sudo apt-get install -y llvm-19 >/dev/null; }
  mca=$(command -v llvm-mca-19)
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go test -c -o "$work/quant.test" ./quant
objdump -d --no-show-raw-insn -M intel "$work/quant.test" |
  awk -v s="<github.com/cflow-dev/cflow/quant.$sym.abi0>:" '$0 ~ /^[0-9a-f]+ </ {f = (index($0, s) > 0)} f' >"$work/fn.s"
if [ ! -s "$work/fn.s" ]; then
  echo "kernel-mca: no assembly function quant.$sym in the quant test binary" >&2
  exit 2
fi
# The loop: the longest innermost backward jump (no other loop inside).
python3 - "$work/fn.s" "$work/loop.s" <<'PY' || exit 2
import re, sys
ins = []
for line in open(sys.argv[1]):
    m = re.match(r"\s*([0-9a-f]+):\t(.*)", line)
    if m:
        ins.append((int(m.group(1), 16), m.group(2)))
loops = []
for at, text in ins:
    m = re.match(r"j[a-z]+\s+([0-9a-f]+)", text)
    if m and int(m.group(1), 16) < at:
        loops.append((int(m.group(1), 16), at))
# Innermost loops (no other loop inside), the longest of them.
inner = [l for l in loops if not any(o != l and l[0] <= o[0] and o[1] <= l[1] for o in loops)]
best = max(inner, key=lambda l: l[1] - l[0], default=None)
if best is None:
    sys.exit("kernel-mca: the function has no loop")
with open(sys.argv[2], "w") as out:
    out.write(".intel_syntax noprefix\n")
    for at, text in ins:
        if best[0] <= at < best[1] and not text.startswith("j"):
            out.write(re.sub(r"\s*<[^>]*>|\s*#.*", "", text) + "\n")
PY
n=$(($(wc -l <"$work/loop.s") - 1))
echo "quant.$sym: loop of $n instructions"
for cpu in "${cpus[@]}"; do
  out=$("$mca" -mtriple=x86_64 -mcpu="$cpu" -iterations=200 ${BOTTLENECK:+-bottleneck-analysis} "$work/loop.s" 2>&1) || {
    echo "$cpu: llvm-mca failed: $(echo "$out" | head -3)" >&2
    exit 1
  }
  cyc=$(echo "$out" | awk '/^Total Cycles:/ {print $3}')
  rt=$(echo "$out" | awk '/^Block RThroughput:/ {print $3}')
  printf '%-16s %8.1f cycles/iteration (port bound %s)\n' "$cpu" "$(awk -v c="$cyc" 'BEGIN { print c / 200 }')" "$rt"
  if [ -n "${BOTTLENECK:-}" ]; then
    echo "$out" | sed -n '/Cycles with backend pressure/,/Memory Dependencies/p'
  fi
done
