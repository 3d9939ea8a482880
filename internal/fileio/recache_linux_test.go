package fileio

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// largeFolioFS are the filesystems whose page cache takes large folios on
// a read fault, and the first kernel (major, minor) where it does: ext4
// since 6.16, XFS since 5.18. Elsewhere a file mapping gets 2 MiB pages
// only through khugepaged, asynchronously, so the test below cannot
// expect them.
var largeFolioFS = map[int64]struct {
	name         string
	major, minor int
}{
	unix.EXT4_SUPER_MAGIC: {"ext4", 6, 16},
	unix.XFS_SUPER_MAGIC:  {"xfs", 5, 18},
}

// TestRecacheHugePages writes a 16 MiB file (write() leaves it cached in
// small folios), recaches it, and requires that the mapping afterwards has
// 2 MiB pages and that the file's bytes did not change.
func TestRecacheHugePages(t *testing.T) {
	if m := THPEnabled(); m == "" || m == "never" {
		t.Skipf("transparent huge pages are %q here (/sys/kernel/mm/transparent_hugepage/enabled): no mapping gets 2 MiB pages", m)
	}
	dir := t.TempDir()
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil {
		t.Fatal(err)
	}
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		t.Fatal(err)
	}
	var major, minor int
	fmt.Sscanf(unix.ByteSliceToString(u.Release[:]), "%d.%d", &major, &minor)
	lf, ok := largeFolioFS[int64(fs.Type)]
	if !ok || major < lf.major || major == lf.major && minor < lf.minor {
		t.Skipf("%s is on filesystem magic %#x, kernel %d.%d: its page cache takes large folios on ext4 ≥ 6.16 or XFS ≥ 5.18 only (set TMPDIR to such a filesystem)", dir, fs.Type, major, minor)
	}
	data := make([]byte, 16<<20)
	rng := rand.New(rand.NewPCG(7, 7))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	path := filepath.Join(dir, "model.bin")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	want := sha256.Sum256(data)
	var calls, last int64
	r, err := Recache(path, func(done, total int64) {
		calls++
		if done < last || total != 2*int64(len(data)) {
			t.Errorf("progress %d of %d after %d", done, total, last)
		}
		last = done
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("before %v (%.2f), after %v (%.2f)", r.Before, r.Before.Fraction(), r.After, r.After.Fraction())
	if r.After.Size != int64(len(data)) || r.Before.Size != int64(len(data)) {
		t.Errorf("measured %d and %d bytes of a %d-byte mapping", r.Before.Size, r.After.Size, len(data))
	}
	if r.After.Fraction() <= 0 {
		t.Errorf("after recache no byte of the mapping is on 2 MiB pages (%v)", r.After)
	}
	if last != 2*int64(len(data)) || calls == 0 {
		t.Errorf("progress ended at %d after %d calls", last, calls)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if sha256.Sum256(got) != want || !bytes.Equal(got, data) {
		t.Error("recache changed the file's bytes")
	}
	// MapFile asks for huge pages too: the engine's own mapping of the
	// recached file is PMD-mapped once read.
	b, _, unmap, err := MapFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer unmap()
	var sum byte
	for i := 0; i < len(b); i += 4096 {
		sum += b[i]
	}
	runtime.KeepAlive(sum)
	h, err := MappedHugePages(b)
	if err != nil {
		t.Fatal(err)
	}
	if h.Fraction() <= 0 {
		t.Errorf("MapFile's mapping of the recached file: %v on 2 MiB pages", h)
	}
}

func TestRecacheRefusesDirectory(t *testing.T) {
	if _, err := Recache(t.TempDir(), nil); err == nil {
		t.Error("Recache of a directory: no error")
	}
	if _, err := Recache(filepath.Join(t.TempDir(), "missing"), nil); err == nil {
		t.Error("Recache of a missing file: no error")
	}
}
