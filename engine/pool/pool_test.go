package pool

import (
	"sync/atomic"
	"testing"
)

// TestRunEveryItemOnce runs loops of many sizes on plain pools of 1–4
// threads, back to back (so workers see a new job while others still hold
// the last one): every item runs exactly once and Run returns only after
// all have.
func TestRunEveryItemOnce(t *testing.T) {
	for threads := 1; threads <= 4; threads++ {
		p := New(threads)
		if p.Workers() != threads-1 {
			t.Fatalf("New(%d) has %d workers", threads, p.Workers())
		}
		for rep := 0; rep < 50; rep++ {
			for _, n := range []int{0, 1, 2, 5, 64, 301} {
				counts := make([]atomic.Int32, n)
				p.Run(n, func(i int) { counts[i].Add(1) })
				for i := range counts {
					if c := counts[i].Load(); c != 1 {
						t.Fatalf("%d threads, %d items: item %d ran %d times", threads, n, i, c)
					}
				}
			}
		}
		p.Close()
		p.Close() // twice is harmless
	}
}

// TestGroupPinErrorStopsGroup: a worker that cannot be pinned fails
// NewGroup with its error and leaves no worker running.
func TestGroupPinErrorStopsGroup(t *testing.T) {
	want := errPin{}
	var calls atomic.Int32
	_, err := NewGroup(3, func() error {
		if calls.Add(1) == 2 {
			return want
		}
		return nil
	})
	if err != want {
		t.Fatalf("NewGroup: %v, want %v", err, want)
	}
}

type errPin struct{}

func (errPin) Error() string { return "pin refused" }
