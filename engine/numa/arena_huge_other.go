//go:build !linux

package numa

// adviseHugeArena does nothing: MADV_HUGEPAGE is asked for on Linux only
// (arena_huge_linux.go).
func adviseHugeArena([]byte) {}
