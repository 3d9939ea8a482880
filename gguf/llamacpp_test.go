package gguf_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// This is the export's end-to-end check: llama.cpp loads the GGUF and its
// greedy tokens equal cflow's on the same F32 weights. It needs llama.cpp's
// llama-simple, built by bench/llama-cpp.sh (minutes of C++; CI does not),
// and skips with a message when it is missing.

// storiesGreedy is llama2.c's run.c greedy output for stories260K from BOS
// (models/README.md), the independent truth for both engines.
var storiesGreedy = []int{461, 461, 401, 401, 401, 461, 378, 455, 473, 456}

func repoRoot(t *testing.T) string {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Dir(wd) // tests run in gguf/
}

func llamaSimple(t *testing.T) string {
	p := filepath.Join(repoRoot(t), "bench", "llama.cpp", "build", "bin", "llama-simple")
	if _, err := os.Stat(p); err != nil {
		t.Skipf("llama.cpp is not built (%s missing; run bench/llama-cpp.sh): skipping the llama.cpp parity check", p)
	}
	return p
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

func buildCflowc(t *testing.T) string {
	bin := filepath.Join(t.TempDir(), "cflowc")
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	cmd := exec.Command(goBin, "build", "-o", bin, "./cmd/cflowc")
	cmd.Dir = repoRoot(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/cflowc: %v\n%s", err, out)
	}
	return bin
}

var pieceID = regexp.MustCompile(`\[(\d+)\]|<unk>|<s>|</s>`)

// ids extracts token ids from text made of the export's placeholder pieces:
// "[id]", and <unk>, <s>, </s> for ids 0, 1, 2 (the fixtures' ids).
func ids(t *testing.T, s string) []int {
	var out []int
	for _, m := range pieceID.FindAllStringSubmatch(s, -1) {
		if i := slices.Index([]string{"<unk>", "<s>", "</s>"}, m[0]); i >= 0 {
			out = append(out, i)
			continue
		}
		n, err := strconv.Atoi(m[1])
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, n)
	}
	return out
}

// llamaGreedy runs llama-simple from BOS (an empty prompt: the placeholder
// tokenizer adds BOS) and returns the n generated ids; llama-simple prints
// the prompt's BOS first.
func llamaGreedy(t *testing.T, simple, model string, n int) []int {
	got := ids(t, run(t, simple, "-m", model, "-n", strconv.Itoa(n), ""))
	if len(got) == 0 || got[0] != 1 {
		t.Fatalf("llama-simple output %v does not start with BOS", got)
	}
	return got[1:]
}

// cflowGreedy runs cflowc's own greedy decode from BOS.
func cflowGreedy(t *testing.T, cflowc, model string, n int) []int {
	out := run(t, cflowc, "run", "--temperature", "0", "--prompt-ids", "1", "-n", strconv.Itoa(n), "--threads", "1", model)
	var got []int
	for _, f := range strings.Fields(out) {
		if v, err := strconv.Atoi(f); err == nil {
			got = append(got, v)
		}
	}
	return got
}

func TestLlamaCppGreedyMatchesCflow(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cflowc and runs llama.cpp")
	}
	simple := llamaSimple(t)
	cflowc := buildCflowc(t)
	root := repoRoot(t)
	cases := []struct{ name, input string }{
		{"stories260K", filepath.Join(root, "models", "stories260K.bin")},
		{"llama", filepath.Join(root, "golden", "fixtures", "llama")},
		{"llama_wide", filepath.Join(root, "golden", "fixtures", "llama_wide")},
		{"mixtral", filepath.Join(root, "golden", "fixtures", "mixtral")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := os.Stat(c.input); err != nil {
				t.Fatalf("%s not present (vendored in the repository)", c.input)
			}
			dir := t.TempDir()
			cf, gg := filepath.Join(dir, "m.cflow"), filepath.Join(dir, "m.gguf")
			run(t, cflowc, "convert", "-q", "--quant", "f32", "-o", cf, c.input)
			run(t, cflowc, "export", "gguf", "-o", gg, cf)
			n := len(storiesGreedy)
			want := cflowGreedy(t, cflowc, cf, n)
			got := llamaGreedy(t, simple, gg, n)
			if !slices.Equal(got, want) {
				t.Errorf("llama.cpp greedy %v, cflow %v", got, want)
			}
			if c.name == "stories260K" && !slices.Equal(want, storiesGreedy) {
				t.Errorf("cflow greedy %v, llama2.c %v", want, storiesGreedy)
			}
		})
	}
}
