#!/usr/bin/env bash
# NUMA-Torch-style comparison (their Table IV) for cflow decode on a real
# multi-socket server; docs/NUMA.md explains each configuration and what
# differs from NUMA-Torch's prefill measurements. Configurations, each
# `cflowc bench --json` on the same file, ROUNDS times, interleaved:
#   default      plain path, no policy: pages land where first touched
#   interleave   plain path under numactl --interleave=all
#   localalloc   plain path under numactl --localalloc
#   socket0      node 0 only: numactl --cpunodebind=0 --membind=0, node 0's CPUs
#   cflow-plan   one pinned worker group per node, shards bound by the plan
# The plain path is forced with CFLOW_NUMA_TOPOLOGY naming one node that
# owns every CPU; cflow-plan leaves the variable unset (sysfs topology).
# Page-cache pages keep their node across runs, so before every run the
# model's pages are evicted (vmtouch -e, or drop_caches as root); without
# either, the script refuses unless ALLOW_WARM_CACHE=1.
# Environment: MODEL (a .cflow/.vflow converted with --numa-nodes = this
# machine's node count; default: synthesize TinyLlama geometry as
# side-by-side.sh does), THREADS (every online CPU), TOKENS (64), RUNS (5),
# ROUNDS (3), OUT (bench/out). Raw results: OUT/numa-results.jsonl.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
out="${OUT:-$here/out}"
tokens="${TOKENS:-64}"
runs="${RUNS:-5}"
rounds="${ROUNDS:-3}"
mkdir -p "$out"

command -v numactl >/dev/null || { echo "numactl not found (apt-get install numactl)" >&2; exit 1; }
nodes=$(ls -d /sys/devices/system/node/node[0-9]* | wc -l)
cpus_all=$(cat /sys/devices/system/cpu/online)
cpus0=$(cat /sys/devices/system/node/node0/cpulist)
count() { python3 -c 'import sys
n=0
for f in sys.argv[1].split(","):
    a,_,b=f.partition("-"); n+=int(b or a)-int(a)+1
print(n)' "$1"; }
threads="${THREADS:-$(count "$cpus_all")}"
threads0=$(( threads * $(count "$cpus0") / $(count "$cpus_all") ))
[ "$threads0" -ge 1 ] || threads0=1
if [ "$nodes" -lt 2 ]; then
	echo "warning: $nodes NUMA node(s): the configurations will not differ (simulate with CFLOW_NUMA_TOPOLOGY only for correctness, not speed)" >&2
fi

cflowc="$out/cflowc"
(cd "$root" && go build -o "$cflowc" ./cmd/cflowc)
if [ -n "${MODEL:-}" ]; then
	model="$MODEL"
else
	ckpt="$out/tinyllama-f16"
	model="$out/tinyllama-q4_0-numa$nodes.cflow"
	[ -f "$ckpt/config.json" ] || "$cflowc" dev synth --geometry tinyllama -o "$ckpt"
	[ -f "$model" ] || "$cflowc" convert --quant q4_0 --numa-nodes "$nodes" -o "$model" "$ckpt"
fi

evict() {
	if command -v vmtouch >/dev/null; then
		vmtouch -eq "$model"
	elif [ -w /proc/sys/vm/drop_caches ]; then
		sync && echo 3 > /proc/sys/vm/drop_caches
	elif [ "${ALLOW_WARM_CACHE:-0}" = 1 ]; then
		return 0
	else
		echo "cannot evict $model from the page cache (install vmtouch or run as root); ALLOW_WARM_CACHE=1 to run anyway" >&2
		exit 1
	fi
}

one_node="0:$cpus_all"
run() { # name, threads, env topology ("" = unset), numactl args...
	local name=$1 t=$2 topo=$3
	shift 3
	evict
	local json
	if [ -n "$topo" ]; then
		json=$(CFLOW_NUMA_TOPOLOGY="$topo" "$@" "$cflowc" bench --threads "$t" --tokens "$tokens" --runs "$runs" --probe-mib 256 --probe-runs 1 --json "$model")
	else
		json=$(env -u CFLOW_NUMA_TOPOLOGY "$@" "$cflowc" bench --threads "$t" --tokens "$tokens" --runs "$runs" --probe-mib 256 --probe-runs 1 --json "$model")
	fi
	python3 -c 'import json,sys
r=json.loads(sys.argv[1])
print(json.dumps({"config":sys.argv[2],"round":int(sys.argv[3]),"threads":r["threads"],"tok_s":r["decode_tok_s"],"gb_s":r["gb_s"]}))' "$json" "$name" "$round" >> "$res"
	echo "round $round: $name done" >&2
}

res="$out/numa-results.jsonl"
: > "$res"
echo "$nodes nodes, CPUs $cpus_all (node 0: $cpus0); $threads threads ($threads0 on one socket); model $model"
for round in $(seq 1 "$rounds"); do
	run default "$threads" "$one_node"
	run interleave "$threads" "$one_node" numactl --interleave=all
	run localalloc "$threads" "$one_node" numactl --localalloc
	run socket0 "$threads0" "0:$cpus0" numactl --cpunodebind=0 --membind=0
	run cflow-plan "$threads" ""
done

python3 - "$res" <<'PY'
import json, sys, statistics as s
rows = [json.loads(l) for l in open(sys.argv[1])]
order = ["default", "interleave", "localalloc", "socket0", "cflow-plan"]
med = {c: s.median(r["tok_s"] for r in rows if r["config"] == c) for c in order}
gbs = {c: s.median(r["gb_s"] for r in rows if r["config"] == c) for c in order}
base, plan = med["default"], med["cflow-plan"]
print(f"{'configuration':<14}{'tok/s':>10}{'GB/s':>9}{'vs default':>12}{'cflow-plan speedup':>20}")
for c in order:
    print(f"{c:<14}{med[c]:>10.2f}{gbs[c]:>9.2f}{med[c]/base:>11.2f}x{plan/med[c]:>19.2f}x")
PY
