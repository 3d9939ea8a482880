package expertio

import (
	"bytes"
	"errors"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/cflow-dev/cflow/cflowfmt"
	"golang.org/x/sys/unix"
)

func TestParse(t *testing.T) {
	for _, m := range []Mode{Mmap, Sync, Direct} {
		if got, err := Parse(strings.ToUpper(m.String())); err != nil || got != m {
			t.Fatalf("Parse(%q) = %v, %v", m.String(), got, err)
		}
	}
	if _, err := Parse("odirect"); err == nil {
		t.Fatal("Parse accepted an unknown mode")
	}
	if Mode(3).Valid() || !Direct.Valid() {
		t.Fatal("Valid: wrong range")
	}
	if b := alignedBuf(100); uintptr(unsafe.Pointer(&b[0]))%expertAlign != 0 || len(b) != 100 {
		t.Fatal("alignedBuf is not aligned")
	}
}

// testFile writes n random bytes to a file (the truth the staged reads are
// compared with) and returns its path and contents.
func testFile(t *testing.T, n int) (string, []byte) {
	t.Helper()
	data := make([]byte, n)
	rand.New(rand.NewSource(1)).Read(data)
	path := filepath.Join(t.TempDir(), "experts.bin")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path, data
}

// TestStageReadsTheRange: every staged range, read on several readers at
// once, comes back as the file's bytes from the aligned start below it to
// at least its end (the file's end where that comes first), and the
// counters add up; slots are recycled, not grown per read.
func TestStageReadsTheRange(t *testing.T) {
	path, data := testFile(t, 5*expertAlign+1234)
	ranges := []cflowfmt.Range{
		{Offset: 0, Length: 100},
		{Offset: 4100, Length: 5000},
		{Offset: 3 * expertAlign, Length: expertAlign},
		{Offset: 5*expertAlign + 1000, Length: 234}, // the file's tail
	}
	for _, mode := range []Mode{Sync, Direct} {
		x, err := Open(path, mode, ranges, 3, Hooks{})
		if err != nil {
			t.Fatal(err)
		}
		for round := 0; round < 3; round++ {
			var slots []*Slot
			for _, r := range ranges {
				slots = append(slots, x.Stage(r))
			}
			for i, s := range slots {
				got, off, err := x.Await(s)
				r := ranges[i]
				if err != nil {
					t.Fatalf("%s range %d: %v", mode, i, err)
				}
				if off != r.Offset&^(expertAlign-1) || off+int64(len(got)) < r.End() || off%expertAlign != 0 {
					t.Fatalf("%s range %d: read [%d, %d), want an aligned cover of [%d, %d)", mode, i, off, off+int64(len(got)), r.Offset, r.End())
				}
				if !bytes.Equal(got, data[off:off+int64(len(got))]) {
					t.Fatalf("%s range %d: bytes differ from the file", mode, i)
				}
			}
			for _, s := range slots {
				x.Put(s)
			}
		}
		st, sc := x.Stats(), x.Slots()
		x.Close()
		if st.Reads != int64(3*len(ranges)) || st.Mode != mode || st.Readers != 3 || st.Bytes < 3*5000 {
			t.Fatalf("%s stats %+v", mode, st)
		}
		if sc.Allocated != len(ranges) || sc.Free != sc.Allocated {
			t.Fatalf("%s slots %+v: want %d made, all free", mode, sc, len(ranges))
		}
	}
}

// TestPutWaitsForReadInFlight: Put of a slot whose read is still running
// (a disk held at a gate) waits for it — the slot is not handed out again
// under the read — and counts the wait; the read's error reaches Await.
func TestPutWaitsForReadInFlight(t *testing.T) {
	path, _ := testFile(t, 2*expertAlign)
	gate := make(chan struct{})
	failed := errors.New("disk says no")
	var mu sync.Mutex
	var events []string
	x, err := Open(path, Sync, []cflowfmt.Range{{Offset: 0, Length: 10}}, 1, Hooks{
		Read: func(fd int, p []byte, off int64) (int, error) {
			<-gate
			return 0, failed
		},
		Observe: func(ev string, buf []byte) {
			mu.Lock()
			events = append(events, ev)
			mu.Unlock()
			if ev == "wait" {
				close(gate) // Put is waiting: now let the read end
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	s := x.Stage(cflowfmt.Range{Offset: 0, Length: 10})
	x.Put(s)
	if sc := x.Slots(); sc.WaitedPuts != 1 || sc.Free != 1 {
		t.Fatalf("slots %+v: want one waited put, the slot free", sc)
	}
	s2 := x.Stage(cflowfmt.Range{Offset: 0, Length: 10})
	if s2 != s {
		t.Fatal("the freed slot was not reused")
	}
	if _, _, err := x.Await(s2); !errors.Is(err, failed) {
		t.Fatalf("Await: %v, want the read's error", err)
	}
	x.Put(s2)
	if want := "get wait get"; strings.Join(events, " ") != want {
		t.Fatalf("events %q, want %q (no use after a failed read)", events, want)
	}
}

// TestFallbackWhenDirectRefused: a filesystem refusing O_DIRECT with
// EINVAL gives buffered pread, saying so and why; any other open error is
// Open's error, naming the file.
func TestFallbackWhenDirectRefused(t *testing.T) {
	path, data := testFile(t, expertAlign)
	r := []cflowfmt.Range{{Offset: 16, Length: 32}}
	x, err := Open(path, Direct, r, 1, Hooks{OpenDirect: func(string) (int, error) { return -1, unix.EINVAL }})
	if err != nil {
		t.Fatal(err)
	}
	s := x.Stage(r[0])
	got, off, err := x.Await(s)
	if err != nil || off != 0 || !bytes.Equal(got[16:48], data[16:48]) {
		t.Fatalf("fallback read: off %d, err %v", off, err)
	}
	x.Put(s)
	st := x.Stats()
	x.Close()
	if d := st.Describe(); st.Direct || !strings.Contains(d, "buffered pread") || !strings.Contains(d, "invalid argument") {
		t.Fatalf("fallback described %q", d)
	}
	_, err = Open(path, Direct, r, 1, Hooks{OpenDirect: func(string) (int, error) { return -1, unix.EACCES }})
	if err == nil || !errors.Is(err, unix.EACCES) || !strings.Contains(err.Error(), path) {
		t.Fatalf("refused open: %v, want EACCES naming %s", err, path)
	}
	if _, err := Open(path, Mmap, r, 1, Hooks{}); err == nil {
		t.Fatal("Open accepted mmap mode, which has no staged tier")
	}
	if _, err := Open(path, Sync, nil, 1, Hooks{}); err == nil {
		t.Fatal("Open accepted a model without expert ranges")
	}
}
