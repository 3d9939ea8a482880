#!/usr/bin/env bash
# cflowc serve vs llama-server on the same Q4_0 weights, the same thread
# count and the same requests (bench/serveload): aggregate decode tok/s and
# p50/p99 time to first token at 1, 2, 4, 8 concurrent greedy clients.
# The servers run one after the other (never together), on loopback.
#   1. build cflowc and serveload          → OUT/cflowc, OUT/serveload
#   2. build llama.cpp (llama-cpp.sh)       → bench/llama.cpp/build/bin/llama-server
#   3. TinyLlama-geometry Q4_0 .cflow and its GGUF export (as side-by-side.sh)
#   4. for each server: start it with --parallel = the largest level, wait
#      for /health, run serveload, stop it
# Environment: THREADS (2), CLIENTS ("1 2 4 8"), REQUESTS (4 per client per
# level), TOKENS (64 per request), PROMPT (32 tokens), CTX (512 per
# sequence), OUT (bench/out), MODEL (an existing .cflow instead of step 3).
# Raw results: OUT/serve.jsonl.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
out="${OUT:-$here/out}"
threads="${THREADS:-2}"
clients="${CLIENTS:-1 2 4 8}"
requests="${REQUESTS:-4}"
tokens="${TOKENS:-64}"
prompt="${PROMPT:-32}"
ctx="${CTX:-512}"
geometry="${GEOMETRY:-tinyllama}"
mkdir -p "$out"

cflowc="$out/cflowc"
load="$out/serveload"
(cd "$root" && go build -o "$cflowc" ./cmd/cflowc && go build -o "$load" ./bench/serveload)
server="$here/llama.cpp/build/bin/llama-server"
[ -x "$server" ] || EXTRA_TARGETS=llama-server "$here/llama-cpp.sh"

if [ -n "${MODEL:-}" ]; then
	cflow="$MODEL"
else
	ckpt="$out/$geometry-f16"
	cflow="$out/$geometry-q4_0.cflow"
	[ -f "$ckpt/config.json" ] || "$cflowc" dev synth --geometry "$geometry" -o "$ckpt"
	[ -f "$cflow" ] || "$cflowc" convert --quant q4_0 -o "$cflow" "$ckpt"
fi
gguf="${cflow%.cflow}.gguf"
if [ ! -f "$gguf" ] || [ "$gguf" -ot "$cflow" ]; then
	"$cflowc" export gguf -o "$gguf" "$cflow"
fi
vocab=$("$cflowc" inspect --json "$cflow" | python3 -c 'import json,sys; print(json.load(sys.stdin)["header"]["vocab_size"])')
np=$(echo $clients | tr ' ' '\n' | sort -n | tail -1)
levels=$(echo $clients | tr ' ' ',')
port=$((20000 + RANDOM % 20000))
res="$out/serve.jsonl"
: > "$res"

pid=
stop() { [ -z "$pid" ] || { kill -TERM "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true; pid=; }; }
trap stop EXIT
await() {
	for _ in $(seq 1 600); do
		curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && return 0
		kill -0 "$pid" 2>/dev/null || { echo "server exited" >&2; return 1; }
		sleep 0.2
	done
	echo "server did not come up" >&2
	return 1
}
measure() { # name
	"$load" -url "http://127.0.0.1:$port/v1" -model "$(basename "${cflow%.cflow}")" -name "$1" -clients "$levels" \
		-requests "$requests" -max-tokens "$tokens" -prompt-len "$prompt" -vocab "$vocab" -json | tee -a "$res"
}

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs))"
echo "model: $cflow, gguf: $gguf; $threads threads, --parallel $np, clients {$clients} × $requests requests × $tokens tokens, prompt $prompt"
"$cflowc" serve "$cflow" --port "$port" --parallel "$np" --ctx "$ctx" --threads "$threads" --queue 64 2>"$out/serve-cflowc.log" &
pid=$!
await
measure cflowc
stop
"$server" -m "$gguf" --host 127.0.0.1 --port "$port" -np "$np" -c $((np * ctx)) -t "$threads" -tb "$threads" 2>"$out/serve-llama.log" &
pid=$!
await
measure llama.cpp
stop

python3 - "$res" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
by = {(r["server"], r["clients"]): r for r in rows}
cs = sorted({r["clients"] for r in rows})
one = {s: by.get((s, cs[0]), {}).get("aggregate_tok_s") for s in ("cflowc", "llama.cpp")}
print()
print("| clients | cflowc tok/s | × 1 client | TTFT p50/p99 ms | llama-server tok/s | × 1 client | TTFT p50/p99 ms | cflowc ÷ llama |")
print("|---|---|---|---|---|---|---|---|")
for c in cs:
    a, b = by.get(("cflowc", c)), by.get(("llama.cpp", c))
    f = lambda r, s: "%.2f | %.2f× | %.0f / %.0f" % (r["aggregate_tok_s"], r["aggregate_tok_s"] / one[s], r["ttft_p50_ms"], r["ttft_p99_ms"]) if r else "– | – | –"
    ratio = "%.2f×" % (a["aggregate_tok_s"] / b["aggregate_tok_s"]) if a and b else "–"
    print("| %d | %s | %s | %s |" % (c, f(a, "cflowc"), f(b, "llama.cpp"), ratio))
PY
