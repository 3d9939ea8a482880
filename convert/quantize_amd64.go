//go:build !noasm

package convert

import "github.com/klauspost/cpuid/v2"

// haveGroupAsm reports whether the AVX2/F16C group quantizers
// (quantize_amd64.s) can run here; conversion throughput depends on them,
// the bytes never do.
var haveGroupAsm = cpuid.CPU.Supports(cpuid.AVX2, cpuid.F16C)

// Each quantizes one zero-padded 32-weight group into out (16 bytes Q4_0,
// 32 bytes Q8_0) and returns the f32 scale; ok is false (out untouched)
// when the group holds NaN or ±Inf.

//go:noescape
func q4GroupF32(src *float32, out *byte) (s float32, ok bool)

//go:noescape
func q4GroupF16(src *uint16, out *byte) (s float32, ok bool)

//go:noescape
func q8GroupF32(src *float32, out *byte) (s float32, ok bool)

//go:noescape
func q8GroupF16(src *uint16, out *byte) (s float32, ok bool)
