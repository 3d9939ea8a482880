package fileio_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/cflow-dev/cflow/internal/fileio"
)

// TestGuardFaultInLocates: a read of a page that vanished when the mapped
// file was truncated is a FaultError whose file and offset come from
// locate applied to the faulting address (here: the second page of the
// file, as the mapping's base shows), not a fatal SIGBUS; any other panic
// is re-raised.
func TestGuardFaultInLocates(t *testing.T) {
	const page = 4096
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, make([]byte, 4*page), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := unix.Mmap(int(f.Fd()), 0, 4*page, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	if err := os.Truncate(p, page); err != nil {
		t.Fatal(err)
	}
	base := uintptr(unsafe.Pointer(&m[0]))
	locate := func(addr uintptr) (string, int64) { return "shard-7", int64(addr - base) }
	var sink byte
	err = fileio.GuardFaultIn(locate, func() error { sink += m[page+100]; return nil })
	var fe *fileio.FaultError
	if !errors.As(err, &fe) || fe.File != "shard-7" || fe.Offset != page+100 {
		t.Fatalf("got %v (%+v), want a FaultError for shard-7 at offset %d", err, fe, page+100)
	}
	if err := fileio.GuardFaultIn(locate, func() error { sink += m[page-1]; return nil }); err != nil {
		t.Fatalf("a read inside the file faulted: %v", err)
	}
	defer func() {
		if r := recover(); r != "a bug" {
			t.Fatalf("a non-fault panic came back as %v", r)
		}
	}()
	fileio.GuardFaultIn(locate, func() error { panic("a bug") })
	t.Fatal("the panic was swallowed")
}
