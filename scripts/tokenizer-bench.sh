#!/usr/bin/env bash
# Tokenizer speed, cflow vs the reference (@lenml/tokenizers under node), on
# the same ~64 KiB of the test corpus, for docs/PERFORMANCE.md:
#   - BenchmarkOpenEncode: open the flat tokenizer a converted file carries
#     and encode one line (what every --prompt costs before decoding);
#   - BenchmarkEncode and bench.js: encoding throughput in MB/s.
set -euo pipefail
cd "$(dirname "$0")/.."
nm=$(./scripts/tokenizer-ref.sh)
text=$(mktemp)
trap 'rm -f "$text"' EXIT
CFLOW_BENCH_TEXT="$text" go test ./tokenizer -run '^TestWriteBenchText$' -count=1 > /dev/null
echo "CPU: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) CPUs"
go test ./tokenizer -run '^$' -bench 'BenchmarkOpenEncode|BenchmarkEncode' -benchtime "${BENCHTIME:-20x}" -count 1
for m in llama2 llama3 qwen3 gemma3; do
  node tokenizer/testdata/bench.js "$nm" "$m" < "$text"
done
