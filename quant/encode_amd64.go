//go:build !noasm

package quant

// haveEncodeAsm: this build has the AVX2/F16C group quantizers
// (encode_amd64.s, generated: generate.go); encodeAsm also asks the CPU.
const haveEncodeAsm = true
