//go:build !linux

package pool

import "runtime"

// osYield falls back to Gosched where sched_yield is not at hand (NUMA
// groups are not pinned off Linux).
func osYield() { runtime.Gosched() }
