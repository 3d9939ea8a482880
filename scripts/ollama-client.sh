#!/usr/bin/env bash
# Installs the real Ollama client (npm `ollama`, pinned) into a cache
# directory and prints its node_modules path; serve's integration test
# drives `cflowc serve` with it. CFLOW_OLLAMA_DIR overrides the directory
# ($HOME/.cache/cflow/ollama). Installs node and npm from Debian when they
# are missing and it runs as root (CI); otherwise exits 3 without them.
set -euo pipefail
dir=${CFLOW_OLLAMA_DIR:-$HOME/.cache/cflow/ollama}
ver=0.6.4 # ollama-js: one dependency (whatwg-fetch), runs on node 18+
f="$dir/node_modules/ollama/package.json"
if [ ! -f "$f" ] || ! grep -q "\"version\": \"$ver\"" "$f"; then
  if ! command -v npm >/dev/null || ! command -v node >/dev/null; then
    # CI runs as root on Debian: install node and npm from Debian.
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
      (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm) >&2
    else
      echo "ollama-client.sh: node and npm are needed (apt-get install nodejs npm)" >&2
      exit 3
    fi
  fi
  mkdir -p "$dir"
  [ -f "$dir/package.json" ] || echo '{"name":"cflow-ollama-client","private":true}' > "$dir/package.json"
  (cd "$dir" && npm install --no-audit --no-fund --loglevel=error "ollama@$ver" >&2)
fi
echo "$dir/node_modules"
