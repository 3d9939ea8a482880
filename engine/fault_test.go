package engine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cflow-dev/cflow/convert"
	"github.com/cflow-dev/cflow/engine/numa"
	"github.com/cflow-dev/cflow/internal/fileio"
	"github.com/cflow-dev/cflow/quant"
	"github.com/cflow-dev/cflow/vflowfmt"
)

// TestTruncatedUnderEngine (issue 19 item 6): a model file truncated while
// an engine decodes from its mapping makes Step return a FaultError naming
// the file — from the caller's reads and the workers' alike — instead of
// the process dying of SIGBUS.
func TestTruncatedUnderEngine(t *testing.T) {
	for _, threads := range []int{1, 2} {
		path := filepath.Join(t.TempDir(), "s.cflow")
		if _, err := convert.Convert(context.Background(), "../models/stories260K.bin", path, convert.Options{Quant: quant.Q8_0}); err != nil {
			t.Fatal(err)
		}
		m, err := vflowfmt.OpenModel(path)
		if err != nil {
			t.Fatal(err)
		}
		e, err := New(m, Options{Threads: threads})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Step(1); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(path, 0); err != nil {
			t.Fatal(err)
		}
		_, err = e.Step(2)
		var fe *fileio.FaultError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), "truncated or replaced while open") {
			t.Fatalf("%d threads: want a FaultError for the truncated mapping, got %v", threads, err)
		}
		if e.Pos() != 1 {
			t.Fatalf("%d threads: position %d after a failed step, want 1", threads, e.Pos())
		}
		e.Close()
		m.Close()
	}
}

// TestTruncatedBeforeNUMACopy: on a multi-node topology New reads the whole
// mapping on each node's pinned workers — copying the tiles into
// node-local memory (a file planned for another node count) or touching
// them in place (a file planned for these nodes). A file truncated before
// that makes New return a FaultError naming the file — the workers'
// faults reach the caller — instead of an engine whose copies were
// silently left zero.
func TestTruncatedBeforeNUMACopy(t *testing.T) {
	for _, c := range []struct {
		mode      string
		planNodes int
	}{{"copy", 1}, {"in-place", 2}} {
		path := filepath.Join(t.TempDir(), "s.cflow")
		if _, err := convert.Convert(context.Background(), "../models/stories260K.bin", path, convert.Options{Quant: quant.Q8_0, NUMANodes: c.planNodes}); err != nil {
			t.Fatal(err)
		}
		m, err := vflowfmt.OpenModel(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Setenv(numa.EnvTopology, "0:0;1:1")
		if e, err := New(m, Options{Threads: 2, Placer: &numa.Recorder{}, Kernel: testKernel}); err != nil {
			t.Fatal(err)
		} else if mode := e.NUMA().Mode; mode != c.mode {
			t.Fatalf("placement %q, want %q (%s)", mode, c.mode, e.NUMA())
		} else {
			e.Close()
		}
		if err := os.Truncate(path, 0); err != nil {
			t.Fatal(err)
		}
		e, err := New(m, Options{Threads: 2, Placer: &numa.Recorder{}, Kernel: testKernel})
		if err == nil {
			e.Close()
			t.Fatalf("%s: New read the tiles of a truncated file without an error (%s)", c.mode, e.NUMA())
		}
		var fe *fileio.FaultError
		if !errors.As(err, &fe) || fe.File != path || !strings.Contains(err.Error(), "truncated or replaced while open") {
			t.Fatalf("%s: want a FaultError naming %s, got %v", c.mode, path, err)
		}
		m.Close()
	}
}
