//go:build linux

package numa

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Memory-policy modes and flags of mbind(2), re-exported so callers need
// not import x/sys/unix.
const (
	MpolBind       = unix.MPOL_BIND
	MpolInterleave = unix.MPOL_INTERLEAVE
	MpolMFMove     = unix.MPOL_MF_MOVE
)

// Mbind sets the memory policy of [addr, addr+length) (addr page-aligned)
// to mode over the given memory nodes, via the raw syscall (x/sys/unix has
// no wrapper).
func Mbind(addr, length uintptr, mode int, nodes []int, flags int) error {
	hi := 0
	for _, n := range nodes {
		if n < 0 {
			return fmt.Errorf("mbind: negative node %d", n)
		}
		hi = max(hi, n)
	}
	mask := make([]uint64, hi/64+1)
	for _, n := range nodes {
		mask[n/64] |= 1 << (n % 64)
	}
	// maxnode counts one more than the mask's bits: the kernel reads
	// maxnode−1 bits.
	_, _, e := unix.Syscall6(unix.SYS_MBIND, addr, length, uintptr(mode),
		uintptr(unsafe.Pointer(&mask[0])), uintptr(len(mask)*64+1), uintptr(flags))
	if e != 0 {
		return fmt.Errorf("mbind(%#x, %d, mode %d, nodes %v): %w", addr, length, mode, nodes, e)
	}
	return nil
}
