package runtime

import (
	goruntime "runtime"
	"sync"
	"sync/atomic"
)

// spinRounds bounds how long an idle worker polls for the next job before
// parking. Decode issues a few hundred small matvecs per token, microseconds
// apart, so a short spin avoids a futex wake per matvec; parking afterwards
// keeps an idle engine from burning a core.
const spinRounds = 2000

// job is one parallel loop. It is published by pointer so a late worker that
// still holds the previous job can only observe an exhausted counter.
type job struct {
	f       func(i int)
	n       int64
	next    atomic.Int64
	pending atomic.Int64
}

func (j *job) work() {
	for {
		i := j.next.Add(1) - 1
		if i >= j.n {
			return
		}
		j.f(int(i))
		j.pending.Add(-1)
	}
}

// pool is a persistent set of workers that split the items of one loop at a
// time (output stripes, attention heads). Which worker runs an item never
// changes the result: each item is computed whole, in a fixed order, by one
// goroutine, so outputs are bit-identical for any thread count.
type pool struct {
	workers  int // goroutines besides the caller
	cur      atomic.Pointer[job]
	sleepers atomic.Int32
	mu       sync.Mutex
	cond     *sync.Cond
	closed   atomic.Bool
	wg       sync.WaitGroup
}

// newPool starts threads−1 workers; the caller of run is the last thread.
func newPool(threads int) *pool {
	p := &pool{workers: max(0, threads-1)}
	p.cond = sync.NewCond(&p.mu)
	for w := 0; w < p.workers; w++ {
		p.wg.Add(1)
		go p.loop()
	}
	return p
}

func (p *pool) loop() {
	defer p.wg.Done()
	var last *job
	for {
		j := p.wait(last)
		if j == nil {
			return
		}
		last = j
		j.work()
	}
}

// wait returns the first job different from last, spinning briefly and then
// parking; nil means the pool was closed.
func (p *pool) wait(last *job) *job {
	for i := 0; i < spinRounds; i++ {
		if p.closed.Load() {
			return nil
		}
		if j := p.cur.Load(); j != last {
			return j
		}
		if i%16 == 15 {
			goruntime.Gosched()
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sleepers.Add(1)
	defer p.sleepers.Add(-1)
	for {
		if p.closed.Load() {
			return nil
		}
		if j := p.cur.Load(); j != last {
			return j
		}
		p.cond.Wait()
	}
}

// run calls f(0..n−1) across the pool and returns when all calls are done.
func (p *pool) run(n int, f func(i int)) {
	if n <= 0 {
		return
	}
	if p.workers == 0 || n == 1 {
		for i := 0; i < n; i++ {
			f(i)
		}
		return
	}
	j := &job{f: f, n: int64(n)}
	j.pending.Store(int64(n))
	p.cur.Store(j)
	if p.sleepers.Load() > 0 {
		p.mu.Lock()
		p.cond.Broadcast()
		p.mu.Unlock()
	}
	j.work()
	for i := 0; j.pending.Load() > 0; i++ {
		if i%16 == 15 {
			goruntime.Gosched()
		}
	}
}

// close stops the workers; run must not be called afterwards.
func (p *pool) close() {
	if p.closed.Swap(true) {
		return
	}
	p.mu.Lock()
	p.cond.Broadcast()
	p.mu.Unlock()
	p.wg.Wait()
}
