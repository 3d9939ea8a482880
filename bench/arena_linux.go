package bench

import "syscall"

// hugeBytes returns n zero bytes that the kernel backs with transparent
// huge pages where it can (MADV_HUGEPAGE), as it does for a model file's
// mapping in the page cache (FilePmdMapped), and the function that gives
// them back. The read probe and the DRAM benchmarks read from it: on 4 KiB
// heap pages they would measure TLB misses the engine does not have (on
// Zen 3 the probe read 13–23% slower and the single-column Q4 kernel
// 16–24% slower than on huge pages; docs/PERFORMANCE.md, log at 0382674,
// "Session 6: the stream"), and a roofline below what the model's own pages allow would
// flatter every decode figure judged against it.
func hugeBytes(n int) ([]byte, func()) {
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return make([]byte, n), func() {}
	}
	_ = syscall.Madvise(b, syscall.MADV_HUGEPAGE) // a hint: 4 KiB pages still work
	return b, func() { _ = syscall.Munmap(b) }
}
