package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/cflow-dev/cflow/convert"
	"github.com/cflow-dev/cflow/quant"
)

// TestRunExpertIOTraces: `run --expert-io mmap|sync|direct` on a MoE
// golden fixture (DelayedSum, δe = 2) writes byte-identical --trace-out
// files, and an unknown mode is a usage error.
func TestRunExpertIOTraces(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "m.cflow")
	if _, err := convert.Convert(context.Background(), "../../golden/fixtures/arch2_4_combined", model,
		convert.Options{Quant: quant.Q4_0, NUMANodes: 1, Workers: 1}); err != nil {
		t.Fatal(err)
	}
	var want []byte
	for _, mode := range []string{"mmap", "sync", "direct"} {
		trace := filepath.Join(dir, mode+".json")
		if code := runApp("run", model, "--prompt-ids", "1,17,5", "--temperature", "0", "--max-tokens", "5",
			"--threads", "2", "--expert-io", mode, "--trace-out", trace); code != 0 {
			t.Fatalf("run --expert-io %s: exit %d", mode, code)
		}
		got, err := os.ReadFile(trace)
		if err != nil {
			t.Fatal(err)
		}
		if want == nil {
			want = got
		} else if !bytes.Equal(got, want) {
			t.Fatalf("--expert-io %s trace differs from mmap's", mode)
		}
	}
	if code := runApp("run", model, "--prompt-ids", "1", "--expert-io", "odirect"); code != exitUsage {
		t.Fatalf("unknown --expert-io: exit %d, want %d", code, exitUsage)
	}
}
