#!/usr/bin/env bash
# cflowc vs llama.cpp decode and prompt processing on the same weights, same
# thread counts, runs interleaved (`make bench`). Steps, each skipped when
# its output exists:
#   1. build cflowc                     → bench/out/cflowc
#   2. build llama.cpp (llama-cpp.sh)   → bench/llama.cpp/build/bin/llama-bench
#   3. synthesize a seeded TinyLlama-1.1B-geometry f16 checkpoint
#   4. convert it to Q4_0 .cflow, export that to GGUF (identical Q4_0 blocks);
#      recache both (cflowc dev recache) so both engines map 2 MiB pages
#   5. ROUNDS × for each thread count: llama-bench -p PROMPT -n TOKENS -t T,
#      then cflowc bench --threads T --prompt PROMPT --tokens TOKENS; each
#      reports its medians (ppPROMPT and tgTOKENS)
#   6. print the tables: decode and prompt, median over rounds per engine,
#      their ratios, and the cflowc read-bandwidth roofline measured in the
#      same invocation
# Environment: THREADS ("1 2"), TOKENS (64), PROMPT (512; 0 skips the prompt
# test), RUNS (5 per invocation),
# ROUNDS (3), GEOMETRY (tinyllama), OUT (bench/out), MODEL (an existing
# .cflow to use instead of steps 3–4). Raw results: OUT/results.jsonl; the
# tok/s-vs-threads plot drawn from them (bench/plot): OUT/decode-threads.svg.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
out="${OUT:-$here/out}"
threads="${THREADS:-1 2}"
tokens="${TOKENS:-64}"
prompt="${PROMPT:-512}"
runs="${RUNS:-5}"
rounds="${ROUNDS:-3}"
mkdir -p "$out"

cflowc="$out/cflowc"
(cd "$root" && go build -o "$cflowc" ./cmd/cflowc)

llama_bench="$here/llama.cpp/build/bin/llama-bench"
[ -x "$llama_bench" ] || "$here/llama-cpp.sh"

cflow=$("$here/model.sh" "$cflowc" "$out")
gguf="${cflow%.cflow}.gguf"
if [ ! -f "$gguf" ] || [ "$gguf" -ot "$cflow" ]; then
	"$cflowc" export gguf -o "$gguf" "$cflow"
fi
# Both engines map their file; the page cache may hold either in small
# folios (written by convert/export, or read with read()), which a mapping
# can only put on 4 KiB pages (decode from 2 MiB folios 1.12× / 1.22× faster
# at 1 / 2 threads on the Zen 3 VM; docs/PERFORMANCE.md, Zen 3 "Kernels"). Recache
# both so the two engines run on the same page sizes, and log each file's
# 2 MiB share.
"$cflowc" dev recache "$cflow" "$gguf"

res="$out/results.jsonl"
: > "$res"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), family $(grep -m1 'cpu family' /proc/cpuinfo | cut -d: -f2 | tr -d ' '), model $(grep -m1 '^model\s' /proc/cpuinfo | cut -d: -f2 | tr -d ' '))"
echo "model: $cflow ($(du -h "$cflow" | cut -f1)), gguf: $gguf"
echo "$rounds rounds × threads {$threads}: llama-bench -p $prompt -n $tokens -r $runs; cflowc bench --prompt $prompt --tokens $tokens --runs $runs"
for round in $(seq 1 "$rounds"); do
	for t in $threads; do
		ll=$("$llama_bench" -m "$gguf" -p "$prompt" -n "$tokens" -r "$runs" -t "$t" -o json 2>/dev/null)
		python3 -c 'import json,sys,statistics as s
for r in json.loads(sys.argv[1]):
    test = "pp" if r["n_prompt"] > 0 else "tg"
    print(json.dumps({"engine":"llama.cpp","test":test,"round":int(sys.argv[2]),"threads":r["n_threads"],"tok_s":s.median(r["samples_ts"])}))' "$ll" "$round" >> "$res"
		cf=$("$cflowc" bench --threads "$t" --prompt "$prompt" --tokens "$tokens" --runs "$runs" --json "$cflow")
		python3 -c 'import json,sys
