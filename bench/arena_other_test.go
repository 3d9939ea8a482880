//go:build !linux

package bench

// hugeBytes returns n zero bytes; huge pages are asked for on Linux only
// (arena_linux_test.go).
func hugeBytes(n int) []byte { return make([]byte, n) }
