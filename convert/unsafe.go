package convert

import "unsafe"

// uintptrOf gives the address of b's first byte, needed to round madvise
// ranges to page boundaries.
func uintptrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

// u16At views the first two bytes of b (little-endian f16 bits, as x86
// loads them) as a *uint16 for the assembly quantizers.
func u16At(b []byte) *uint16 { return (*uint16)(unsafe.Pointer(unsafe.SliceData(b))) }
