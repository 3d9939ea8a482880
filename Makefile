# cflow — see README.md. Every target is rerunnable on a fresh clone.
GO      ?= go
BIN     := bin/cflowc
PY      ?= /usr/bin/python3
VERSION := $(shell git describe --always --dirty 2>/dev/null || echo dev)

.PHONY: build test test-unit test-noasm fuzz-short vet demo bench golden golden-test clean

build:
	$(GO) build -ldflags "-X main.version=$(VERSION)" -o $(BIN) ./cmd/cflowc

vet:
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1)

test-unit:
	$(GO) test ./...

test-noasm:
	$(GO) test -tags noasm ./...

fuzz-short:
	FUZZTIME=$${FUZZTIME:-10s} ./scripts/fuzz-short.sh

# The README's test command; .ci/run calls exactly this.
test: vet test-unit test-noasm fuzz-short

# cflowc vs llama.cpp decode on the same Q4_0 weights (bench/side-by-side.sh).
bench:
	./bench/side-by-side.sh

clean:
	rm -rf bin out .demo
