package pool

import (
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
)

// TestFrontSpreadsContiguousRuns checks a front over three groups: each
// group's workers are told apart by their OS thread ids (each worker is
// locked to its thread, and pin runs on it), and group g must run exactly
// items [g·n/3, (g+1)·n/3), each once — what lands a node's attention heads
// on the node holding their rows. The front's caller runs none.
func TestFrontSpreadsContiguousRuns(t *testing.T) {
	const G = 3
	var mu sync.Mutex
	group := map[int]int{} // thread id → group
	var groups []*Pool
	for g := 0; g < G; g++ {
		gp, err := NewGroup(2, func() error {
			mu.Lock()
			group[syscall.Gettid()] = g
			mu.Unlock()
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		groups = append(groups, gp)
	}
	front := NewFront(groups)
	defer front.Close()
	if len(front.Groups()) != G || front.Workers() != 0 {
		t.Fatalf("front: %d groups, %d workers", len(front.Groups()), front.Workers())
	}
	for _, n := range []int{1, 2, 3, 10, 97} {
		tid := make([]int, n)
		counts := make([]atomic.Int32, n)
		front.Run(n, func(i int) {
			counts[i].Add(1)
			tid[i] = syscall.Gettid()
		})
		for want := range G {
			for i := want * n / G; i < (want+1)*n/G; i++ {
				if c := counts[i].Load(); c != 1 {
					t.Fatalf("%d items: item %d ran %d times", n, i, c)
				}
				if g, ok := group[tid[i]]; !ok || g != want {
					t.Fatalf("%d items: item %d ran on group %d (a worker: %v), want %d", n, i, g, ok, want)
				}
			}
		}
	}
}

// TestFaultForwardedToCaller: an item that reads unmapped memory (a real
// SIGSEGV under SetPanicOnFault, as a weight file truncated under the
// engine gives) does not crash the process or hang the loop: every other
// item still runs (on a pool with workers; a lone caller stops at the
// fault) and the fault is re-raised in Run's caller, where recover sees a
// value with the faulting address.
func TestFaultForwardedToCaller(t *testing.T) {
	page, err := syscall.Mmap(-1, 0, 4096, syscall.PROT_READ, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Munmap(page); err != nil {
		t.Fatal(err)
	}
	for _, threads := range []int{1, 3} {
		p := New(threads)
		n := 40
		var ran atomic.Int32
		var sink byte
		r := func() (r any) {
			defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
			defer func() { r = recover() }()
			p.Run(n, func(i int) {
				if i == 7 {
					sink += page[0]
				}
				ran.Add(1)
			})
			return nil
		}()
		p.Close()
		if r == nil || !isFault(r) {
			t.Fatalf("%d threads: Run's caller recovered %v, want a memory fault", threads, r)
		}
		if got := ran.Load(); threads > 1 && got != int32(n-1) {
			t.Fatalf("%d threads: %d items finished, want %d", threads, got, n-1)
		}
	}
}
