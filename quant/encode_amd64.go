//go:build !noasm

package quant

// haveEncodeAsm: this build has the AVX2/F16C group quantizers
// (encode_amd64.s); encodeAsm also asks the CPU.
const haveEncodeAsm = true

// Each quantizes n consecutive full 32-weight groups of one row (Q4_0: 16
// data bytes per group, Q8_0: 32), writing f16 scales to sc, and returns
// how many it did: done < n means group `done` holds NaN or ±Inf and is
// left to the reference encoder.

//go:noescape
func q4RowF32(src *float32, n int, sc *uint16, out *byte) (done int)

//go:noescape
func q4RowF16(src *uint16, n int, sc *uint16, out *byte) (done int)

//go:noescape
func q8RowF32(src *float32, n int, sc *uint16, out *byte) (done int)

//go:noescape
func q8RowF16(src *uint16, n int, sc *uint16, out *byte) (done int)
