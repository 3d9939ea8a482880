#!/usr/bin/env bash
# Fetch and build llama.cpp (the peer engine for `make bench`) from the
# source bundle that node-llama-cpp@3.21.1 ships on npm. Idempotent: every
# step is skipped when its output already exists.
#
# Outputs (all gitignored):
#   bench/node_modules/            npm install of node-llama-cpp
#   bench/llama.cpp/               git clone of its gitRelease.bundle
#   bench/llama.cpp/build/bin/     llama-bench, a greedy-generation CLI (and EXTRA_TARGETS)
#
# Environment: JOBS (default 2) build parallelism; NICE (default 19).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"
jobs="${JOBS:-2}"
nicev="${NICE:-19}"
version="3.21.1"

need() { command -v "$1" >/dev/null || { echo "llama-cpp.sh: $1 not found ($2)" >&2; exit 1; }; }
if ! command -v cmake >/dev/null && command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
	echo "llama-cpp.sh: installing cmake from Debian" >&2
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq cmake >/dev/null
fi
need cmake "apt-get install -y cmake"
need c++ "apt-get install -y g++"

"$here/../scripts/llama-src.sh" > /dev/null

# Targets: llama-bench for timing; llama-simple (greedy sampler, prompt
# text); EXTRA_TARGETS more (bench/serve-compare.sh asks for llama-server,
# which turns LLAMA_BUILD_SERVER on).
bin="llama.cpp/build/bin"
targets="llama-bench llama-simple ${EXTRA_TARGETS:-}"
server=OFF
case " $targets " in *" llama-server "*) server=ON ;; esac
missing=0
for t in $targets; do [ -x "$bin/$t" ] || missing=1; done
if [ $missing = 1 ]; then
	nice -n "$nicev" cmake -S llama.cpp -B llama.cpp/build \
		-DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DLLAMA_CURL=OFF \
		-DGGML_CUDA=OFF -DGGML_VULKAN=OFF -DGGML_METAL=OFF -DGGML_OPENMP=ON \
		-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=$server -DBUILD_SHARED_LIBS=OFF
	nice -n "$nicev" cmake --build llama.cpp/build --config Release -j "$jobs" \
		--target $targets
fi
for t in $targets; do ls -l "$bin/$t"; done
