package fileio

import (
	"fmt"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// Recached is what Recache measured: the file's mapping before (as the
// page cache held it) and after the re-read.
type Recached struct {
	Path          string
	Before, After HugePages
}

// recacheStep is how many bytes Recache faults in between progress calls.
const recacheStep = 64 << 20

// Recache re-reads path into the page cache in 2 MiB folios: it maps the
// file and faults it in to measure how much the cache lets a mapping put on
// 2 MiB pages (Before), drops the file's clean pages (DropPageCache), and
// faults it back in through a MADV_HUGEPAGE mapping, one byte per 4 KiB
// (After). The kernel cannot merge small folios already cached
// (MADV_COLLAPSE is EINVAL for ext4 files on kernel 6.18), so eviction and
// a fresh fault are the only way to upgrade a file the converter just wrote
// or that was read with read(); pages other processes map stay as they are.
// The file's bytes are never written. progress (may be nil) gets bytes
// faulted so far over both passes, of 2× the file size.
func Recache(path string, progress func(done, total int64)) (Recached, error) {
	r := Recached{Path: path}
	// Stat first: opening a FIFO for reading would block.
	if st, err := os.Stat(path); err != nil {
		return r, err
	} else if !st.Mode().IsRegular() {
		return r, fmt.Errorf("%s: not a regular file", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return r, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return r, err
	}
	if !st.Mode().IsRegular() {
		return r, fmt.Errorf("%s: not a regular file", path)
	}
	size := st.Size()
	if int64(int(size)) != size {
		return r, fmt.Errorf("%s: %d bytes do not fit in the address space", path, size)
	}
	if size == 0 {
		return r, nil
	}
	total := 2 * size
	if progress == nil {
		progress = func(int64, int64) {}
	}
	if r.Before, err = faultIn(f, int(size), func(done int64) { progress(done, total) }); err != nil {
		return r, err
	}
	if err := dropPageCache(f); err != nil {
		return r, err
	}
	r.After, err = faultIn(f, int(size), func(done int64) { progress(size+done, total) })
	return r, err
}

// faultIn maps size bytes of f with MADV_HUGEPAGE, reads one byte of every
// 4 KiB page in order (so readahead sees a sequential stream, as decode's
// first token does), and measures the mapping before unmapping it.
func faultIn(f *os.File, size int, progress func(done int64)) (HugePages, error) {
	b, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return HugePages{}, fmt.Errorf("%s: mmap: %w", f.Name(), err)
	}
	defer unix.Munmap(b)
	adviseHuge(b)
	var sum byte
	err = GuardFault(f.Name(), func() error {
		for off := 0; off < size; off += recacheStep {
			for i := off; i < min(off+recacheStep, size); i += 4096 {
				sum += b[i]
			}
			progress(int64(min(off+recacheStep, size)))
		}
		return nil
	})
	if err != nil {
		return HugePages{}, err
	}
	h, err := MappedHugePages(b)
	runtime.KeepAlive(sum) // the reads are the point: the compiler must not drop them
	return h, err
}
