//go:build linux

package numa

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Allowed lists the CPUs this process may run on (sched_getaffinity), so
// a topology naming CPUs outside a container's cpuset is caught before a
// worker tries to pin there.
func Allowed() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("numa: sched_getaffinity: %w", err)
	}
	var out []int
	for c := 0; c < len(set)*64; c++ {
		if set.IsSet(c) {
			out = append(out, c)
		}
	}
	return out, nil
}

// Pin restricts the calling OS thread to cpus. The caller must hold the
// thread with runtime.LockOSThread first, or the Go scheduler may move the
// goroutine to an unpinned thread (and leave this one pinned for others).
func Pin(cpus []int) error {
	if len(cpus) == 0 {
		return fmt.Errorf("numa: pin to an empty CPU set")
	}
	var set unix.CPUSet
	for _, c := range cpus {
		if c < 0 || c >= len(set)*64 {
			return fmt.Errorf("numa: CPU %d outside the %d-CPU affinity mask", c, len(set)*64)
		}
		set.Set(c)
	}
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return fmt.Errorf("numa: sched_setaffinity to CPUs %s: %w", FormatCPUList(cpus), err)
	}
	return nil
}
