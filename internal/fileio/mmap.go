package fileio

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// MapFile maps path read-only and returns the bytes, whether they are a
// mapping, and the function that releases them. Files under a page are
// read into the heap instead (mapped false), so parsers always see the
// real length and report a format error rather than an mmap error.
// The mapping asks for 2 MiB pages (adviseHuge, hugepages_linux.go): decode
// streams all of it every token, and on 4 KiB pages it paid a TLB miss per
// page (on the Zen 3 VM decode ran 1.12× faster at one thread and 1.22×
// at two from 2 MiB than from 4 KiB folios, interleaved rounds;
// docs/PERFORMANCE.md, log at 0382674, "Session 7: the model mapping on 2 MiB pages").
func MapFile(path string) (data []byte, mapped bool, release func() error, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false, nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, false, nil, err
	}
	size := st.Size()
	if !st.Mode().IsRegular() {
		return nil, false, nil, fmt.Errorf("%s: not a regular file", path)
	}
	if size < minMapSize {
		b, err := os.ReadFile(path)
		return b, false, func() error { return nil }, err
	}
	if int64(int(size)) != size {
		return nil, false, nil, fmt.Errorf("%s: %d bytes do not fit in the address space", path, size)
	}
	b, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, false, nil, fmt.Errorf("%s: mmap: %w", path, err)
	}
	adviseHuge(b)
	return b, true, func() error { return unix.Munmap(b) }, nil
}

// minMapSize is the smallest file MapFile maps; smaller ones are read into
// the heap.
const minMapSize = 4096
