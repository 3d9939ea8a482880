package engine

import (
	"fmt"
	"iter"
	"runtime/debug"
	"sync"
	"sync/atomic"
)

// MaxBatch is the most token columns one pass over the weights serves: a
// longer prompt is fed in consecutive batches of MaxBatch. Each tile is
// read from memory once per batch and applied to every column while it is
// in cache, so a batch of B columns reads the weights once instead of B
// times. 64 columns of activations stay in L2 beside the tile.
const MaxBatch = 64

// A batch runs one token forward per column, layer-major: every column
// walks the same plan (runPlan, the combine styles, attention, FFN, MoE —
// the single-token code, unchanged) as a coroutine, and each weight read
// (a matvec) or parallel loop (attention heads) it reaches is handed to
// the driver instead of being run. When every column waits, the driver
// runs the columns' matvecs of one plan as one walk over its stripes —
// each tile applied to all columns waiting on it, in the same tile order
// as a lone token, so every column's sums are bit-identical to Step's —
// and the columns' attention heads as one parallel loop, then resumes
// them. The delays of the pipeline-native styles are layer offsets inside
// one token's forward (the ring and expert queue live in the column's
// state), so this layer-major order is valid for every architecture.
//
// Columns of one sequence (a prefill) share its KV cache, each storing at
// its own position; columns of different sequences (continuous batching)
// each use their sequence's cache. Attention is causal because every
// column stores its keys before any column's heads run: all columns reach
// the same requests in the same order (lockstep), which the driver checks.

// request is what a column waits on: a matvec (p set), a staged routing's
// reads to issue (stage) or to await (resolve), or a parallel loop.
type request struct {
	p    *matPlan
	a    *actVec
	outs [][]float32
	n    int
	f    func(i int)
	// groups > 1: the loop's items form that many equal runs that read
	// the same data in every column (the query heads of one KV head).
	groups int
	// stage, resolve: a staged expert routing (expertio_batch.go).
	stage, resolve *stagedJob
}

// Request kinds: every live column must wait on the same kind.
const (
	reqLoop = iota
	reqMatvec
	reqStage
	reqResolve
)

func (r *request) kind() int {
	switch {
	case r.p != nil:
		return reqMatvec
	case r.stage != nil:
		return reqStage
	case r.resolve != nil:
		return reqResolve
	}
	return reqLoop
}

// lane is one column of a batched pass: a worker of its own (scratch,
// token state, observation, counters) over the engine's weights, plans
// and pool, run as a coroutine whose requests go to the batch driver.
type lane struct {
	w     *worker
	tok   int
	want  bool // compute the LM head for this column
	out   []float32
	err   error
	yield func(struct{}) bool
	next  func() (struct{}, bool)
	stop  func()
	live  bool
}

// newLane returns a column of e.
func (e *Engine) newLane() *lane {
	ln := &lane{}
	ln.w = e.newWorker(ln, 1)
	return ln
}

// submit hands the column's pending request to the driver and returns
// once the driver has run it.
func (ln *lane) submit(*worker) { ln.yield(struct{}{}) }

// parallel runs f(0..n−1) through the worker's runner: on the pool for a
// lone token, in one pool job with every column's loop for a batch column.
// The items form groups equal runs that read the same data (1: none), so
// the driver can run one group of every column before the next group.
func (w *worker) parallel(n, groups int, f func(i int)) {
	w.req = request{n: n, f: f, groups: groups}
	w.run.submit(w)
}

// runLanes drives ls (columns set up, coroutines not started) to the end
// of their tokens.
func (e *Engine) runLanes(ls []*lane) {
	for _, ln := range ls {
		// Columns of one sequence share its cache and run concurrently
		// (resumeLanes): its blocks are allocated here, so their stores
		// only write.
		s := &ln.w.tok
		for p := range s.kv {
			s.kv[p].reserve(s.pos)
		}
		ln.w.req = request{}
		ln.next, ln.stop = iter.Pull(func(yield func(struct{}) bool) {
			// The column reads the mapped embedding: a truncated file
			// faults here as in a lone forward (see Engine.Forward).
			defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
			ln.yield = yield
			ln.out, ln.err = ln.w.forward(ln.tok, ln.want)
		})
	}
	live := e.resumeLanes(ls, make([]*lane, 0, len(ls)))
	var groups [][]*lane
	for len(live) > 0 {
		kind := live[0].w.req.kind()
		groups = groups[:0]
		for _, ln := range live {
			if ln.w.req.kind() != kind {
				panic("runtime: batch columns out of step (waiting on different kinds of request)")
			}
			if kind != reqMatvec {
				continue
			}
			i := 0
			for i < len(groups) && groups[i][0].w.req.p != ln.w.req.p {
				i++
			}
			if i == len(groups) {
				groups = append(groups, nil)
			}
			groups[i] = append(groups[i], ln)
		}
		switch kind {
		case reqLoop:
			e.parallelLanes(live)
		case reqStage:
			e.stageLanes(live)
		case reqResolve:
			e.resolveLanes(live)
		}
		for _, g := range groups {
			e.matvecLanes(g[0].w.req.p, g)
		}
		live = e.resumeLanes(live, live[:0])
		e.sweepStaged(nil, false)
	}
	e.sweepStaged(ls, true)
}

