//go:build !linux

package bench

// hugeBytes returns n zero bytes and a no-op release; huge pages are asked
// for on Linux only (arena_linux.go).
func hugeBytes(n int) ([]byte, func()) { return make([]byte, n), func() {} }
