package cflowfmt

import (
	"fmt"
	"runtime/debug"
)

// GuardFault runs fn with memory faults turned into a FormatError: a
// mapped file truncated (or rewritten shorter) under the process raises
// SIGBUS on the next read of a vanished page, which Go reports as a fatal
// crash unless the goroutine asked for a panic instead. The readers wrap
// their walks over the mapping (Open, Check, lazy expert parsing) in it,
// and commands wrap other whole-file reads (export, inspect) in it.
func GuardFault(name string, fn func() error) (err error) {
	old := debug.SetPanicOnFault(true)
	defer debug.SetPanicOnFault(old)
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		if fe, ok := r.(interface{ Addr() uintptr }); ok {
			err = &FormatError{File: name, What: fmt.Sprintf("memory fault reading the mapped file at address %#x: the file was truncated or replaced while open (%v)", fe.Addr(), r)}
			return
		}
		panic(r)
	}()
	return fn()
}