r=json.loads(sys.argv[1])
print(json.dumps({"engine":"cflowc","test":"tg","round":int(sys.argv[2]),"threads":r["threads"],"tok_s":r["decode_tok_s"],
 "gb_s":r["gb_s"],"roofline_gb_s":r["roofline_gb_s"],"roofline_tok_s":r["roofline_tok_s"],
 "roofline_fraction":r["roofline_fraction"],"bytes_per_token":r["bytes_per_token"],"kernel":r["kernel"],"cpu":r["cpu"],
 "huge_page_fraction":r.get("huge_page_fraction")}))
if r.get("prompt_tokens"):
    print(json.dumps({"engine":"cflowc","test":"pp","round":int(sys.argv[2]),"threads":r["threads"],"tok_s":r["prompt_tok_s"],"cpu":r["cpu"]}))' "$cf" "$round" >> "$res"
		echo "round $round, $t thread(s): done" >&2
	done
done

python3 - "$res" <<'PY'
import json, sys, statistics as s
rows = [json.loads(l) for l in open(sys.argv[1])]
def vals(engine, t, key="tok_s", test="tg"):
    return [r[key] for r in sorted(rows, key=lambda r: r["round"]) if r["engine"] == engine and r["threads"] == t and r["test"] == test]
def med(engine, t, key="tok_s", test="tg"):
    v = vals(engine, t, key, test)
    return s.median(v) if v else float("nan")
ts = sorted({r["threads"] for r in rows})
cf = [r for r in rows if r["engine"] == "cflowc" and r["test"] == "tg"]
print()
print(f"CPU {cf[0]['cpu']}; cflowc kernel {cf[0]['kernel']}, {cf[0]['bytes_per_token']/1e6:.1f} MB of weights per token; medians over {max(r['round'] for r in rows)} interleaved rounds")
hp = [r["huge_page_fraction"] for r in cf if r.get("huge_page_fraction") is not None]
if hp:
    span = f"{100*min(hp):.0f}%" if round(100*min(hp)) == round(100*max(hp)) else f"{100*min(hp):.0f}–{100*max(hp):.0f}%"
    print(f"cflowc's model mapping on 2 MiB pages: {span} over the runs")
print()
print("decode (tg):")
print()
print("| threads | llama.cpp tok/s | cflowc tok/s | ratio of medians | median of paired ratios | read probe GB/s | roofline tok/s | cflowc GB/s | roofline fraction |")
print("|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
for t in ts:
    l, c = med("llama.cpp", t), med("cflowc", t)
    paired = s.median(b / a for a, b in zip(vals("llama.cpp", t), vals("cflowc", t)))
    print(f"| {t} | {l:.2f} | {c:.2f} | {c/l:.2f}× | {paired:.2f}× | {med('cflowc', t, 'roofline_gb_s'):.1f} | "
          f"{med('cflowc', t, 'roofline_tok_s'):.1f} | {med('cflowc', t, 'gb_s'):.1f} | {100*med('cflowc', t, 'roofline_fraction'):.0f}% |")
if any(r["test"] == "pp" for r in rows):
    print()
    print("prompt processing (pp):")
    print()
    print("| threads | llama.cpp tok/s | cflowc tok/s | ratio of medians | median of paired ratios |")
    print("|--:|--:|--:|--:|--:|")
    for t in ts:
        l, c = med("llama.cpp", t, test="pp"), med("cflowc", t, test="pp")
        paired = s.median(b / a for a, b in zip(vals("llama.cpp", t, test="pp"), vals("cflowc", t, test="pp")))
        print(f"| {t} | {l:.2f} | {c:.2f} | {c/l:.2f}× | {paired:.2f}× |")
print()
print("per round (llama.cpp / cflowc tok/s):")
for test in ("tg", "pp"):
    for t in ts:
        if vals("cflowc", t, test=test):
            print(f"  {test}, {t} thread(s): " + ", ".join(f"{a:.2f} / {b:.2f}" for a, b in zip(vals("llama.cpp", t, test=test), vals("cflowc", t, test=test))))
PY
(cd "$root" && go run ./bench/plot -in "$res" -o "$out/decode-threads.svg" >/dev/null)
echo
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg); raw results: $res; plot: $out/decode-threads.svg"
