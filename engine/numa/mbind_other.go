//go:build !linux

package numa

// Memory-policy values of Linux's mbind(2); unused elsewhere.
const (
	MpolBind       = 2
	MpolInterleave = 3
	MpolMFMove     = 2
)

// Mbind fails off Linux; the engine reports the placement as not applied.
func Mbind(addr, length uintptr, mode int, nodes []int, flags int) error { return errNotLinux }
