#!/usr/bin/env bash
# Converts every golden fixture (and trained model, if present) to .cflow in
# F32, Q8_0 and Q4_0, verifies each against every pinned trace whose rule
# applies (TRACE.md), and prints a Markdown table: the source of docs/PARITY.md.
# Usage: scripts/parity-report.sh [OUTDIR]   (default out/parity)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-out/parity}
mkdir -p "$out"
go build -o bin/cflowc ./cmd/cflowc
echo "| model | file | trace | rule | worst norm err | worst logit err | argmax | min top-32 | verdict |"
echo "|---|---|---|---|--:|--:|--:|--:|---|"
for dir in golden/fixtures/* golden/families/fixtures/* golden/gemma4_text/fixtures/* golden/trained/*; do
  [ -f "$dir/config.json" ] || continue
  name=$(basename "$dir")
  # A model's traces sit beside its kind: golden/traces for the fixtures,
  # golden/families/traces for the Hugging Face families, golden/trained/traces
  # for the trained models (both fixtures and trained have a "llama").
  case "$dir" in
    golden/trained/*) traces=golden/trained/traces; kind=trained ;;
    golden/families/*) traces=golden/families/traces; kind=family ;;
    golden/gemma4_text/*) traces=golden/gemma4_text/traces; kind=family ;;
    *) traces=golden/traces; kind=fixture ;;
  esac
  for q in f32 q8_0 q4_0; do
    file="$out/${kind}_${name}_${q}.cflow"
    if ! err=$(bin/cflowc convert --quiet --quant "$q" -o "$file" "$dir" 2>&1); then
      # A refused configuration (exit 2, the key named) is a row, not a crash.
      echo "| $name | $q | — | — | — | — | — | — | refused: ${err##*: } |" | sed 's/ refusing rather than computing something else//'
      continue
    fi
    for w in f32 q8_replay q4_replay; do
      tr="$traces/${name}_${w}.json"
      [ -f "$tr" ] || continue
      case "$q:$w" in f32:q4_replay|f32:q8_replay|q8_0:q4_replay|q4_0:q8_replay) continue ;; esac
      bin/cflowc verify "$file" --trace "$tr" --json > "$out/verify.json" || true
      python3 - "$name$([ $kind = trained ] && echo ' (trained)')" "$q" "$w" "$out/verify.json" <<'PY'
import json, sys
name, q, w, path = sys.argv[1:]
d = json.load(open(path))
st = d["steps"]
norm = max(s["norm_rel_err"] for s in st)
logit = max(s["logit_rel_err"] for s in st)
am = sum(1 for s in st if s["argmax_match"])
top = min(s["top32_overlap"] for s in st)
print(f"| {name} | {q} | {w} | {d['rule']} | {norm:.2g} | {logit:.2g} | {am}/{len(st)} | {top} | {'PASS' if d['pass'] else 'fail'} |")
PY
    done
  done
done