// resumeLanes runs every column in ls on to its next request (or its end)
// and appends the columns still live to dst. The columns' own work between
// requests — norms, RoPE, SwiGLU, residual adds, activation preparation —
// runs across the pool, one column per item: a column touches only its
// lane's scratch and its own positions of the KV cache (reserved by the
// runLanes), so the columns are independent and each computes what it would
// alone.
func (e *Engine) resumeLanes(ls, dst []*lane) []*lane {
	if e.pool.Groups() != nil {
		e.resumeUnlocked(ls)
	} else {
		e.pool.Run(len(ls), func(i int) {
			_, ls[i].live = ls[i].next()
		})
	}
	for _, ln := range ls {
		if ln.live {
			dst = append(dst, ln)
		}
	}
	return dst
}

// resumeUnlocked is resumeLanes on a multi-node engine, whose workers are
// locked to their pinned threads: Go cannot switch into a coroutine from a
// locked thread, so the columns are resumed from plain goroutines, one per
// node worker, and a panic in a column (a fault on the mapped weights) is
// raised again in the driver's goroutine, as the pool raises its workers'.
func (e *Engine) resumeUnlocked(ls []*lane) {
	workers := 0
	for _, g := range e.pool.Groups() {
		workers += g.Workers()
	}
	var (
		wg     sync.WaitGroup
		next   atomic.Int64
		failed atomic.Pointer[any]
	)
	for range min(max(workers, 1), len(ls)) {
		wg.Go(func() {
			defer func() {
				if r := recover(); r != nil {
					failed.CompareAndSwap(nil, &r)
				}
			}()
			for i := int(next.Add(1) - 1); i < len(ls); i = int(next.Add(1) - 1) {
				_, ls[i].live = ls[i].next()
			}
		})
	}
	wg.Wait()
	if r := failed.Load(); r != nil {
		panic(*r)
	}
}

// abandonLanes ends every column still suspended (after a fault in the
// driver): each runs to its end without the driver, computing nothing that
// is kept.
func (e *Engine) abandonLanes() {
	for _, ln := range e.lanes {
		if ln.stop != nil {
			ln.stop()
		}
	}
	e.sweepStaged(e.lanes, true)
}

// parallelLanes runs every column's parallel loop as one pool job. When
// every column's loop has the same items in the same groups (attention
// heads, grouped by KV head), the job runs group-major: all columns' items
// of one group, then the next group's, so the data a group reads (that KV
// head's cached keys and values, shared by the columns of one sequence)
// stays in cache across columns instead of every column streaming all
// KV heads.
func (e *Engine) parallelLanes(ls []*lane) {
	total := 0
	for _, ln := range ls {
		total += ln.w.req.n
	}
	if len(ls) == 1 {
		e.pool.Run(total, ls[0].w.req.f)
		return
	}
	if n, g := ls[0].w.req.n, ls[0].w.req.groups; g > 1 && n%g == 0 && total == n*len(ls) && sameGroups(ls) {
		per, B := n/g, len(ls)
		e.pool.Run(total, func(i int) {
			grp, r := i/(B*per), i%(B*per)
			ls[r/per].w.req.f(grp*per + r%per)
		})
		return
	}
	e.pool.Run(total, func(i int) {
		for _, ln := range ls {
			if i < ln.w.req.n {
				ln.w.req.f(i)
				return
			}
			i -= ln.w.req.n
		}
	})
}

// batchErr is an error of one column of a StepBatch or one feed of a StepFeeds.
type batchErr struct {
	i   int
	err error
}

func (b *batchErr) Error() string { return fmt.Sprintf("batch column %d: %v", b.i, b.err) }
func (b *batchErr) Unwrap() error { return b.err }

// sameGroups reports whether every column's loop has column 0's item count
// and groups.
func sameGroups(ls []*lane) bool {
	for _, ln := range ls {
		if ln.w.req.n != ls[0].w.req.n || ln.w.req.groups != ls[0].w.req.groups {
			return false
		}
	}
	return true
}
