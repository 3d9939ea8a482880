package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestDevRecache: recache leaves the file's bytes as they were, --json
// reports each file's size and huge bytes no larger than it, and bad FILEs
// (none, missing, a directory, a FIFO, unreadable) exit 2 before any file is
// touched.
func TestDevRecache(t *testing.T) {
	dir := t.TempDir()
	data := make([]byte, 8<<20+12345)
	rng := rand.New(rand.NewPCG(3, 3))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	a, b := filepath.Join(dir, "a.bin"), filepath.Join(dir, "b.bin")
	for _, p := range []string{a, b} {
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var code int
	out := stdoutOf(t, func() { code = runMain([]string{"cflowc", "dev", "recache", "--json", a, b}, io.Discard) })
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	var rs []recacheJSON
	if err := json.Unmarshal([]byte(out), &rs); err != nil {
		t.Fatalf("--json output %q: %v", out, err)
	}
	if len(rs) != 2 || rs[0].File != a || rs[1].File != b {
		t.Fatalf("--json: %+v", rs)
	}
	for _, r := range rs {
		if r.Bytes != int64(len(data)) || r.HugeAfter > r.Bytes || r.HugeBefore > r.Bytes || r.FractionAfter < 0 || r.FractionAfter > 1 {
			t.Errorf("%+v: want bytes %d, huge bytes within it", r, len(data))
		}
	}
	want := sha256.Sum256(data)
	for _, p := range []string{a, b} {
		got, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if sha256.Sum256(got) != want {
			t.Errorf("%s changed", p)
		}
	}
	text := stdoutOf(t, func() { code = runMain([]string{"cflowc", "dev", "recache", a}, io.Discard) })
	if code != 0 || !strings.Contains(text, a+": 2 MiB pages ") || !strings.Contains(text, " MiB after") {
		t.Errorf("text: exit %d, %q", code, text)
	}

	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	bad := [][]string{{}, {filepath.Join(dir, "missing")}, {dir}, {fifo}, {a, filepath.Join(dir, "missing")}}
	if os.Geteuid() != 0 { // root reads a mode-000 file anyway
		locked := filepath.Join(dir, "locked")
		if err := os.WriteFile(locked, data[:4096], 0); err != nil {
			t.Fatal(err)
		}
		bad = append(bad, []string{locked})
	}
	for _, args := range bad {
		var stderr bytes.Buffer
		out := stdoutOf(t, func() { code = runMain(append([]string{"cflowc", "dev", "recache"}, args...), &stderr) })
		if code != exitUsage || !strings.Contains(stderr.String(), "dev recache:") || out != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, stderr.String())
		}
	}
}

// TestConvertAndExportDropCache: the files convert and export gguf commit
// are not left in the page cache (their written pages would be small
// folios), measured with mincore over a fresh mapping of each output.
func TestConvertAndExportDropCache(t *testing.T) {
	dir := t.TempDir()
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil {
		t.Fatal(err)
	}
	if fs.Type == unix.TMPFS_MAGIC {
		t.Skipf("%s is tmpfs: its pages are memory, never dropped (set TMPDIR to a disk filesystem)", dir)
	}
	// The control: a file written without the drop stays cached, or the
	// check below could not fail.
	plain := filepath.Join(dir, "plain.bin")
	if err := os.WriteFile(plain, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	if n, of := residentPages(t, plain); n <= of/4 {
		t.Skipf("a freshly written file has only %d of %d pages cached here: nothing to tell a dropped output from", n, of)
	}
	cf, gg := filepath.Join(dir, "s.cflow"), filepath.Join(dir, "s.gguf")
	for _, c := range [][]string{{"convert", "-q", "-o", cf, storiesBin}, {"export", "gguf", "-o", gg, cf}} {
		if code := runApp(c...); code != 0 {
			t.Fatalf("%v: exit %d", c, code)
		}
		// Checked before the next command: export reads cf back in.
		if n, of := residentPages(t, c[len(c)-2]); n > of/4 {
			t.Errorf("%s: %d of %d pages still cached after %s", c[len(c)-2], n, of, c[0])
		}
	}
}

// residentPages maps path and counts its pages in the page cache (mincore).
func residentPages(t *testing.T, path string) (n, of int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	b, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(b)
	vec := make([]byte, (len(b)+4095)/4096)
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		t.Fatal("mincore:", e)
	}
	for _, v := range vec {
		n += int(v & 1)
	}
	return n, len(vec)
}
