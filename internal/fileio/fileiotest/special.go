// Package fileiotest makes the paths an output must refuse — a FIFO, a
// device node, a socket, a /proc entry — so that every command's test of
// its output flag (export gguf -o, run --trace-out, convert -o, bench/plot
// -o) tries the same hostile targets and checks they were left untouched.
package fileiotest

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// Special is one existing output path that is not a regular file, and the
// file type it must still have after a refused write.
type Special struct {
	Name string      // "fifo", "device", "socket", "proc"
	Path string      // where it is
	Type fs.FileMode // its type bits as Lstat reports them now
}

// Specials creates, in dir, a FIFO, a character device with /dev/null's
// numbers (1, 3; skipped without CAP_MKNOD) and a listening Unix socket,
// each named with extension ext (".cflow": a command that checks the
// output's extension must still refuse the file for what it is), and adds
// /proc/self/fd/1. The socket is closed when the test ends.
func Specials(t *testing.T, dir, ext string) []Special {
	t.Helper()
	var out []Special
	add := func(name, path string) {
		st, err := os.Lstat(path)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, Special{name, path, st.Mode().Type()})
	}
	fifo := filepath.Join(dir, "fifo"+ext)
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	add("fifo", fifo)
	dev := filepath.Join(dir, "null"+ext)
	switch err := unix.Mknod(dev, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); {
	case err == nil:
		add("device", dev)
	case errors.Is(err, unix.EPERM):
		t.Logf("no device node: mknod needs CAP_MKNOD (%v)", err)
	default:
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "sock"+ext)
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	add("socket", sock)
	add("proc", "/proc/self/fd/1")
	return out
}

// Untouched fails the test unless s still has its file type (a refused
// output must not have been renamed over it) and no temp file was left in
// its directory.
func Untouched(t *testing.T, s Special, context string) {
	t.Helper()
	st, err := os.Lstat(s.Path)
	if err != nil {
		t.Fatalf("%s: %s %s is gone: %v", context, s.Name, s.Path, err)
	}
	if st.Mode().Type() != s.Type {
		t.Fatalf("%s: %s %s is now %v, was %v", context, s.Name, s.Path, st.Mode().Type(), s.Type)
	}
	if s.Name == "proc" {
		return
	}
	if tmps, _ := filepath.Glob(filepath.Join(filepath.Dir(s.Path), ".*.tmp*")); len(tmps) != 0 {
		t.Fatalf("%s: temp files left beside %s: %v", context, s.Path, tmps)
	}
}
