//go:build linux

package pool

import "golang.org/x/sys/unix"

// osYield gives the calling thread's CPU to another runnable thread
// (sched_yield) without giving up its P, for spin loops of threads locked
// to pinned CPUs.
func osYield() { unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0) }
