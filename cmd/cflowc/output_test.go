package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cflow-dev/cflow/internal/fileio/fileiotest"
	"golang.org/x/sys/unix"
)

// outputCommands are the commands with an output flag, writing to out.
func outputCommands(model, out string) [][]string {
	return [][]string{
		{"export", "gguf", model, "-o", out},
		{"run", model, "--prompt-ids", "1", "--max-tokens", "1", "--trace-out", out},
		{"convert", "--quiet", "--quant", "q8_0", "-o", out, storiesBin},
		{"bench", model, "--tokens", "1", "--runs", "1", "--warmup", "0", "--probe-mib", "1", "--probe-runs", "1", "--cpuprofile", out},
	}
}

// TestOutputNotARegularFileRefused (issue 38 findings 1 and 9): export gguf
// -o, run --trace-out, convert -o and bench --cpuprofile onto a FIFO, a
// device node (/dev/null's numbers), a socket, /proc/self/fd/1, or a
// symlink to one of them, exit 2 before any work and leave it as it was.
// Before, each exited 0 and renamed a regular file over it (as root, over
// /dev/null itself), and /proc/self/fd/1 exited 3.
func TestOutputNotARegularFileRefused(t *testing.T) {
	dir := t.TempDir()
	model := smallModel(t, dir)
	for _, s := range fileiotest.Specials(t, dir, ".cflow") {
		link := filepath.Join(dir, "link-to-"+s.Name+".cflow")
		why := "not a regular file"
		if s.Name == "proc" {
			why = "on /proc"
		}
		if err := os.Symlink(s.Path, link); err != nil {
			t.Fatal(err)
		}
		for _, out := range []string{s.Path, link} {
			for _, args := range outputCommands(model, out) {
				var code int
				msg := stderrOf(t, func() { code = runApp(args...) })
				want := why
				if s.Name == "proc" && args[0] == "convert" && out == s.Path {
					want = "extension" // refused for its name first; exit 2 all the same
				}
				if code != exitUsage || !strings.Contains(msg, out) || !strings.Contains(msg, want) {
					t.Errorf("%v: exit %d, %q; want %d naming %s, %q", args, code, msg, exitUsage, out, want)
				}
				fileiotest.Untouched(t, s, strings.Join(args, " "))
			}
		}
	}
}

// TestOutputSymlinkFollowed: an output that is a symlink is written
// through: the link stays, the file it names (here not yet existing) gets
// the whole output.
func TestOutputSymlinkFollowed(t *testing.T) {
	dir := t.TempDir()
	model := smallModel(t, dir)
	for i, args := range outputCommands(model, "") {
		target := filepath.Join(dir, "target", args[0])
		os.MkdirAll(filepath.Dir(target), 0o755)
		link := filepath.Join(dir, "link"+string(rune('a'+i))+".cflow")
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
		for j := range args {
			if args[j] == "" {
				args[j] = link
			}
		}
		var code int
		if msg := stderrOf(t, func() { code = runApp(args...) }); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, msg)
		}
		if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
			t.Fatalf("%v: the link was replaced (%v)", args, err)
		}
		if st, err := os.Stat(target); err != nil || !st.Mode().IsRegular() || st.Size() == 0 {
			t.Fatalf("%v: target %s: %v", args, target, err)
		}
	}
}

// TestOutputDiskFullExitsTwo: an output that fails for want of space (a
// 16 KiB tmpfs) is the user's disk, not a bug of ours: exit 2 naming the
// output, and nothing left on it. Before, export gguf and run --trace-out
// exited 3. Needs CAP_SYS_ADMIN to mount; skipped without it.
func TestOutputDiskFullExitsTwo(t *testing.T) {
	dir := t.TempDir()
	model := smallModel(t, dir)
	full := filepath.Join(dir, "full")
	os.Mkdir(full, 0o755)
	if err := unix.Mount("tmpfs", full, "tmpfs", 0, "size=16k"); err != nil {
		t.Skipf("cannot mount a small tmpfs: %v", err)
	}
	defer unix.Unmount(full, 0)
	for _, args := range [][]string{
		{"export", "gguf", model, "-o", filepath.Join(full, "m.gguf")},
		{"run", model, "--prompt-ids", "1", "--max-tokens", "200", "--temperature", "0", "--trace-out", filepath.Join(full, "t.json")},
		{"convert", "--quiet", "--quant", "q8_0", "-o", filepath.Join(full, "m.cflow"), storiesBin},
	} {
		var code int
		msg := stderrOf(t, func() { code = runApp(args...) })
		if code != exitUsage || !strings.Contains(msg, "no space left on device") || !strings.Contains(msg, full) {
			t.Errorf("%v: exit %d, %q; want %d, the output and ENOSPC named", args, code, msg, exitUsage)
		}
		if ents, _ := os.ReadDir(full); len(ents) != 0 {
			t.Fatalf("%v left %v on the full disk", args, ents)
		}
	}
}
