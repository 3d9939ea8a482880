#!/usr/bin/env bash
# Installs the real OpenAI client (npm `openai`, pinned) into a cache
# directory and prints its node_modules path; serve's integration test
# drives `cflowc serve` with it. CFLOW_OPENAI_DIR overrides the directory
# ($HOME/.cache/cflow/openai). Needs npm (Debian: apt-get install npm).
set -euo pipefail
dir=${CFLOW_OPENAI_DIR:-$HOME/.cache/cflow/openai}
ver=6.30.1 # no dependencies, runs on Debian's node 20 (7.x wants node 22)
f="$dir/node_modules/openai/package.json"
if [ ! -f "$f" ] || ! grep -q "\"version\": \"$ver\"" "$f"; then
  command -v npm >/dev/null || { echo "openai-client.sh: npm is needed (apt-get install npm)" >&2; exit 1; }
  mkdir -p "$dir"
  [ -f "$dir/package.json" ] || echo '{"name":"cflow-openai-client","private":true}' > "$dir/package.json"
  (cd "$dir" && npm install --no-audit --no-fund --loglevel=error "openai@$ver" >&2)
fi
echo "$dir/node_modules"
