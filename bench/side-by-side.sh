#!/usr/bin/env bash
# cflowc vs llama.cpp decode on the same weights, same thread counts, runs
# interleaved (`make bench`). Steps, each skipped when its output exists:
#   1. build cflowc                     → bench/out/cflowc
#   2. build llama.cpp (llama-cpp.sh)   → bench/llama.cpp/build/bin/llama-bench
#   3. synthesize a seeded TinyLlama-1.1B-geometry f16 checkpoint
#   4. convert it to Q4_0 .cflow, export that to GGUF (identical Q4_0 blocks)
#   5. ROUNDS × for each thread count: llama-bench -p 0 -n TOKENS -t T, then
#      cflowc bench --threads T --tokens TOKENS; each reports its median
#   6. print the table: median over rounds per engine, their ratio, and the
#      cflowc read-bandwidth roofline measured in the same invocation
# Environment: THREADS ("1 2"), TOKENS (64), RUNS (5 per invocation),
# ROUNDS (3), GEOMETRY (tinyllama), OUT (bench/out), MODEL (an existing
# .cflow to use instead of steps 3–4). Raw results: OUT/results.jsonl; the
# tok/s-vs-threads plot drawn from them (bench/plot): OUT/decode-threads.svg.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
out="${OUT:-$here/out}"
threads="${THREADS:-1 2}"
tokens="${TOKENS:-64}"
runs="${RUNS:-5}"
rounds="${ROUNDS:-3}"
geometry="${GEOMETRY:-tinyllama}"
mkdir -p "$out"

cflowc="$out/cflowc"
(cd "$root" && go build -o "$cflowc" ./cmd/cflowc)

llama_bench="$here/llama.cpp/build/bin/llama-bench"
[ -x "$llama_bench" ] || "$here/llama-cpp.sh"

if [ -n "${MODEL:-}" ]; then
	cflow="$MODEL"
else
	ckpt="$out/$geometry-f16"
	cflow="$out/$geometry-q4_0.cflow"
	if [ ! -f "$ckpt/config.json" ]; then
		"$cflowc" dev synth --geometry "$geometry" -o "$ckpt"
	fi
	[ -f "$cflow" ] || "$cflowc" convert --quant q4_0 -o "$cflow" "$ckpt"
fi
gguf="${cflow%.cflow}.gguf"
if [ ! -f "$gguf" ] || [ "$gguf" -ot "$cflow" ]; then
	"$cflowc" export gguf -o "$gguf" "$cflow"
fi

res="$out/results.jsonl"
: > "$res"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs"
echo "model: $cflow ($(du -h "$cflow" | cut -f1)), gguf: $gguf"
echo "$rounds rounds × threads {$threads}: llama-bench -p 0 -n $tokens -r $runs; cflowc bench --tokens $tokens --runs $runs"
for round in $(seq 1 "$rounds"); do
	for t in $threads; do
		ll=$("$llama_bench" -m "$gguf" -p 0 -n "$tokens" -r "$runs" -t "$t" -o json 2>/dev/null)
		python3 -c 'import json,sys,statistics as s
r=json.loads(sys.argv[1])[0]
print(json.dumps({"engine":"llama.cpp","round":int(sys.argv[2]),"threads":r["n_threads"],"tok_s":s.median(r["samples_ts"])}))' "$ll" "$round" >> "$res"
		cf=$("$cflowc" bench --threads "$t" --tokens "$tokens" --runs "$runs" --json "$cflow")
		python3 -c 'import json,sys
r=json.loads(sys.argv[1])
print(json.dumps({"engine":"cflowc","round":int(sys.argv[2]),"threads":r["threads"],"tok_s":r["decode_tok_s"],
 "gb_s":r["gb_s"],"roofline_gb_s":r["roofline_gb_s"],"roofline_tok_s":r["roofline_tok_s"],
 "roofline_fraction":r["roofline_fraction"],"bytes_per_token":r["bytes_per_token"],"kernel":r["kernel"]}))' "$cf" "$round" >> "$res"
		echo "round $round, $t thread(s): done" >&2
	done
done

python3 - "$res" <<'PY'
import json, sys, statistics as s
rows = [json.loads(l) for l in open(sys.argv[1])]
def vals(engine, t, key="tok_s"):
    return [r[key] for r in sorted(rows, key=lambda r: r["round"]) if r["engine"] == engine and r["threads"] == t]
def med(engine, t, key="tok_s"):
    v = vals(engine, t, key)
    return s.median(v) if v else float("nan")
ts = sorted({r["threads"] for r in rows})
cf = [r for r in rows if r["engine"] == "cflowc"]
print()
print(f"cflowc kernel {cf[0]['kernel']}, {cf[0]['bytes_per_token']/1e6:.1f} MB of weights per token; medians over {max(r['round'] for r in rows)} interleaved rounds")
print()
print("| threads | llama.cpp tok/s | cflowc tok/s | ratio of medians | median of paired ratios | read probe GB/s | roofline tok/s | cflowc GB/s | roofline fraction |")
print("|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
for t in ts:
    l, c = med("llama.cpp", t), med("cflowc", t)
    paired = s.median(b / a for a, b in zip(vals("llama.cpp", t), vals("cflowc", t)))
    print(f"| {t} | {l:.2f} | {c:.2f} | {c/l:.2f}× | {paired:.2f}× | {med('cflowc', t, 'roofline_gb_s'):.1f} | "
          f"{med('cflowc', t, 'roofline_tok_s'):.1f} | {med('cflowc', t, 'gb_s'):.1f} | {100*med('cflowc', t, 'roofline_fraction'):.0f}% |")
print()
print("per round (llama.cpp / cflowc tok/s):")
for t in ts:
    print(f"  {t} thread(s): " + ", ".join(f"{a:.2f} / {b:.2f}" for a, b in zip(vals("llama.cpp", t), vals("cflowc", t))))
PY
(cd "$root" && go run ./bench/plot -in "$res" -o "$out/decode-threads.svg" >/dev/null)
echo
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg); raw results: $res; plot: $out/decode-threads.svg"
