package pool

import (
	"slices"
	"sync"
	"sync/atomic"
	"testing"
)

// TestRangesClaimEveryItemOnce runs jobs of many sizes on 1–5 threads that
// start at staggered moments (so some threads find their range already
// stolen), many times over: every item must run exactly once.
func TestRangesClaimEveryItemOnce(t *testing.T) {
	for threads := 1; threads <= 5; threads++ {
		for _, n := range []int{1, 2, 3, 7, 64, 250, 1000} {
			for rep := 0; rep < 20; rep++ {
				counts := make([]atomic.Int32, n)
				j := &Job{f: func(i int) { counts[i].Add(1) }}
				j.share(n, threads)
				j.pending.Store(int64(n))
				var wg sync.WaitGroup
				for th := range threads {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for range th * rep % 7 * 50 {
							_ = j.pending.Load() // start late, by varying amounts
						}
						j.work(th)
					}()
				}
				wg.Wait()
				for i := range counts {
					if c := counts[i].Load(); c != 1 {
						t.Fatalf("%d threads, %d items: item %d ran %d times", threads, n, i, c)
					}
				}
				if p := j.pending.Load(); p != 0 {
					t.Fatalf("%d threads, %d items: %d still pending", threads, n, p)
				}
			}
		}
	}
}

// TestRangesSchedule pins the schedule a lone thread follows: its own range
// front to back, then the back half of the next thread's range, front to
// back, then the back half of what is left, and so on. A thread's items are
// runs of consecutive stripes, which is what keeps its weight stream
// contiguous.
func TestRangesSchedule(t *testing.T) {
	var order []int
	j := &Job{f: func(i int) { order = append(order, i) }}
	j.share(10, 2)
	j.pending.Store(10)
	j.work(0)
	// Thread 0 owns 0..4; thread 1 owns 5..9 and never runs.
	if want := []int{0, 1, 2, 3, 4, 7, 8, 9, 6, 5}; !slices.Equal(order, want) {
		t.Fatalf("lone thread 0 ran %v, want %v", order, want)
	}
	order = nil
	j = &Job{f: func(i int) { order = append(order, i) }}
	j.share(10, 3)
	j.pending.Store(10)
	j.work(2)
	// Thread 2 owns 6..9, then steals from thread 0 (0..2) first, then 1 (3..5).
	if want := []int{6, 7, 8, 9, 1, 2, 0, 4, 5, 3}; !slices.Equal(order, want) {
		t.Fatalf("lone thread 2 of 3 ran %v, want %v", order, want)
	}
}
