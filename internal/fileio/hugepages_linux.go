package fileio

import (
	"fmt"
	"os"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// adviseHuge asks for 2 MiB pages over a file mapping (MADV_HUGEPAGE). With
// THP "madvise" the kernel then reads the file into the page cache in 2 MiB
// folios when the mapping faults it in and maps them with PMD entries.
// Without it, readahead still chose large folios for most of the file
// (93% of the TinyLlama-geometry file on the Zen 3 VM); with it, 99.8%. It is a hint:
// pages already cached in small folios stay small (Recache re-reads them),
// and an error only means 4 KiB pages, which still work.
func adviseHuge(b []byte) { _ = unix.Madvise(b, unix.MADV_HUGEPAGE) }

// MappedHugePages reports how much of b, a slice of a mapping (the model
// file's, from MapFile), the kernel currently maps with 2 MiB page-table
// entries, from /proc/self/smaps. Only pages already faulted in count, so
// measure after the mapping was read (bench measures after decode).
func MappedHugePages(b []byte) (HugePages, error) {
	if len(b) == 0 {
		return HugePages{}, nil
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return HugePages{}, err
	}
	defer f.Close()
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	h, err := parseSmapsHuge(f, lo, lo+uintptr(len(b)))
	if err == nil && h.Size == 0 {
		err = fmt.Errorf("smaps: no mapping covers %#x", lo)
	}
	return h, err
}

// THPEnabled is the bracketed word of
// /sys/kernel/mm/transparent_hugepage/enabled ("always", "madvise",
// "never"), or "" when the kernel has no THP. With "never" no hint gives a
// mapping 2 MiB pages, so bench's advice to recache would be wrong.
func THPEnabled() string {
	b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil {
		return ""
	}
	_, rest, ok := strings.Cut(string(b), "[")
	word, _, ok2 := strings.Cut(rest, "]")
	if !ok || !ok2 {
		return ""
	}
	return word
}

// DropPageCache evicts path's clean pages from the page cache
// (POSIX_FADV_DONTNEED) after flushing its dirty ones (fdatasync), so the
// next mapping reads it back in large folios. Pages the converter or the
// exporter wrote, or read() read, stay in small folios, which a mapping
// can only map with 4 KiB entries (43% of the TinyLlama-geometry
// file PMD-mapped on the Zen 3 VM). It never changes the file: pages mapped by other processes stay
// cached, and dirty pages are written, not dropped.
func DropPageCache(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return dropPageCache(f)
}

func dropPageCache(f *os.File) error {
	_ = unix.Fdatasync(int(f.Fd())) // a read-only fd may sync on Linux; only makes DONTNEED drop more
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		return fmt.Errorf("%s: posix_fadvise(DONTNEED): %w", f.Name(), err)
	}
	return nil
}
