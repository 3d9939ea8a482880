#!/usr/bin/env bash
# cflowc vs llama.cpp on a synthetic Gemma 4 26B-A4B-geometry model, same
# Q4_0 weights (docs/PERFORMANCE.md, "MoE: Gemma 4 26B-A4B geometry"). Steps,
# the first three skipped when their output exists:
#   1. build cflowc; `cflowc dev synth --geometry gemma4_26b_a4b_6l` (f16,
#      seed 1, 11.3 GB: every per-layer shape of the real 26B-A4B, 6 of its
#      30 layers, all 128 experts, top-8); convert to Q4_0 .cflow; export
#      that to GGUF (the same Q4_0 blocks, llama.cpp's gemma4 architecture)
#   2. a copy of the checkpoint whose config says dtype float32, converted
#      again: llama.cpp scales the embedding by √d unrounded, transformers
#      (and cflow) by √d rounded to the checkpoint's dtype; same weights,
#      and its GGUF is byte-identical to step 1's
#   3. cross-check on that copy (what gguf.TestLlamaCppFamilies compares
#      for gemma4_text): llama-simple's greedy ids after BOS and five ids
#      against `cflowc run --temperature 0`; then, because random tied
#      embeddings make the greedy token the input token again, the top-N
#      ids at each generated step and their logit gaps to the top one
#      (llama-server's n_probs against `cflowc run --trace-out`), and the
#      same between cflowc's float-activation and default (int8) kernels
#   4. bytes per token: cflowc's counters by stream (`cflowc bench --json`),
#      the file sizes, and what llama.cpp's graph reads per token, from the
#      GGUF's tensor table: every tensor once, the tied token_embd whole (the
#      output projection) plus one row, 8/128 of each *_exps bank
#   5. timing: bench/side-by-side.sh on these files (MODEL=, PROMPT=0):
#      ROUNDS interleaved rounds × THREADS of `llama-bench -p 0 -n TOKENS
#      -r RUNS -t T` and `cflowc bench --threads T --tokens TOKENS --runs
#      RUNS`, medians, the read probe and roofline from the same invocation;
#      raw results in OUT/GEOMETRY-timing/results.jsonl
# Environment: THREADS ("1 2"), TOKENS (64), RUNS (5), ROUNDS (3; 0 skips
# step 5), OUT
# (bench/out), NPROBS (16), CHECK (1; 0 skips steps 2-3), GEOMETRY
# (gemma4_26b_a4b_6l). Needs ~22 GB of disk in OUT and bench/llama.cpp
# (bench/llama-cpp.sh, or a symlink to a build with llama-server).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
out="${OUT:-$here/out}"
geometry="${GEOMETRY:-gemma4_26b_a4b_6l}"
nprobs="${NPROBS:-16}"
mkdir -p "$out"
cflowc="$out/cflowc"
(cd "$root" && go build -o "$cflowc" ./cmd/cflowc)
bin="$here/llama.cpp/build/bin"
[ -x "$bin/llama-bench" ] || "$here/llama-cpp.sh"

ckpt="$out/$geometry-f16"
cflow="$out/$geometry-q4_0.cflow"
gguf="$out/$geometry-q4_0.gguf"
[ -f "$ckpt/config.json" ] || "$cflowc" dev synth --geometry "$geometry" -o "$ckpt"
[ -f "$cflow" ] || "$cflowc" convert -q --quant q4_0 -o "$cflow" "$ckpt"
if [ ! -f "$gguf" ] || [ "$gguf" -ot "$cflow" ]; then
	"$cflowc" export gguf -o "$gguf" "$cflow" >/dev/null 2>&1
fi

if [ "${CHECK:-1}" != 0 ]; then
	view="$out/$geometry-f32scale"
	vcflow="$view-q4_0.cflow"
	if [ ! -f "$vcflow" ]; then
		mkdir -p "$view"
		ln -sf "$ckpt/model.safetensors" "$view/model.safetensors"
		python3 -c 'import json,sys; c=json.load(open(sys.argv[1])); c["dtype"]="float32"; json.dump(c, open(sys.argv[2],"w"), indent=1)' \
			"$ckpt/config.json" "$view/config.json"
		"$cflowc" convert -q --quant q4_0 -o "$vcflow" "$view"
	fi
	"$cflowc" export gguf -o "$out/view.gguf" "$vcflow" >/dev/null 2>&1
	cmp -s "$out/view.gguf" "$gguf" && echo "cross-check: the float32-scale copy exports the same GGUF bytes" ||
		{ echo "cross-check: the copy's GGUF differs from $gguf" >&2; exit 1; }
	rm -f "$out/view.gguf"
	prompt="2,1000,2000,3000,4000,5000" n=8
	want=$("$cflowc" run --temperature 0 --prompt-ids "$prompt" -n "$n" --threads 2 --trace-out "$out/gemma4-trace.json" "$vcflow" 2>/dev/null)
	got=$("$bin/llama-simple" -m "$gguf" -n "$n" "[1000][2000][3000][4000][5000]" 2>/dev/null | grep -o '\[[0-9]*\]' | tr -d '[]' | tail -n "$n" | tr '\n' ' ')
	echo "greedy after BOS $prompt: cflowc ${want% } / llama.cpp ${got% }"
	[ "$(echo $want)" = "$(echo $got)" ] || { echo "cross-check: greedy ids differ" >&2; exit 1; }
	port=$((18000 + RANDOM % 2000))
	"$bin/llama-server" -m "$gguf" --port "$port" -t 2 -c 256 -np 1 >"$out/llama-server.log" 2>&1 &
	srv=$!
	trap 'kill $srv 2>/dev/null || true' EXIT
	for _ in $(seq 1 300); do
		curl -sf "http://127.0.0.1:$port/health" >/dev/null && break
		sleep 1
	done
	curl -sf "http://127.0.0.1:$port/completion" -H 'Content-Type: application/json' \
		-d "{\"prompt\": [$prompt], \"n_predict\": $n, \"n_probs\": $nprobs, \"temperature\": 0, \"cache_prompt\": false}" >"$out/gemma4-llama-probs.json"
	kill $srv; wait $srv 2>/dev/null || true
	trap - EXIT
	# The same comparison between cflowc's own kernels calibrates it: the
	# trace above ran the float-activation twin; the default rounds
	# activations to int8 as llama.cpp rounds them to Q8_0.
	kern=$("$cflowc" --version | sed -n 's/.*kernel \([a-z0-9]*\)).*/\1/p')
	"$cflowc" run --temperature 0 --prompt-ids "$prompt" -n "$n" --threads 2 --kernel "$kern" --trace-out "$out/gemma4-trace-$kern.json" "$vcflow" >/dev/null 2>&1
	python3 - "$out/gemma4-trace.json" "$out/gemma4-llama-probs.json" "$out/gemma4-trace-$kern.json" "$nprobs" "$kern" <<'PY'
