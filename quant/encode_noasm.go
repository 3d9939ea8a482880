//go:build noasm || !amd64

package quant

// haveEncodeAsm is false without assembly; the Go group quantizers run.
const haveEncodeAsm = false

func q4RowF32(*float32, int, *uint16, *byte) int { panic("unreachable") }
func q4RowF16(*uint16, int, *uint16, *byte) int  { panic("unreachable") }
func q8RowF32(*float32, int, *uint16, *byte) int { panic("unreachable") }
func q8RowF16(*uint16, int, *uint16, *byte) int  { panic("unreachable") }
