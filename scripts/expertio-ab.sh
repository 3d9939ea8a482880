#!/bin/sh
# Expert I/O A/B (docs/PERFORMANCE.md, Sapphire Rapids VM, "Expert I/O"):
#   scripts/expertio-ab.sh MODEL [ROUNDS] [LOG]
# Each round decodes 16 greedy tokens with --expert-io sync, direct and mmap at
# 1 and 2 threads (arms alternate, so neighbours share the machine's load),
# checks the three arms emit the same tokens, then prints per round and as
# medians: ms/token, C, IO and IO_eff per layer, and the predicted and
# measured net speedup of direct over sync.
set -e
M=${1:?usage: expertio-ab.sh MODEL [ROUNDS] [LOG]}
R=${2:-5}
LOG=${3:-out/expertio-ab.log}
BIN=${CFLOWC:-bin/cflowc}
mkdir -p "$(dirname "$LOG")"
: > "$LOG"
cat "$M" > /dev/null # the mmap arm is the reference with the whole file in the page cache
for r in $(seq 1 "$R"); do
	for t in 1 2; do
		ref=""
		for m in sync direct mmap; do
			echo "== run $r threads $t $m" >> "$LOG"
			out=$("$BIN" run "$M" --prompt-ids 1 --temperature 0 --max-tokens 17 --threads $t --expert-io $m 2>> "$LOG")
			[ -z "$ref" ] && ref=$out
			[ "$out" = "$ref" ] || { echo "round $r, $t threads: --expert-io $m emitted different tokens" >&2; exit 1; }
		done
	done
	echo "== dd $(dd if="$M" of=/dev/null bs=8M count=128 iflag=direct skip=$((r * 50)) 2>&1 | tail -1)" >> "$LOG"
	echo "== $(uptime)" >> "$LOG"
done
python3 - "$LOG" "$("$BIN" inspect "$M" | awk '$1 == "num_layers" { print $2 }')" <<'PY'
import re, sys, statistics as st
log, L = sys.argv[1], int(sys.argv[2])
runs, cur = {}, None
for line in open(log):
    m = re.match(r'== run (\d+) threads (\d+) (\w+)', line)
    if m:
        cur = (int(m[1]), int(m[2]), m[3]); runs[cur] = {}; continue
    m = re.search(r'decode: \d+ tokens, ([\d.]+) tok/s', line)
    if m and cur: runs[cur]['ms'] = 1000 / float(m[1])
    m = re.search(r'per token ([\d.]+) ms decode, ([\d.]+) ms stalled on expert reads, ([\d.]+) ms disk busy', line)
    if m and cur: runs[cur].update(dec=float(m[1]), stall=float(m[2]), busy=float(m[3]))

def timeline(C, IOe, L, de=2):
    # One staged token, compute split by stream bytes of arch2_4-2k (MB):
    # attention+router, dense (layers 1..L-1; DelayedSum skips FFN 0),
    # top-2 experts, LM head. Reads are FIFO on one disk, IOe per layer,
    # issued at routing; layer l's experts are computed at closePass(min(l+de, L-1)).
    attn, dense, exp, lm = 6.16, 28.31, 14.16, 36.9
    r = C / (L * (attn + exp) + (L - 1) * dense + lm)
    t = disk = 0.0; done = {}; q = []
    for l in range(L):
        t += attn * r
        disk = max(disk, t) + IOe; done[l] = disk
        q.append((min(l + de, L - 1), l))
        for tg, j in [x for x in q if x[0] <= l]:
            t = max(t, done[j]) + exp * r
        q = [x for x in q if x[0] > l]
        if l + 1 < L: t += dense * r
    return t + lm * r

med = st.median
print("threads round  sync direct mmap ms/tok   C  IO IO_eff ms/layer  hidden  net: model timeline measured")
for T in (1, 2):
    rows = []
    for r in sorted({k[0] for k in runs if k[1] == T}):
        s, d, m = runs[(r, T, 'sync')], runs[(r, T, 'direct')], runs[(r, T, 'mmap')]
        C, IO, IOe = (s['dec'] - s['stall']) / L, s['stall'] / L, d['busy'] / L
        row = dict(sync=s['dec'], direct=d['dec'], mmap=m['ms'], C=C, IO=IO, IOe=IOe,
                   hidden=1 - d['stall'] / s['stall'], model=(C + IO) / max(C, IOe),
                   timeline=s['dec'] / timeline(C * L, IOe, L), meas=s['dec'] / d['dec'])
        rows.append(row)
        print(f"{T:7d} {r:5d} {row['sync']:5.0f} {row['direct']:6.0f} {row['mmap']:4.0f}       {C:5.1f} {IO:4.1f} {IOe:5.1f}           {row['hidden']:4.0%}   {row['model']:9.2f} {row['timeline']:8.2f} {row['meas']:8.2f}")
    k = {key: med([x[key] for x in rows]) for key in rows[0]}
    print(f"{T:7d} median {k['sync']:4.0f} {k['direct']:6.0f} {k['mmap']:4.0f}       {k['C']:5.1f} {k['IO']:4.1f} {k['IOe']:5.1f}           {k['hidden']:4.0%}   {k['model']:9.2f} {k['timeline']:8.2f} {k['meas']:8.2f}")
PY
