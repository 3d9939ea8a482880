package numa

import (
	"testing"
	"unsafe"
)

// TestArenaAlignment: an arena of 2 MiB or more starts on a 2 MiB
// boundary (so the kernel can map it with 2 MiB pages), a smaller one on
// a page; both are exactly the size asked for, writable end to end, and
// free unmaps the whole mapping once.
func TestArenaAlignment(t *testing.T) {
	for _, c := range []struct {
		size  uintptr
		align uintptr
	}{{4096, 4096}, {hugePage - 4096, 4096}, {hugePage, hugePage}, {3*hugePage + 123, hugePage}} {
		a, err := NewArena(c.size)
		if err != nil {
			t.Fatal(err)
		}
		if uintptr(len(a.b)) != c.size || a.Addr()%c.align != 0 {
			t.Fatalf("size %d: arena of %d bytes at %#x, want %d bytes aligned to %d", c.size, len(a.b), a.Addr(), c.size, c.align)
		}
		lo, hi := uintptr(unsafe.Pointer(&a.m[0])), uintptr(unsafe.Pointer(&a.m[len(a.m)-1]))
		if a.Addr() < lo || a.Addr()+c.size-1 > hi {
			t.Fatalf("size %d: arena outside its mapping", c.size)
		}
		a.b[0], a.b[len(a.b)-1] = 1, 2
		a.Free()
		a.Free()
		if a.b != nil || a.m != nil {
			t.Fatal("free left the arena mapped")
		}
	}
}
