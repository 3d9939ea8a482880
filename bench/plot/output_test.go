package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cflow-dev/cflow/internal/fileio/fileiotest"
)

// TestPlotOutputNotARegularFile (issue 38 finding 1): -o onto a FIFO, a
// device node, a socket or /proc/self/fd/1, directly or through a symlink,
// exits 2 naming it and leaves it as it was; -o through a symlink to a
// regular path writes the SVG at the link's target and keeps the link.
func TestPlotOutputNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "results.jsonl")
	os.WriteFile(in, []byte(results), 0o644)
	for _, s := range fileiotest.Specials(t, dir, ".svg") {
		link := filepath.Join(dir, "link-to-"+s.Name+".svg")
		if err := os.Symlink(s.Path, link); err != nil {
			t.Fatal(err)
		}
		for _, out := range []string{s.Path, link} {
			code, msg := plotRun(t, "-in", in, "-o", out)
			if code != 2 || !strings.Contains(msg, out) {
				t.Errorf("-o %s (%s): exit %d, %q; want 2 naming it", out, s.Name, code, msg)
			}
			fileiotest.Untouched(t, s, "-o "+out)
		}
	}
	target := filepath.Join(dir, "real.svg")
	link := filepath.Join(dir, "plot.svg")
	if err := os.Symlink("real.svg", link); err != nil {
		t.Fatal(err)
	}
	if code, msg := plotRun(t, "-in", in, "-o", link); code != 0 {
		t.Fatalf("-o through a symlink: exit %d: %s", code, msg)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link was replaced (%v)", err)
	}
	if b, err := os.ReadFile(target); err != nil || !strings.HasPrefix(string(b), "<svg") && !strings.HasPrefix(string(b), "<?xml") {
		t.Fatalf("target %s: %.40q (%v)", target, b, err)
	}
}
