package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/cflowfmt/fmttest"
	"github.com/cflow-dev/cflow/quant"
)

// TestCheckRefusesWhatRunRefuses (issue 19 items 1, 3, 4): every crafted
// file fails inspect --check with exit 1; those the loaders refuse make run,
// verify, bench and analyze exit 2 with an error instead of dying of out of
// memory in the plan (block_iterations 0xFFFFFFFF) or decoding garbage.
func TestCheckRefusesWhatRunRefuses(t *testing.T) {
	dir := t.TempDir()
	files, err := fmttest.CraftedFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	// A malformed embedded tokenizer.json: the writer stores it, run refuses it.
	s := fmttest.Tiny(quant.F32, false, false)
	s.Header.VocabSize = 300
	s.Meta.SetString(cflowfmt.KeyTokenizerKind, "hf-bpe")
	s.Meta.SetBytes(cflowfmt.KeyTokenizerData, []byte(`{"model": {"type": "BPE", "vocab": [`))
	tokPath := filepath.Join(dir, "bad_tokenizer.cflow")
	if _, err := fmttest.WriteCflow(tokPath, s, nil); err != nil {
		t.Fatal(err)
	}
	refusedByLoaders := map[string]bool{"block_iterations_0xffffffff": true, "prenorm_dense_delay_255": true,
		"partial_rotary_factor_10": true, "bad_tokenizer": true}
	paths := map[string]string{"bad_tokenizer": tokPath}
	for _, c := range files {
		p := filepath.Join(dir, c.Name+".cflow")
		if err := os.WriteFile(p, c.Data, 0o644); err != nil {
			t.Fatal(err)
		}
		paths[c.Name] = p
	}
	for name, p := range paths {
		if code := runApp("inspect", p, "--check"); code != exitFail {
			t.Errorf("%s: inspect --check exit %d, want %d", name, code, exitFail)
		}
		if !refusedByLoaders[name] {
			continue
		}
		if code := runApp("run", p, "--prompt-ids", "1", "--max-tokens", "1"); code != exitUsage {
			t.Errorf("%s: run exit %d, want %d", name, code, exitUsage)
		}
		if name == "bad_tokenizer" {
			continue // the tokenizer is run's and tokenize's business only
		}
		for _, args := range [][]string{{"bench", p, "--tokens", "1", "--runs", "1"}, {"analyze", p}} {
			if code := runApp(args...); code != exitUsage {
				t.Errorf("%s: %s exit %d, want %d", name, args[0], code, exitUsage)
			}
		}
	}
}

// copyFixture copies a golden fixture directory so a test can edit its
// config.
func copyFixture(t *testing.T, name string) string {
	t.Helper()
	src := filepath.Join("..", "..", "golden", "fixtures", name) // tests run in cmd/cflowc
	dst := filepath.Join(t.TempDir(), name)
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// editConfig rewrites one key of a fixture's config.json.
func editConfig(t *testing.T, dir, key string, v any) {
	t.Helper()
	p := filepath.Join(dir, "config.json")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg[key] = v
	b, _ = json.Marshal(cfg)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestConvertBoundsIterations (item 1): block_iterations 2147483647 in a
// config is refused before anything is sized from it (convert used to grow
// past 7.6 GB), exit 2, no output file.
func TestConvertBoundsIterations(t *testing.T) {
	dir := copyFixture(t, "arch5_fixed_point")
	editConfig(t, dir, "block_iterations", 2147483647)
	out := filepath.Join(t.TempDir(), "m.cflow")
	if code := runApp("convert", "--quiet", "-o", out, dir); code != exitUsage {
		t.Fatalf("convert exit %d, want %d", code, exitUsage)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatalf("output exists after a refused conversion: %v", err)
	}
}
