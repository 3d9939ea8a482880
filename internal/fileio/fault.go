package fileio

import (
	"fmt"
	"runtime/debug"
)

// FaultError is a read of a mapped file that faulted: the file was
// truncated (or rewritten shorter) under the process, so a page of the
// mapping vanished. It is bad input found late (exit 2 in the CLI), named
// by file and offset like a format error, never a crash.
type FaultError struct {
	File   string
	Offset int64   // offset in File of the faulting read, when known (else 0)
	Addr   uintptr // the faulting address
	Cause  any     // the runtime's panic value
}

// Reason is what went wrong, without the file and offset.
func (e *FaultError) Reason() string {
	return fmt.Sprintf("memory fault reading the mapped file at address %#x: the file was truncated or replaced while open (%v)", e.Addr, e.Cause)
}

func (e *FaultError) Error() string {
	what := e.Reason()
	if e.File != "" {
		return fmt.Sprintf("%s: offset %d: %s", e.File, e.Offset, what)
	}
	return fmt.Sprintf("offset %d: %s", e.Offset, what)
}

// GuardFault runs fn with memory faults turned into a *FaultError: a
// mapped file truncated under the process raises SIGBUS on the next read
// of a vanished page, which Go reports as a fatal crash unless the
// goroutine asked for a panic instead. The readers wrap their walks over
// the mapping (Open, Check, lazy expert parsing) in it, and commands wrap
// other whole-file reads (export, inspect) in it.
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
// page) rather than a bug: the engine's workers forward exactly these to
// the goroutine that turns them into an error.
func IsFault(r any) bool {
	_, ok := r.(interface{ Addr() uintptr })
	return ok
}

// RecoveredFault is the error for r, a value recovered from a panic: nil
// when nothing panicked, a *FaultError naming file name for a memory
// fault, and any other panic is re-raised (it is a bug of ours).
// GuardFault and the engine's entry points, which need their own clean-up
// around the recover, share it, so a truncated file is reported one way
// everywhere.
func RecoveredFault(name string, r any) error {
	return faultErrorAt(func(uintptr) (string, int64) { return name, 0 }, r)
}

// faultErrorAt is RecoveredFault with the file and offset found from the
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
	return &FaultError{File: name, Offset: off, Addr: addr, Cause: r}
}
