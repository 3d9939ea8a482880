package cflowfmt

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// MapFile maps path read-only and returns the bytes and an unmap function.
// Files too small to map (empty) are read instead, so parsers always see
// the real length and report a FormatError rather than an mmap error.
func MapFile(path string) ([]byte, func() error, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	size := st.Size()
	if !st.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("%s: not a regular file", path)
	}
	if size < 4096 {
		b, err := os.ReadFile(path)
		return b, func() error { return nil }, err
	}
	if int64(int(size)) != size {
		return nil, nil, fmt.Errorf("%s: %d bytes do not fit in the address space", path, size)
	}
	b, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: mmap: %w", path, err)
	}
	return b, func() error { return unix.Munmap(b) }, nil
}
