package quant

import "syscall"

// hugeBytes returns n zero bytes that the kernel backs with transparent
// huge pages where it can (MADV_HUGEPAGE), as it does for a model file's
// mapping in the page cache (FilePmdMapped): a DRAM benchmark on 4 KiB
// heap pages measures TLB misses the engine does not have (on Zen 3 the
// four-column Q4 kernel streamed 8-13% slower and the single-column one
// 16-24% slower than on huge pages; docs/PERFORMANCE.md, log at 0382674,
// "Session 6: the stream"). The mapping lives as long as the test process.
func hugeBytes(n int) []byte {
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return make([]byte, n)
	}
	_ = syscall.Madvise(b, syscall.MADV_HUGEPAGE) // a hint: 4 KiB pages still work
	return b
}
