package numa

import (
	"fmt"
	"os"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Arena is page-aligned anonymous memory outside the Go heap, for a
// node's copies of its tiles and its scratch: a memory policy (a Copy or
// Scratch Request) applies to it alone, and the GC never moves it. An
// Arena of 2 MiB or more starts on a 2 MiB boundary and asks for 2 MiB
// pages (adviseHugeArena), as the file mapping does, so a decode streaming
// through hundreds of MB of copies does not miss the TLB every 4 KiB. b is
// that aligned part of the mapping m.
type Arena struct{ b, m []byte }

// hugePage is the x86-64 (and arm64 4K-granule) PMD page size.
const hugePage = 2 << 20

// NewArena maps size bytes of zeroed memory; Free unmaps it.
func NewArena(size uintptr) (*Arena, error) {
	full := size
	if size >= hugePage {
		full += hugePage // room to start on a 2 MiB boundary
	}
	m, err := unix.Mmap(-1, 0, int(full), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		return nil, fmt.Errorf("mmap %d bytes: %w", size, err)
	}
	if size < hugePage {
		return &Arena{b: m, m: m}, nil
	}
	off := (hugePage - uintptr(unsafe.Pointer(&m[0]))%hugePage) % hugePage
	b := m[off : off+size : off+size]
	adviseHugeArena(b)
	return &Arena{b: b, m: m}, nil
}

// Bytes is the arena's memory, exactly the size asked for.
func (a *Arena) Bytes() []byte { return a.b }

// Addr is the arena's first byte's address, for a Request's Addr.
func (a *Arena) Addr() uintptr { return uintptr(unsafe.Pointer(&a.b[0])) }

// Free unmaps the arena; nothing may use its Bytes afterwards. Freeing
// twice is harmless.
func (a *Arena) Free() {
	if a.m != nil {
		unix.Munmap(a.m)
		a.b, a.m = nil, nil
	}
}

// Prefault reads one byte per page of b (and its last byte), so a node's
// worker that will read b faults its pages in first: where the kernel
// ignores a MAP_SHARED range's policy as the page cache allocates, first
// touch still puts the pages on the reading node. KeepAlive on the sum
// keeps the compiler from dropping the reads.
func Prefault(b []byte) {
	if len(b) == 0 {
		return
	}
	s := b[len(b)-1]
	for i := 0; i < len(b); i += os.Getpagesize() {
		s += b[i]
	}
	runtime.KeepAlive(s)
}
