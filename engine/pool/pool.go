// Package pool is the engine's persistent worker pool: a fixed set of
// goroutines that split the items of one parallel loop at a time (a
// matvec's output stripes, attention's heads) and, on a NUMA machine, one
// group of pinned workers per node behind a front that spreads a loop over
// the nodes. It lives apart from the decode arithmetic because its
// contract is a schedule, not a result: which worker runs an item never
// changes that item, each item being computed whole by one goroutine, so
// the engine's outputs are bit-identical for any thread count. Its workers
// spin briefly between jobs (decode posts ~110 loops per token, tens of
// microseconds apart) and forward a memory fault on mapped weights to the
// caller instead of crashing the process.
package pool

import (
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// spinRounds bounds how long an idle worker of an oversubscribed pool
// (fewer Ps than threads) polls, yielding its P every 16 polls, before
// parking.
const spinRounds = 2000

// spinFor bounds how long an idle worker with a P of its own polls for the
// next Job before parking. Decode issues ~110 matvecs and attention loops per
// token, separated by tens of microseconds of serial work (norms, RoPE,
// SwiGLU, activation quantization); polling through those gaps without
// Gosched (whose global run-queue lock and reschedule cost ~4% of a
// 2-thread decode) or a park/futex wake-up (an idle worker joins late)
// keeps both threads on the weight stream. Parking after 200µs keeps an
// idle engine from burning a core.
const spinFor = 200 * time.Microsecond

// lockedSpinRounds is a pinned NUMA worker's spin budget (it polls without
// yielding): long enough to span the caller's serial work between matvecs
// (norms, attention softmax, the reductions), a few tens of microseconds.
const lockedSpinRounds = 1 << 16

// Job is one posted parallel loop, returned by Post so a NUMA front can
// post to every node before waiting on any (Finish, then Raise). It is
// published by pointer so a late worker that still holds the previous Job
// can only observe exhausted ranges. pending and each range sit on their own cache lines: the waiting caller
// polls pending while the threads claim items from their ranges.
type Job struct {
	f       func(i int)
	_       [56]byte
	pending atomic.Int64
	_       [56]byte
	// fault is the first memory fault an item hit (a mapped file truncated
	// under the engine); the caller re-raises it after Finish.
	fault atomic.Pointer[any]
	// ranges holds each thread's share of the items (ranges.go), in
	// inline when two threads share the Job, so posting one allocates
	// nothing more than the Job.
	ranges []claimRange
	inline [2]claimRange
}

// work runs items as thread t until none are left, then retires them from
// pending in one atomic add (one per thread per Job, not one per item). An
// item that faults on mapped memory is recorded and retired, and work goes
// on with the next, so the caller never waits for an item that cannot
// finish.
func (j *Job) work(t int) {
	for j.workItems(t) {
	}
}

// workItems runs items until none are left (false) or one faults (true).
func (j *Job) workItems(t int) (faulted bool) {
	var done int64
	defer func() {
		if done > 0 {
			j.pending.Add(-done)
		}
	}()
	defer func() {
		if r := recover(); r != nil {
			if !isFault(r) {
				panic(r)
			}
			f := r // only a fault's value goes to the heap, not every call's
			j.fault.CompareAndSwap(nil, &f)
			done++
			faulted = true
		}
	}()
	for {
		i, ok := j.claim(t)
		if !ok {
			return false
		}
		j.f(i)
		done++
	}
}

// Raise re-panics a worker's memory fault in the caller's goroutine, where
// the engine turns it into an error naming the file; call it after Finish.
func (j *Job) Raise() {
	if f := j.fault.Load(); f != nil {
		panic(*f)
	}
}

// Pool is a persistent set of workers that split the items of one loop at a
// time (output stripes, attention heads). Which worker runs an item never
// changes the result: each item is computed whole, in a fixed order, by one
// goroutine, so outputs are bit-identical for any thread count. A Pool is
// driven by one goroutine at a time (its engine's caller).
type Pool struct {
	workers  int // goroutines besides the caller
	cur      atomic.Pointer[Job]
	sleepers atomic.Int32
	mu       sync.Mutex
	cond     *sync.Cond
	closed   atomic.Bool
	wg       sync.WaitGroup
	locked   bool // a NUMA group: workers are locked to pinned threads
	// ownP: GOMAXPROCS (at start) leaves a P for every worker and the
	// caller, so polling never keeps a runnable pool goroutine off a P
	// and the plain pool may spin without yielding.
	ownP bool
	// groups, when set, makes this pool a front over one pinned group per
	// NUMA node: run splits its items into contiguous runs, one per group
	// (attention heads land on the node holding their Q rows), and the
	// caller only coordinates. nil on the plain, single-node path.
	groups []*Pool
}

// New starts a plain pool of threads−1 workers; the caller of Run is the
// last thread, so threads ≤ 1 runs every loop on the caller alone.
func New(threads int) *Pool {
	p := &Pool{workers: max(0, threads-1)}
	p.ownP = runtime.GOMAXPROCS(0) > p.workers
	p.cond = sync.NewCond(&p.mu)
	for w := 0; w < p.workers; w++ {
		p.wg.Add(1)
		go p.loop(w)
	}
	return p
}

// loop is worker w's life: it runs its share of every posted Job as
// thread w (the caller of run, when it works, is thread p.workers).
func (p *Pool) loop(w int) {
	defer p.wg.Done()
	// A fault reading the mapping becomes a panic work recovers, not a
	// fatal SIGBUS; Raise hands it to the caller.
	debug.SetPanicOnFault(true)
	var last *Job
	for {
		j := p.wait(last)
		if j == nil {
			return
		}
		last = j
		j.work(w)
	}
}

// wait returns the first Job different from last, spinning briefly and then
// parking; nil means the pool was closed.
func (p *Pool) wait(last *Job) *Job {
	if !p.locked && p.ownP {
		if j, ok := p.poll(last); ok {
			return j
		}
		return p.park(last)
	}
	rounds := spinRounds
	if p.locked {
		rounds = lockedSpinRounds
	}
	for i := 0; i < rounds; i++ {
		if p.closed.Load() {
			return nil
		}
		if j := p.cur.Load(); j != last {
			return j
		}
		// A worker locked to its thread yields its CPU, not its P:
		// Gosched would hand the P to another thread and back (two futex
		// round trips), costing more than the matvecs it waits for, while
		// sched_yield lets a thread sharing the CPU (the caller) run.
		if i%16 == 15 {
			if p.locked {
				osYield()
			} else {
				runtime.Gosched()
			}
		}
	}
	return p.park(last)
}

// poll watches for a Job different from last for up to spinFor without
// yielding; ok is false when the budget ran out. The clock is read once
// per 256 polls, so polling stays a load and a compare.
func (p *Pool) poll(last *Job) (j *Job, ok bool) {
	var start time.Time
	for i := 0; ; i++ {
		if p.closed.Load() {
			return nil, true
		}
		if j := p.cur.Load(); j != last {
			return j, true
		}
		if i%256 == 255 {
			if start.IsZero() {
				start = time.Now()
			} else if time.Since(start) > spinFor {
				return nil, false
			}
		}
	}
}

// park sleeps on the condition variable until a Job different from last
// is posted (or the pool closes).
func (p *Pool) park(last *Job) *Job {
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

// Run calls f(0..n−1) across the pool and returns when all calls are done;
// a memory fault an item hit is re-raised in the caller (see Raise). On a
// front the items are split into one contiguous run per NUMA group.
func (p *Pool) Run(n int, f func(i int)) {
	if n <= 0 {
		return
	}
	if p.groups != nil {
		p.spread(n, f)
		return
	}
	if p.workers == 0 || n == 1 {
		for i := 0; i < n; i++ {
			f(i)
		}
		return
	}
	j := p.Post(n, f)
	j.work(p.workers)
	p.Finish(j)
	j.Raise()
}

// Post publishes f(0..n−1) to the workers and returns without waiting;
// Finish waits. A NUMA group's caller posts to every node before waiting
// on any, so the nodes run concurrently. Post is for groups: on a plain
// pool Run is the way in, the caller working a share itself.
func (p *Pool) Post(n int, f func(i int)) *Job {
	threads := p.workers
	if !p.locked {
		threads++ // the caller works too (run); a NUMA group's does not
	}
	j := &Job{f: f}
	j.share(n, threads)
	j.pending.Store(int64(n))
	p.cur.Store(j)
	if p.sleepers.Load() > 0 {
		p.mu.Lock()
		p.cond.Broadcast()
		p.mu.Unlock()
	}
	return j
}

// Finish spins (yielding) until every item of j is done. Waiting on a
// NUMA group, the caller yields its CPU: it may share it with the pinned
// worker it waits for.
func (p *Pool) Finish(j *Job) {
	// With a P per thread the worker still holding items is running, and
	// finishes within one item; yield only rarely.
	every := 16
	if !p.locked && p.ownP {
		every = 4096
	}
	for i := 0; j.pending.Load() > 0; i++ {
		if i%every == every-1 {
			if p.locked {
				osYield()
			} else {
				runtime.Gosched()
			}
		}
	}
}

// spread runs f(0..n−1) with group g taking items [g·n/G, (g+1)·n/G).
func (p *Pool) spread(n int, f func(i int)) {
	G := len(p.groups)
	jobs := make([]*Job, G)
	for g, gp := range p.groups {
		lo, hi := g*n/G, (g+1)*n/G
		if hi > lo {
			jobs[g] = gp.Post(hi-lo, func(i int) { f(lo + i) })
		}
	}
	for g, j := range jobs {
		if j != nil {
			p.groups[g].Finish(j)
		}
	}
	for _, j := range jobs {
		if j != nil {
			j.Raise()
		}
	}
}

// NewGroup starts a NUMA node's worker group: workers goroutines, each
// locked to its OS thread and pinned by pin before taking work (a nil pin
// leaves them unpinned). The caller never runs a group's items, so the
// group's threads are the only ones touching its node's shards. A worker
// never unlocks its thread: when it exits, Go retires the pinned thread
// instead of reusing it unpinned-looking for other goroutines.
func NewGroup(workers int, pin func() error) (*Pool, error) {
	p := &Pool{workers: workers, locked: true}
	p.cond = sync.NewCond(&p.mu)
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		p.wg.Add(1)
		go func() {
			runtime.LockOSThread()
			var err error
			if pin != nil {
				err = pin()
			}
			errs <- err
			if err != nil {
				p.wg.Done()
				return
			}
			p.loop(w)
		}()
	}
	var first error
	for w := 0; w < workers; w++ {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	if first != nil {
		p.Close()
		return nil, first
	}
	return p, nil
}

// NewFront makes the coordinator of a multi-node engine: it owns the
// groups (Close stops them), and Run spreads each loop over them while the
// caller only waits. Groups returns them for loops aimed at one node.
func NewFront(groups []*Pool) *Pool {
	p := &Pool{groups: groups}
	p.cond = sync.NewCond(&p.mu)
	return p
}

// Workers is the number of goroutines besides the caller: a plain pool's
// loop has Workers()+1 threads, so a loop wants at least that many items.
func (p *Pool) Workers() int { return p.workers }

// Groups is a front's per-node groups in node order (nil on a plain pool),
// for work that must run on one node's threads (placement, first touches)
// or be posted node by node.
func (p *Pool) Groups() []*Pool { return p.groups }

// Close stops the workers (and a front's groups); Run must not be called
// afterwards. Closing twice is harmless.
func (p *Pool) Close() {
	if p.closed.Swap(true) {
		return
	}
	p.mu.Lock()
	p.cond.Broadcast()
	p.mu.Unlock()
	p.wg.Wait()
	for _, g := range p.groups {
		g.Close()
	}
}

// isFault reports whether r, a value recovered from a panic, is a memory
// fault raised under debug.SetPanicOnFault (the runtime's error for it has
// the faulting address); the engine's fileio.IsFault answers the same.
// Anything else is a bug and is not caught.
func isFault(r any) bool {
	_, ok := r.(interface{ Addr() uintptr })
	return ok
}
