//go:build noasm || !amd64

package convert

// haveGroupAsm is false without assembly; the Go group quantizers run.
var haveGroupAsm = false

func q4GroupF32(*float32, *byte) (float32, bool) { panic("unreachable") }
func q4GroupF16(*uint16, *byte) (float32, bool)  { panic("unreachable") }
func q8GroupF32(*float32, *byte) (float32, bool) { panic("unreachable") }
func q8GroupF16(*uint16, *byte) (float32, bool)  { panic("unreachable") }
