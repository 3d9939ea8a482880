//go:build noasm || !amd64

package quant

import "unsafe"

// Prefetch does nothing where cflow has no assembly: it is only a hint.
func Prefetch(p unsafe.Pointer) {}
