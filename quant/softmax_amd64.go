//go:build !noasm

package quant

// expScoresAVX2: ExpScores runs its loops in assembly
// (softmax_avx2_amd64.s), set at package init.
var expScoresAVX2 = CPU().AVX2

// maxScaled256 is max(s[i]·scale) over n scores, n a multiple of 8, ≥ 8.
//
//go:noescape
func maxScaled256(s *float32, n int, scale float32) float32

// expShifted256 is ExpScores' second loop over n scores, n a multiple of 8.
//
//go:noescape
func expShifted256(s *float32, n int, scale, mx float32, p *float32)
