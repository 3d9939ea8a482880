package fileio_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/cflow-dev/cflow/internal/fileio"
	"github.com/cflow-dev/cflow/internal/fileio/fileiotest"
)

// wantOutputError fails unless err is an *OutputError (the CLI's exit 2)
// whose message contains want.
func wantOutputError(t *testing.T, err error, want, context string) {
	t.Helper()
	var oe *fileio.OutputError
	if !errors.As(err, &oe) || !strings.Contains(err.Error(), want) {
		t.Fatalf("%s: got %v, want an OutputError saying %q", context, err, want)
	}
}

// TestSinkRefusesSpecialFiles (issue 38 finding 1): a FIFO, a device node,
// a socket or a /proc entry at the output path is refused by CheckOutput,
// CreateSink and WriteFileAtomic, directly and through a symlink, and is
// left as it was. Before, the temp file was renamed over it (as root,
// `export gguf -o /dev/null` replaced /dev/null with a regular file).
func TestSinkRefusesSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	for _, s := range fileiotest.Specials(t, dir, "") {
		link := filepath.Join(dir, "link-to-"+s.Name)
		if err := os.Symlink(s.Path, link); err != nil {
			t.Fatal(err)
		}
		want := "not a regular file"
		if s.Name == "proc" {
			want = "on /proc"
		}
		for _, p := range []string{s.Path, link} {
			wantOutputError(t, fileio.CheckOutput(p), want, "CheckOutput "+p)
			_, err := fileio.CreateSink(p)
			wantOutputError(t, err, want, "CreateSink "+p)
			wantOutputError(t, fileio.WriteFileAtomic(p, []byte("x")), want, "WriteFileAtomic "+p)
			fileiotest.Untouched(t, s, p)
		}
	}
}

// TestSinkFollowsSymlink: a symlink output is written through: the link
// stays a link (relative or absolute, through a chain, dangling or not) and
// the file it names gets the bytes, atomically, with no temp file left.
func TestSinkFollowsSymlink(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "models")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(sub, "real.cflow")
	os.WriteFile(target, []byte("old"), 0o644)
	abs := filepath.Join(dir, "abs")
	rel := filepath.Join(dir, "rel")
	chain := filepath.Join(dir, "chain")
	dangling := filepath.Join(dir, "dangling")
	for link, to := range map[string]string{abs: target, rel: "models/real.cflow", chain: "rel", dangling: "models/new.cflow"} {
		if err := os.Symlink(to, link); err != nil {
			t.Fatal(err)
		}
	}
	for i, c := range []struct{ link, file string }{{abs, target}, {rel, target}, {chain, target}, {dangling, filepath.Join(sub, "new.cflow")}} {
		data := []byte{'a' + byte(i)}
		if err := fileio.CheckOutput(c.link); err != nil {
			t.Fatalf("CheckOutput %s: %v", c.link, err)
		}
		if err := fileio.WriteFileAtomic(c.link, data); err != nil {
			t.Fatalf("%s: %v", c.link, err)
		}
		if st, err := os.Lstat(c.link); err != nil || st.Mode()&os.ModeSymlink == 0 {
			t.Fatalf("%s is no longer a symlink (%v)", c.link, err)
		}
		if b, err := os.ReadFile(c.file); err != nil || string(b) != string(data) {
			t.Fatalf("%s: target %s holds %q (%v), want %q", c.link, c.file, b, err, data)
		}
		if tmps, _ := filepath.Glob(filepath.Join(sub, ".*.tmp*")); len(tmps) != 0 {
			t.Fatalf("temp files left: %v", tmps)
		}
	}
	loop := filepath.Join(dir, "loop")
	os.Symlink("loop", loop)
	wantOutputError(t, fileio.WriteFileAtomic(loop, nil), "symbolic links", "a link to itself")
	wantOutputError(t, fileio.CheckOutput(filepath.Join(dir, "missing", "x")), "no such file", "a missing directory")
	wantOutputError(t, fileio.CheckOutput(dir), "existing directory", "a directory")
}

// TestSinkCommitRefusesLateFIFO: a FIFO made at the target while the file
// is written is refused at Commit and left in place; nothing else remains.
func TestSinkCommitRefusesLateFIFO(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out")
	s, err := fileio.CreateSink(path)
	if err != nil {
		t.Fatal(err)
	}
	s.Write([]byte("data"))
	if err := unix.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
	wantOutputError(t, s.Commit(), "not a regular file", "Commit onto a new FIFO")
	st, err := os.Lstat(path)
	if err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("the FIFO was replaced: %v %v", st, err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("left behind: %v", ents)
	}
}
