#!/usr/bin/env bash
# llama-src.sh - llama.cpp's full source, as npm node-llama-cpp@3.21.1 ships
# it (llama/gitRelease.bundle), cloned into bench/llama.cpp. No build: the
# tests that need llama.cpp's own C code (ggml-quants.c, one file compiled
# with cc), its tokenizer vectors (models/ggml-vocab-*.gguf) or its
# templates read them there. bench/llama-cpp.sh builds the tools on top.
# Idempotent: each step is skipped when its output exists. Prints the path.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)/bench"
version="3.21.1"
cd "$here"
command -v npm >/dev/null || { echo "llama-src.sh: npm not found (apt-get install -y npm)" >&2; exit 1; }
command -v git >/dev/null || { echo "llama-src.sh: git not found (apt-get install -y git)" >&2; exit 1; }
bundle="node_modules/node-llama-cpp/llama/gitRelease.bundle"
if [ ! -f "$bundle" ]; then
	[ -f package.json ] || echo '{"private": true}' > package.json
	nice -n "${NICE:-19}" npm i -E --no-audit --no-fund "node-llama-cpp@$version" >&2
fi
if [ ! -d llama.cpp/.git ]; then
	rm -rf llama.cpp
	git -c advice.detachedHead=false clone -q "$bundle" llama.cpp
fi
echo "$here/llama.cpp"
