package bench

import (
	"runtime"
	"slices"
	"sync"
	"time"
	"unsafe"
)

// ProbeBytes is the default probe buffer: 1 GiB, far larger than any
// last-level cache here, so every pass streams from DRAM as decode does.
const ProbeBytes = 1 << 30

// Probe is the result of a read-bandwidth measurement.
type Probe struct {
	Bytes   int64     // buffer size
	Threads int       // goroutines reading in parallel
	GBs     []float64 // every timed pass, in order (GB = 1e9 bytes)
	Median  float64   // median of GBs: the roofline decode is judged by
}

// ReadBandwidth measures how fast `threads` goroutines, each locked to its
// own OS thread, can read a buffer of size bytes (STREAM-like: a sum of
// uint64 over a contiguous share each), after one untimed pass that faults
// the pages in. The buffer sits on transparent huge pages where the kernel
// allows, as a mapped model file does. It reports every pass and their
// median. The buffer is released before it returns.
func ReadBandwidth(size int64, threads, passes int) Probe {
	r := newReader(size, threads)
	defer r.close()
	for range max(1, passes) {
		r.pass()
	}
	return r.probe()
}

// reader is ReadBandwidth's buffer kept between timed passes, so Run can
// take its passes between decode runs: other tenants' memory traffic then
// weighs on the probe and on decode alike.
type reader struct {
	buf     []uint64
	release func()
	p       Probe
	total   uint64
}

// newReader allocates and fills the probe buffer and reads it once,
// untimed, to fault the pages in.
func newReader(size int64, threads int) *reader {
	threads = max(1, threads)
	// On huge pages where the kernel allows, as the model's mapping is: a
	// probe on 4 KiB pages reads slower than the engine can (hugeBytes).
	raw, release := hugeBytes(int(size / 8 * 8))
	buf := unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(raw))), len(raw)/8)
	for i := range buf {
		buf[i] = uint64(i)
	}
	r := &reader{buf: buf, release: release, p: Probe{Bytes: int64(len(buf)) * 8, Threads: threads}}
	r.total = readAll(buf, threads)
	return r
}

// pass times one read of the whole buffer and records its GB/s.
func (r *reader) pass() {
	t0 := time.Now()
	r.total += readAll(r.buf, r.p.Threads)
	r.p.GBs = append(r.p.GBs, float64(r.p.Bytes)/time.Since(t0).Seconds()/1e9)
}

// probe is every pass so far and their median.
func (r *reader) probe() Probe {
	p := r.p
	p.GBs = slices.Clone(p.GBs)
	p.Median = median(p.GBs)
	return p
}

// close releases the buffer.
func (r *reader) close() {
	// The sums must stay alive so the compiler cannot drop the reads.
	runtime.KeepAlive(r.total)
	r.release()
}

// readAll sums buf with `threads` goroutines over contiguous shares and
// returns the total (tests compare it with a plain loop).
func readAll(buf []uint64, threads int) uint64 {
	sums := make([]uint64, threads*8) // one cache line apart
	var wg sync.WaitGroup
	n := len(buf)
	for t := range threads {
		lo, hi := n*t/threads, n*(t+1)/threads
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			sums[t*8] = sum(buf[lo:hi])
		}()
	}
	wg.Wait()
	var total uint64
	for t := range threads {
		total += sums[t*8]
	}
	return total
}

// sum adds a slice: the SIMD path where the CPU has one (sumFast returns
// how many leading elements it covered), eight scalar accumulators for the
// rest. A scalar loop alone tops out near DRAM speed on one core, which
// would make the probe measure the adder instead of memory.
func sum(b []uint64) uint64 {
	done, s := sumFast(b)
	return s + sumScalar(b[done:])
}

// sumScalar adds with eight independent accumulators, so the loop is bound
// by loads, not by one add chain.
func sumScalar(b []uint64) uint64 {
	var s0, s1, s2, s3, s4, s5, s6, s7 uint64
	i := 0
	for ; i+8 <= len(b); i += 8 {
		c := b[i : i+8 : i+8]
		s0 += c[0]
		s1 += c[1]
		s2 += c[2]
		s3 += c[3]
		s4 += c[4]
		s5 += c[5]
		s6 += c[6]
		s7 += c[7]
	}
	for ; i < len(b); i++ {
		s0 += b[i]
	}
	return s0 + s1 + s2 + s3 + s4 + s5 + s6 + s7
}

// median of xs (the mean of the middle two for an even count); 0 if empty.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
