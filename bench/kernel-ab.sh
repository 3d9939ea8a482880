#!/usr/bin/env bash
# cflowc under two or more dot kernels on the same weights, runs interleaved
# (`make bench-kernels`): the measurement that decides which kernel a CPU's
# default is (quant's archKernels puts it last). Steps:
#   1. build cflowc → OUT/cflowc; the model as side-by-side.sh makes it
#      (bench/model.sh), recached onto 2 MiB pages
#   2. ROUNDS × for each thread count and --parallel value: cflowc bench
#      --threads T --parallel P --tokens TOKENS --runs RUNS --json once per
#      kernel (CFLOW_KERNEL), the kernels' order reversed every other round;
#      with P = 1 the prompt test (--prompt PROMPT) runs too
#   3. print per configuration each kernel's median tok/s and the median of
#      its per-round ratios to the first kernel (> 1: faster than it)
# Environment: KERNELS ("vnni vnnipair vnnirl": the first is the baseline), THREADS
# ("1 2"), PARALLEL ("1 2 3"), TOKENS (64), PROMPT (512; 0 skips), RUNS (3),
# ROUNDS (4), GEOMETRY (tinyllama), OUT (bench/out), MODEL. A kernel this CPU
# lacks stops the script with exit 2 before any run. Raw results:
# OUT/kernels.jsonl.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
out="${OUT:-$here/out}"
kernels="${KERNELS:-vnni vnnipair vnnirl}"
threads="${THREADS:-1 2}"
parallel="${PARALLEL:-1 2 3}"
tokens="${TOKENS:-64}"
prompt="${PROMPT:-512}"
runs="${RUNS:-3}"
rounds="${ROUNDS:-4}"
mkdir -p "$out"

cflowc="$out/cflowc"
(cd "$root" && go build -o "$cflowc" ./cmd/cflowc)
# The dispatch's own answer: --version names the kernel CFLOW_KERNEL chose,
# and says on stderr which kernels there are when it is not one of them.
for k in $kernels; do
	if ! CFLOW_KERNEL="$k" "$cflowc" --version 2>/dev/null | grep -q "kernel $k)"; then
		echo "kernel-ab: $(CFLOW_KERNEL="$k" "$cflowc" --version 2>&1 >/dev/null)" >&2
		exit 2
	fi
done
cflow=$("$here/model.sh" "$cflowc" "$out")
"$cflowc" dev recache "$cflow"

res="$out/kernels.jsonl"
: > "$res"
cpu="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), family $(grep -m1 'cpu family' /proc/cpuinfo | cut -d: -f2 | tr -d ' '), model $(grep -m1 '^model\s' /proc/cpuinfo | cut -d: -f2 | tr -d ' ')"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs ($cpu)"
echo "model: $cflow; kernels: $kernels; $rounds rounds × threads {$threads} × parallel {$parallel}: cflowc bench --tokens $tokens --runs $runs (--prompt $prompt at parallel 1)"
for round in $(seq 1 "$rounds"); do
	order="$kernels"
	if [ $((round % 2)) -eq 0 ]; then
		order=$(tr ' ' '\n' <<<"$kernels" | tac | tr '\n' ' ')
	fi
	for t in $threads; do
		for p in $parallel; do
			pp=0
			[ "$p" -eq 1 ] && pp="$prompt"
			for k in $order; do
				r=$(CFLOW_KERNEL="$k" "$cflowc" bench --threads "$t" --parallel "$p" --prompt "$pp" \
					--tokens "$tokens" --runs "$runs" --json "$cflow")
				python3 -c 'import json,sys
r=json.loads(sys.argv[1])
if r["kernel"] != sys.argv[2]:
    sys.exit("kernel-ab: asked for " + sys.argv[2] + ", cflowc ran " + r["kernel"])
print(json.dumps({"kernel":r["kernel"],"round":int(sys.argv[3]),"threads":r["threads"],"parallel":r.get("parallel",1),
 "decode_tok_s":r["decode_tok_s"],"prompt_tok_s":r.get("prompt_tok_s"),"roofline_fraction":r["roofline_fraction"],"cpu":r["cpu"]}))' "$r" "$k" "$round" >> "$res"
			done
			echo "round $round, $t thread(s), parallel $p: done" >&2
		done
	done
done

python3 - "$res" "$kernels" <<'PY'
import json, sys, statistics as s
rows = [json.loads(l) for l in open(sys.argv[1])]
ks = sys.argv[2].split()
base = ks[0]
def series(k, t, p, key):
    return [r[key] for r in sorted(rows, key=lambda r: r["round"])
            if r["kernel"] == k and r["threads"] == t and r["parallel"] == p and r.get(key) is not None]
print()
print(f"CPU {rows[0]['cpu']}; medians over {max(r['round'] for r in rows)} rounds, kernels alternated; ratio = median of per-round ratios to {base}")
for key, title in (("decode_tok_s", "decode tok/s (all sequences)"), ("prompt_tok_s", "prompt tok/s")):
    confs = sorted({(r["threads"], r["parallel"]) for r in rows if r.get(key) is not None})
    if not confs:
        continue
    print()
    print(title + ":")
    print()
    print("| threads | parallel | " + " | ".join(ks) + " | " + " | ".join(f"{k} / {base}" for k in ks[1:]) + " |")
    print("|--:|--:|" + "--:|" * (2 * len(ks) - 1))
    for t, p in confs:
        meds = [f"{s.median(series(k, t, p, key)):.2f}" for k in ks]
        ratios = [f"{s.median(b / a for a, b in zip(series(base, t, p, key), series(k, t, p, key))):.3f}×" for k in ks[1:]]
        print(f"| {t} | {p} | " + " | ".join(meds) + " | " + " | ".join(ratios) + " |")
print()
print("roofline fraction at parallel 1 (median): " + ", ".join(
    f"{k} {t}t {100 * s.median(series(k, t, 1, 'roofline_fraction')):.0f}%" for k in ks for t in sorted({r['threads'] for r in rows}) if series(k, t, 1, 'roofline_fraction')))
PY
echo
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg); raw results: $res"
