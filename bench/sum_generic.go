//go:build !amd64 || noasm

package bench

// sumFast has no SIMD path in this build; sum falls back to sumScalar.
func sumFast([]uint64) (int, uint64) { return 0, 0 }
