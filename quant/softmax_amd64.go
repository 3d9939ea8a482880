//go:build !noasm

package quant

// expScoresAVX2: ExpScores and SiLUMul run their loops in assembly
// (exp_avx2_amd64.s), set at package init.
var expScoresAVX2 = CPU().AVX2

// maxScaled256 is max(s[i]·scale) over n scores, n a multiple of 8, ≥ 8.
//
//go:noescape
func maxScaled256(s *float32, n int, scale float32) float32

// expShifted256 is ExpScores' second loop over n scores, n a multiple of 8.
//
//go:noescape
func expShifted256(s *float32, n int, scale, mx float32, p *float32)

// siluMul256 is SiLUMul's loop over the leading chunks of 8 of n (a
// multiple of 8) whose inputs lie in (−87, 87); it returns how many it did.
//
//go:noescape
func siluMul256(gate, up *float32, n int) int