import json, sys
def tops(path):
    j = json.load(open(path))
    if "steps" in j:  # a cflowc trace: the steps after the prompt's last token
        return [list(zip(s["top_ids"], s["top_logits"])) for s in j["steps"][len(j["prompt"]) - 1:]]
    # llama-server: log-probabilities, whose differences are logit differences
    return [[(t["id"], t["logprob"]) for t in p["top_logprobs"]] for p in j["completion_probabilities"]]
def compare(a, b, k):
    overlap, same, worst = [], 0, 0.0
    for x, y in zip(a, b):
        xa, ya = dict(x[:k]), dict(y[:k])
        shared = set(xa) & set(ya)
        overlap.append(len(shared))
        same += [i for i, _ in x[:2]] == [i for i, _ in y[:2]]
        worst = max([worst] + [abs((xa[t] - x[0][1]) - (ya[t] - y[0][1])) for t in shared])
    return f"top-{k} overlap {min(overlap)}..{max(overlap)} over {len(overlap)} steps; same argmax and runner-up on {same}/{len(overlap)}; largest difference of a shared id's logit gap to the top: {worst:.2f}"
f, ll, i8, k, kern = tops(sys.argv[1]), tops(sys.argv[2]), tops(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
print(f"  cflowc (float activations) vs llama.cpp: {compare(f, ll, k)}")
print(f"  cflowc float vs cflowc {kern} (calibration): {compare(f, i8, k)}")
print(f"  cflowc {kern} vs llama.cpp: {compare(i8, ll, k)}")
PY
fi

echo
echo "bytes per token:"
cb=$("$cflowc" bench --threads 2 --tokens 16 --runs 1 --probe-mib 64 --json "$cflow")
python3 - "$cb" "$cflow" <<'PY'
import json, os, sys
r = json.loads(sys.argv[1]); s = r["stream_bytes_per_token"]; f = os.path.getsize(sys.argv[2]); b = r["bytes_per_token"]
print(f"  cflowc: {b/1e6:.1f} MB/token of the {f/1e6:.1f} MB file ({100*b/f:.1f}%): attention {s['attn']/1e6:.1f}, dense MLP {s['dense']/1e6:.1f}, "
      f"router {s['router']/1e6:.1f}, experts {s['experts']/1e6:.1f}, embedding row {s['embed']/1e6:.4f}, LM head {s['lm_head']/1e6:.1f}")
PY
python3 - "$gguf" <<'PY'
import os, struct, sys
path = sys.argv[1]
f = open(path, "rb")
def rd(fmt): return struct.unpack("<" + fmt, f.read(struct.calcsize("<" + fmt)))[0]
def rstr(): return f.read(rd("Q")).decode()
scalar = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
def rval(t):
    if t == 8: return rstr()
    if t == 9:
        it, n = rd("I"), rd("Q")
        return [rval(it) for _ in range(n)]
    return rd(scalar[t])
assert f.read(4) == b"GGUF"
_, nt, nkv = rd("I"), rd("Q"), rd("Q")
kv = {}
for _ in range(nkv):
    key = rstr(); kv[key] = rval(rd("I"))
arch = kv["general.architecture"]
E, K = kv.get(arch + ".expert_count", 0), kv.get(arch + ".expert_used_count", 0)
block = {0: (1, 4), 1: (1, 2), 2: (32, 18), 8: (32, 34)}  # ggml F32, F16, Q4_0, Q8_0: weights, bytes
read = exps = 0
names = []
for _ in range(nt):
    name = rstr(); dims = [rd("Q") for _ in range(rd("I"))]; typ = rd("I"); rd("Q")
    n = 1
    for d in dims: n *= d
    b = n // block[typ][0] * block[typ][1]
    names.append(name)
    if "_exps." in name and E:
        read += b * K // E; exps += b * K // E
    elif name == "token_embd.weight":
        read += b + b // dims[1]
    else:
        read += b
assert "output.weight" not in names, "untied output: count it"
size = os.path.getsize(path)
print(f"  llama.cpp (from the GGUF's tensor table): {read/1e6:.1f} MB/token of the {size/1e6:.1f} MB file ({100*read/size:.1f}%), of which experts {exps/1e6:.1f} ({K} of {E} per bank)")
PY

if [ "${ROUNDS:-3}" != 0 ]; then
	echo
	MODEL="$cflow" PROMPT=0 OUT="$out/$geometry-timing" "$here/side-by-side.sh"
fi
