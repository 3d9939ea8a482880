package engine

import (
	"errors"
	"sync/atomic"

	"github.com/cflow-dev/cflow/engine/expertio"
)

// Staged expert I/O in a batch (batch.go): every column routes on its own,
// then hands its selection to the driver (a stage request). The driver
// reads the union of the experts the batch's columns selected in that
// routing — each expert once per batch, not once per column — into one
// staging slot each. When the columns reach the expert computation (at
// once, or at the injection layer under expertio.Direct with a deferring
// style) they ask the driver to resolve the routing (a resolve request):
// it awaits the reads and parses each expert's tiles from its slot once.
// The columns then run the single-token expert loop unchanged — their
// expert matvecs go to the driver like any other, grouped by the expert's
// plan — and sum the experts' outputs in their own selection order, so
// each column computes exactly what it computes alone. The tier is the
// driver's: columns run concurrently between requests and touch only
// their own jobs; the driver returns a routing's slots once every column
// has finished (or dropped) its job.

// stagedBatch is one routing of a batch: the union of the columns'
// selected experts, in first-selection order, and their slots.
type stagedBatch struct {
	layer    int
	experts  []int
	slots    []*expertio.Slot
	eps      []*expertPlan
	errs     []error
	resolved bool
	// users counts the columns' jobs on this routing not yet finished or
	// dropped (columns decrement it concurrently; the driver reads it).
	users atomic.Int32
}

// stagedState is one decoder's share of the staged tier: its finished
// jobs (reused, so a token allocates none), the routing it deferred to the
// injection layer and the token's first staged failure. Each worker (the
// lone one, every batch column's) keeps its own, so the columns share
// none of it.
type stagedState struct {
	jobs   []*stagedJob
	staged *stagedJob // the last deferred routing, taken by enqueue
	err    error      // first staged failure of this token
}

// staged is the worker's stagedState.
func (w *worker) staged() *stagedState { return &w.xs }

// errBatchAbandoned is what a column sees when its request was never run
// (the batch was abandoned after a fault); nothing it computes is kept.
var errBatchAbandoned = errors.New("runtime: batch abandoned")

// releaseJob ends a job: the slots a lone token's job holds go back to
// the tier; a column's job leaves its routing (whose slots the driver
// returns once no column uses them).
func (w *worker) releaseJob(j *stagedJob) {
	for _, s := range j.slots {
		w.xio.Put(s)
	}
	j.slots = j.slots[:0]
	if j.batch != nil {
		j.batch.users.Add(-1)
		j.batch = nil
	}
	w.xs.jobs = append(w.xs.jobs, j)
}

// resolvedExpert returns selected expert i of a column's job, awaiting the
// routing's reads through the driver on the first call.
func (w *worker) resolvedExpert(j *stagedJob, i int) (*expertPlan, error) {
	b := j.batch
	if !b.resolved {
		w.req = request{resolve: j}
		w.run.submit(w)
		w.req = request{}
		if !b.resolved {
			return nil, errBatchAbandoned
		}
	}
	k := j.at[i]
	return b.eps[k], b.errs[k]
}

// stageLanes runs the columns' stage requests (one routing, the same layer
// in every column): it issues one read per distinct selected expert.
func (e *Engine) stageLanes(ls []*lane) {
	x := e.xio
	b := &stagedBatch{layer: ls[0].w.req.stage.lp.idx}
	ranges := e.m.Layers[b.layer].Experts
	for _, ln := range ls {
		j := ln.w.req.stage
		if j.lp.idx != b.layer {
			panic("runtime: batch columns out of step (routing different layers)")
		}
		j.at = j.at[:0]
		for _, ex := range j.sel {
			k := 0
			for k < len(b.experts) && b.experts[k] != ex {
				k++
			}
			if k == len(b.experts) {
				b.experts = append(b.experts, ex)
				b.slots = append(b.slots, x.Stage(ranges[ex]))
			}
			j.at = append(j.at, k)
		}
		j.batch = b
		b.users.Add(1)
	}
	b.eps = make([]*expertPlan, len(b.experts))
	b.errs = make([]error, len(b.experts))
	e.xbatches = append(e.xbatches, b)
}

// resolveLanes runs the columns' resolve requests: it awaits each routing's
// reads once and parses every expert from its slot.
func (e *Engine) resolveLanes(ls []*lane) {
	for _, ln := range ls {
		b := ln.w.req.resolve.batch
		if b.resolved {
			continue
		}
		for k, ex := range b.experts {
			b.eps[k], b.errs[k] = e.readyExpert(b.layer, ex, b.slots[k])
		}
		b.resolved = true
	}
}

// sweepStaged returns the slots of every routing no column still uses;
// with all set (the batch is over, or abandoned) it first drops whatever
// jobs the columns of ls still hold (a token that failed with experts
// queued) and returns every routing's slots.
func (e *Engine) sweepStaged(ls []*lane, all bool) {
	if e.xio == nil {
		return
	}
	if all {
		for _, ln := range ls {
			v := ln.w
			for i := range v.tok.queue {
				if q := &v.tok.queue[i]; q.job != nil {
					v.releaseJob(q.job)
					q.job = nil
				}
			}
			if j := v.xs.staged; j != nil {
				v.releaseJob(j)
				v.xs.staged = nil
			}
			v.xs.err = nil
		}
	}
	keep := e.xbatches[:0]
	for _, b := range e.xbatches {
		if !all && b.users.Load() > 0 {
			keep = append(keep, b)
			continue
		}
		for _, s := range b.slots {
			e.xio.Put(s)
		}
	}
	clear(e.xbatches[len(keep):])
	e.xbatches = keep
}

// standIn is an expert of the routing that was read and parsed, for a
// column whose own expert failed to compute in step with the others; nil
// when none was.
func (b *stagedBatch) standIn() *expertPlan {
	for _, ep := range b.eps {
		if ep != nil {
			return ep
		}
	}
	return nil
}
