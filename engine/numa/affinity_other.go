//go:build !linux

package numa

import (
	"errors"
	"runtime"
)

var errNotLinux = errors.New("numa: thread pinning and mbind need Linux")

// Allowed reports every CPU Go sees: other systems have no affinity API
// here, and the engine then runs unpinned.
func Allowed() ([]int, error) {
	out := make([]int, runtime.NumCPU())
	for i := range out {
		out[i] = i
	}
	return out, nil
}

// Pin fails off Linux; the engine records the note and runs unpinned.
func Pin(cpus []int) error { return errNotLinux }
