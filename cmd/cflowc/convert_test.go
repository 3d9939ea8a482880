package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cflow-dev/cflow/cflowfmt"
)

// storiesBin is the vendored llama2.c model (models/README.md); tests run in cmd/cflowc.
const storiesBin = "../../models/stories260K.bin"

// stderrOf runs f with os.Stderr captured.
func stderrOf(t *testing.T, f func()) string { return outputOf(t, &os.Stderr, f) }

// stdoutOf runs f with os.Stdout captured.
func stdoutOf(t *testing.T, f func()) string { return outputOf(t, &os.Stdout, f) }

// outputOf runs f with *file (os.Stdout or os.Stderr) replaced by a pipe
// and returns what f wrote to it.
func outputOf(t *testing.T, file **os.File, f func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := *file
	*file = w
	done := make(chan string)
	go func() { b, _ := io.ReadAll(r); done <- string(b) }()
	f()
	*file = old
	w.Close()
	return <-done
}

// TestConvertCLI: the summary line appears unless --quiet, the output
// opens, and bad input exits 2 without leaving a file.
func TestConvertCLI(t *testing.T) {
	if _, err := os.Stat(storiesBin); err != nil {
		t.Fatal("the vendored model is missing:", err)
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "s.cflow")
	var code int
	msg := stderrOf(t, func() { code = runApp("convert", "--quant", "q8_0", "-o", out, storiesBin) })
	if code != 0 || !strings.Contains(msg, "GB/s input") || !strings.Contains(msg, "output bytes") {
		t.Fatalf("exit %d, stderr %q", code, msg)
	}
	f, err := cflowfmt.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	if f.Header.QuantType.String() != "q8_0" {
		t.Fatalf("quant %s", f.Header.QuantType)
	}
	f.Close()
	quiet := filepath.Join(dir, "q.vflow")
	if msg := stderrOf(t, func() { code = runApp("convert", "--quiet", "-o", quiet, storiesBin) }); code != 0 || msg != "" {
		t.Fatalf("--quiet: exit %d, stderr %q", code, msg)
	}
	for _, args := range [][]string{
		{"convert", "--model", "arch2_4", "-o", filepath.Join(dir, "bad.cflow"), storiesBin},
		{"convert", "-o", filepath.Join(dir, "bad.gguf"), storiesBin},
		{"convert", "--quant", "q5_k", "-o", filepath.Join(dir, "bad.cflow"), storiesBin},
		{"convert", "-o", filepath.Join(dir, "bad.cflow"), filepath.Join(dir, "missing")},
	} {
		msg := stderrOf(t, func() { code = runApp(args...) })
		if code != exitUsage || !strings.Contains(msg, "convert:") {
			t.Fatalf("%v: exit %d, stderr %q", args, code, msg)
		}
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), "bad") {
			t.Fatalf("failed conversion left %s", e.Name())
		}
	}
}

// TestDevSynth: the generator writes a checkpoint convert accepts.
func TestDevSynth(t *testing.T) {
	dir := t.TempDir()
	ck := filepath.Join(dir, "ck")
	if code := runApp("dev", "synth", "--geometry", "tiny", "--dtype", "bf16", "--shards", "2", "-o", ck); code != 0 {
		t.Fatalf("synth exit %d", code)
	}
	if _, err := os.Stat(filepath.Join(ck, "model.safetensors.index.json")); err != nil {
		t.Fatal(err)
	}
	if code := runApp("convert", "-q", "-o", filepath.Join(dir, "m.cflow"), ck); code != 0 {
		t.Fatalf("convert exit %d", code)
	}
	if code := runApp("dev", "synth", "--geometry", "huge", "-o", ck); code != exitUsage {
		t.Fatalf("unknown geometry: exit %d", code)
	}
}
