//go:build !noasm

package quant

// expScoresAVX2: ExpScores and SiLUMul run their loops in assembly
// (exp_amd64.s, generated: generate.go), set at package init.
var expScoresAVX2 = CPU().AVX2
