package convert

import "unsafe"

// uintptrOf gives the address of b's first byte, needed to round madvise
// ranges to page boundaries.
func uintptrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }
