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
func GuardFault(name string, fn func() error) error {
	return GuardFaultIn(func(uintptr) (string, int64) { return name, 0 }, fn)
}

// GuardFaultIn is GuardFault for a reader of several mapped files (the
// converter's safetensors shards): locate maps the faulting address to the
// file whose mapping holds it and the offset in that file, so the error
// names the shard that shrank and where, not just "the input". SetPanicOnFault
// is per goroutine: each goroutine that reads a mapping needs its own guard.
func GuardFaultIn(locate func(addr uintptr) (name string, offset int64), fn func() error) (err error) {
	old := debug.SetPanicOnFault(true)
	defer debug.SetPanicOnFault(old)
	defer func() {
		if fe := faultErrorAt(locate, recover()); fe != nil {
			err = fe
		}
	}()
	return fn()
}

// IsFault reports whether r, a value recovered from a panic, is a memory
// fault raised under debug.SetPanicOnFault (a read of a vanished mapped
// page) rather than a bug: the runtime's workers forward exactly these to
// the goroutine that turns them into an error.
func IsFault(r any) bool {
	_, ok := r.(interface{ Addr() uintptr })
	return ok
}

// FaultError is the error for r, a value recovered from a panic: nil when
// nothing panicked, a FormatError naming file name for a memory fault, and
// any other panic is re-raised (it is a bug of ours). GuardFault and the
// runtime's entry points, which need their own clean-up around the
// recover, share it, so a truncated file is reported one way everywhere.
func FaultError(name string, r any) error {
	return faultErrorAt(func(uintptr) (string, int64) { return name, 0 }, r)
}

// faultErrorAt is FaultError with the file and offset found from the
// faulting address.
func faultErrorAt(locate func(addr uintptr) (string, int64), r any) error {
	if r == nil {
		return nil
	}
	if !IsFault(r) {
		panic(r)
	}
	addr := r.(interface{ Addr() uintptr }).Addr()
	name, off := locate(addr)
	return &FormatError{File: name, Offset: off, What: fmt.Sprintf("memory fault reading the mapped file at address %#x: the file was truncated or replaced while open (%v)", addr, r)}
}
