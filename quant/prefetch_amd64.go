//go:build !noasm

package quant

import "unsafe"

// Prefetch asks the CPU to bring the 128 bytes from p into cache without
// waiting for them. A matvec reads a tile's 96-byte descriptor (its
// geometry and slice headers) before it can start on the tile's data; with
// the whole weight stream flowing through the caches in between, the
// descriptor is a cache miss every time unless it is asked for one tile
// ahead (docs/PERFORMANCE.md, log at 0382674, "Session 6"). p need not be
// valid: a prefetch never faults.
//
//go:noescape
func Prefetch(p unsafe.Pointer)
