package pool

import "sync/atomic"

// A job's items are shared out as one contiguous range per thread, each
// thread claiming from the front of its own range; a thread whose range is
// empty steals the back half of another's and goes on from its front. So a
// thread walks consecutive stripes, whose tiles are consecutive in the file:
// the kernel's look-ahead, which runs past a stripe's last tile, lands in the
// thread's own next stripe instead of in the stripe another thread took
// (with one shared counter two threads alternate stripes, and each stripe
// starts cold). Which thread runs an item never changes its result (each
// item is computed whole, by one goroutine), so this is a schedule, not
// arithmetic.

// claimRange is one thread's unclaimed items [lo, hi), packed into one word
// (lo in the low 32 bits) so a claim or a steal is one compare-and-swap, on
// a cache line of its own.
type claimRange struct {
	w atomic.Uint64
	_ [56]byte
}

func pack(lo, hi uint32) uint64 { return uint64(hi)<<32 | uint64(lo) }

func unpack(w uint64) (lo, hi uint32) { return uint32(w), uint32(w >> 32) }

// share splits items 0..n−1 into threads contiguous ranges of (nearly)
// equal length.
func (j *Job) share(n, threads int) {
	threads = max(1, threads)
	if threads <= len(j.inline) {
		j.ranges = j.inline[:threads]
	} else {
		j.ranges = make([]claimRange, threads)
	}
	for t := range threads {
		j.ranges[t].w.Store(pack(uint32(t*n/threads), uint32((t+1)*n/threads)))
	}
}

// claim returns thread t's next item: the front of its own range, else the
// first item of the back half it steals from another thread (the rest of
// that half becomes its own range); ok is false when every range is empty.
func (j *Job) claim(t int) (i int, ok bool) {
	r := &j.ranges[t].w
	for {
		w := r.Load()
		lo, hi := unpack(w)
		if lo >= hi {
			return j.steal(t)
		}
		if r.CompareAndSwap(w, pack(lo+1, hi)) {
			return int(lo), true
		}
		// A thief cut our back half: look again.
	}
}

// steal cuts the back half [mid, hi) off the first non-empty range after
// thread t's, keeps mid+1..hi−1 as t's own range and returns mid; ok is
// false when every range is empty. Only a range's owner advances its front
// and only thieves cut its back, each with one compare-and-swap on the
// packed word; t's own range, being empty, is written by nobody else until
// t stores the stolen rest into it. So every item is claimed exactly once.
func (j *Job) steal(t int) (i int, ok bool) {
	n := len(j.ranges)
	for k := 1; k < n; k++ {
		r := &j.ranges[(t+k)%n].w
		for {
			w := r.Load()
			lo, hi := unpack(w)
			if lo >= hi {
				break
			}
			mid := lo + (hi-lo)/2
			if r.CompareAndSwap(w, pack(lo, mid)) {
				j.ranges[t].w.Store(pack(mid+1, hi))
				return int(mid), true
			}
		}
	}
	return 0, false
}
