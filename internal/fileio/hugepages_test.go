package fileio

import (
	"strings"
	"testing"
)

// smapsSample has the form of /proc/self/smaps on kernel 6.18 (field
// lines abridged, the rest as the kernel prints them, a path with a space):
// a heap VMA, a file mapping split in two VMAs (the second partly on 2 MiB
// pages), and a library VMA after it.
const smapsSample = `c000000000-c004000000 rw-p 00000000 00:00 0 
Size:              65536 kB
KernelPageSize:        4 kB
MMUPageSize:           4 kB
Rss:                4096 kB
AnonHugePages:      4096 kB
ShmemPmdMapped:        0 kB
FilePmdMapped:         0 kB
VmFlags: rd wr mr mw me ac 
7f0000000000-7f0000400000 r--s 00000000 fe:01 1835015                    /work/tmp/a model.cflow
Size:               4096 kB
KernelPageSize:        4 kB
MMUPageSize:           4 kB
Rss:                4096 kB
Pss:                4096 kB
AnonHugePages:         0 kB
ShmemPmdMapped:        0 kB
FilePmdMapped:      4096 kB
Shared_Hugetlb:        0 kB
THPeligible:           1
VmFlags: rd sh mr mw me ms hg 
7f0000400000-7f0000a00000 r--s 00400000 fe:01 1835015                    /work/tmp/a model.cflow
Size:               6144 kB
Rss:                6144 kB
AnonHugePages:         0 kB
ShmemPmdMapped:        0 kB
FilePmdMapped:      2048 kB
VmFlags: rd sh mr mw me ms 
7f0000a00000-7f0000a01000 r--p 00000000 fe:01 99                         /usr/lib/x.so
Size:                  4 kB
FilePmdMapped:         0 kB
VmFlags: rd mr mw me 
`

func TestParseSmapsHuge(t *testing.T) {
	const base = 0x7f0000000000
	for _, c := range []struct {
		name       string
		lo, hi     uintptr
		huge, size int64
	}{
		{"the whole model mapping (two VMAs)", base, base + 0xa00000, 6 << 20, 10 << 20},
		{"the first VMA", base, base + 0x400000, 4 << 20, 4 << 20},
		{"a slice shorter than its VMA's pages", base, base + 0x400000 - 100, 4<<20 - 100, 4<<20 - 100},
		{"straddling both VMAs: the second's huge bytes capped at its overlap", base + 0x200000, base + 0x500000, 2<<20 + 1<<20, 3 << 20},
		{"the heap (anonymous huge pages count)", 0xc000000000, 0xc004000000, 4 << 20, 64 << 20},
		{"no VMA there", 0x1000, 0x2000, 0, 0},
	} {
		h, err := parseSmapsHuge(strings.NewReader(smapsSample), c.lo, c.hi)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if h.Huge != c.huge || h.Size != c.size {
			t.Errorf("%s: got %d huge of %d bytes, want %d of %d", c.name, h.Huge, h.Size, c.huge, c.size)
		}
	}
	bad := strings.Replace(smapsSample, "FilePmdMapped:      2048 kB", "FilePmdMapped:      2048 pages", 1)
	if _, err := parseSmapsHuge(strings.NewReader(bad), base, base+0xa00000); err == nil {
		t.Error("a FilePmdMapped value not in kB was accepted")
	}
}

func TestHugePagesString(t *testing.T) {
	h := HugePages{Huge: 604 << 20, Size: 605<<20 + 400<<10}
	if s := h.String(); s != "604 of 605 MiB" {
		t.Errorf("String() = %q", s)
	}
	if f := h.Fraction(); f < 0.997 || f > 0.998 {
		t.Errorf("Fraction() = %v", f)
	}
	if f := (HugePages{}).Fraction(); f != 0 {
		t.Errorf("empty Fraction() = %v", f)
	}
}
