package convert

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// mapping is a read-only view of a whole file. Tensors alias it, so a
// checkpoint larger than memory is paged in only as tiles are read.
type mapping struct {
	path string
	data []byte
}

func mapFile(path string) (*mapping, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() == 0 {
		return &mapping{path: path}, nil
	}
	if st.Size() != int64(int(st.Size())) {
		return nil, fmt.Errorf("%s: %d bytes is too large to map", path, st.Size())
	}
	b, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("%s: mmap: %w", path, err)
	}
	_ = unix.Madvise(b, unix.MADV_SEQUENTIAL)
	return &mapping{path: path, data: b}, nil
}

func (m *mapping) close() error {
	if m == nil || m.data == nil {
		return nil
	}
	err := unix.Munmap(m.data)
	m.data = nil
	return err
}

// release drops the pages of b from this process's resident set once a
// tensor has been quantized; the page cache keeps them, so this only bounds
// RSS, it never costs a re-read of data still needed.
func release(b []byte) {
	const page = 4096
	if len(b) < 2*page {
		return
	}
	// Only whole pages inside b; neighbours may still be in use.
	p := uintptrOf(b)
	start := (page - int(p%page)) % page
	end := len(b) - int((p+uintptr(len(b)))%page)
	if end-start < page {
		return
	}
	_ = unix.Madvise(b[start:end], unix.MADV_DONTNEED)
}
