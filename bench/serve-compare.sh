#!/usr/bin/env bash
# cflowc serve vs llama-server on the same Q4_0 weights, the same thread
# count and the same requests (bench/serveload): end-to-end aggregate tok/s,
# steady decode tok/s (every client decoding, no prompt in flight; see
# bench/serveload) and p50/p99 time to first token at 1, 2, 4, 8 concurrent
# greedy clients.
# The servers run one after the other (never together), on loopback.
#   1. build cflowc and serveload          → OUT/cflowc, OUT/serveload
#   2. build llama.cpp (llama-cpp.sh)       → bench/llama.cpp/build/bin/llama-server
#   3. TinyLlama-geometry Q4_0 .cflow and its GGUF export (as side-by-side.sh),
#      both recached (cflowc dev recache) so both servers map 2 MiB pages
#   4. for each server: start it with --parallel = the largest level, wait
#      for /health, run serveload, stop it
#   5. repeat step 4 ROUNDS times (the servers alternate), report medians
# Environment: THREADS (2), CLIENTS ("1 2 4 8"), REQUESTS (4 per client per
# level), TOKENS (64 per request), PROMPT (32 tokens), CTX (512 per
# sequence), ROUNDS (1), OUT (bench/out), SERVERS ("cflowc llama.cpp"; one of
# them alone to measure only it), MODEL (an existing .cflow instead
# of step 3), LLAMA_ENV (environment for llama-server, e.g.
# OMP_WAIT_POLICY=passive: its OpenMP barriers spin, which collapses on a
# machine whose other processes take the cores). Raw results (one line per server, round and level, with the
# load average before it and the commit cflowc was built from): OUT/serve.jsonl.
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
rounds="${ROUNDS:-1}"
geometry="${GEOMETRY:-tinyllama}"
servers="${SERVERS:-cflowc llama.cpp}"
for name in $servers; do
	case "$name" in cflowc | llama.cpp) ;; *) echo "SERVERS: $name is neither cflowc nor llama.cpp" >&2; exit 2 ;; esac
done
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
# Both engines map their file; the page cache may hold either in small
# folios (written by convert/export, or read with read()), which a mapping
# can only put on 4 KiB pages (decode from 2 MiB folios 1.12× / 1.22× faster
# at 1 / 2 threads on the Zen 3 VM; docs/PERFORMANCE.md, Zen 3 "Kernels"). Recache
# both so the two engines run on the same page sizes, and log each file's
# 2 MiB share.
"$cflowc" dev recache "$cflow" "$gguf"
vocab=$("$cflowc" inspect --json "$cflow" | python3 -c 'import json,sys; print(json.load(sys.stdin)["header"]["vocab_size"])')
np=$(echo $clients | tr ' ' '\n' | sort -n | tail -1)
levels=$(echo $clients | tr ' ' ',')
port=$((20000 + RANDOM % 20000))
commit=$(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown)
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
measure() { # name round
	local la
	la=$(cut -d' ' -f1 /proc/loadavg)
	"$load" -url "http://127.0.0.1:$port/v1" -model "$(basename "${cflow%.cflow}")" -name "$1" -clients "$levels" \
		-requests "$requests" -max-tokens "$tokens" -prompt-len "$prompt" -vocab "$vocab" -json |
		python3 -c 'import json,sys
for l in sys.stdin:
    r = json.loads(l); r["round"], r["load_before"], r["commit"] = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]; print(json.dumps(r), flush=True)' "$2" "$la" "$commit" | tee -a "$res"
}

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs))"
echo "model: $cflow, gguf: $gguf; $threads threads, --parallel $np, clients {$clients} × $requests requests × $tokens tokens, prompt $prompt"
for round in $(seq 1 "$rounds"); do
	for name in $servers; do
		if [ "$name" = cflowc ]; then
			"$cflowc" serve "$cflow" --port "$port" --parallel "$np" --ctx "$ctx" --threads "$threads" --queue 64 2>"$out/serve-cflowc.log" &
		else
			env ${LLAMA_ENV:-} "$server" -m "$gguf" --host 127.0.0.1 --port "$port" -np "$np" -c $((np * ctx)) -t "$threads" -tb "$threads" 2>"$out/serve-llama.log" &
		fi
		pid=$!
		await
		measure "$name" "$round"
		stop
	done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$res" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
keys = ("aggregate_tok_s", "steady_decode_tok_s", "ttft_p50_ms", "ttft_p99_ms")
by = {}
for r in rows:
    by.setdefault((r["server"], r["clients"]), []).append(r)
med = {k: {f: statistics.median(r.get(f, 0) for r in v) for f in keys} for k, v in by.items()}
n = max(len(v) for v in by.values())
cs = sorted({r["clients"] for r in rows})
one = {s: med.get((s, cs[0])) for s in ("cflowc", "llama.cpp")}
x = lambda a, b: "%.2f×" % (a / b) if a and b else "–"
print()
print("medians of %d round(s); aggregate tok/s = completion tokens ÷ wall time (prompts, decode, HTTP); steady decode tok/s = clients ÷ the mean interval between a request's tokens while every client decodes (no prompt in flight); × = ÷ the %d-client figure" % (n, cs[0]))
print("| clients | cflowc tok/s | × | steady decode tok/s | × | TTFT p50/p99 ms | llama-server tok/s | × | steady decode tok/s | × | TTFT p50/p99 ms | cflowc ÷ llama tok/s | steady decode |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for c in cs:
    a, b = med.get(("cflowc", c)), med.get(("llama.cpp", c))
    f = lambda r, s: "%.2f | %s | %.2f | %s | %.0f / %.0f" % (r["aggregate_tok_s"], x(r["aggregate_tok_s"], one[s]["aggregate_tok_s"]),
        r["steady_decode_tok_s"], x(r["steady_decode_tok_s"], one[s]["steady_decode_tok_s"]), r["ttft_p50_ms"], r["ttft_p99_ms"]) if r else "– | – | – | – | –"
    ratio = "%s | %s" % (x(a["aggregate_tok_s"], b["aggregate_tok_s"]), x(a["steady_decode_tok_s"], b["steady_decode_tok_s"])) if a and b else "– | –"
    print("| %d | %s | %s | %s |" % (c, f(a, "cflowc"), f(b, "llama.cpp"), ratio))
PY
