package engine

import (
	"errors"
	"fmt"

	"github.com/cflow-dev/cflow/archspec"
	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/engine/expertio"
)

// stagedJob is one routing whose experts are read into staging slots: what
// the expert computation needs wherever it runs — the layer, the selected
// experts and their softmax weights, and (when deferred) a copy of the
// router's normalized activation.
type stagedJob struct {
	lp    *layerPlan
	sel   []int
	w     []float32
	hn    []float32
	slots []*expertio.Slot
	// In a batch column: the routing the driver staged and, per selected
	// expert, its index there (expertio_batch.go).
	batch *stagedBatch
	at    []int
}

// stagedPlan is one expert's plans whose tiles (gu, dn) are rebound to the
// staging buffer each time the expert is read.
type stagedPlan struct {
	ep     *expertPlan
	gu, dn []cflowfmt.MappedTile
}

// routeStaged is moe's tail under expertio.Sync/Direct: it issues the
// selected experts' reads, then either computes them now into out (sync,
// or a style that injects in the routing layer) or leaves out zero and
// hands the job to enqueue, to be computed at the injection layer.
func (w *worker) routeStaged(lp *layerPlan, sel []int, wts []float64, sum float64, hn, out []float32) error {
	st := w.staged()
	if err := st.err; err != nil {
		st.err = nil
		return err
	}
	j := w.newStagedJob(&st.jobs, lp, sel, wts, sum)
	clear(out)
	// A lone token issues its reads now (stageNow); a batch column's go to
	// the driver, which issues every column's reads of this routing at
	// once (stageLanes), or never, when the batch was abandoned.
	w.req = request{stage: j}
	w.run.submit(w)
	w.req = request{}
	if j.batch == nil && len(j.slots) == 0 {
		st.jobs = append(st.jobs, j)
		return errBatchAbandoned
	}
	if w.xio.Mode() == expertio.Direct && w.h.CombineStyle.DefersExperts() {
		copy(j.hn, hn)
		st.staged = j
		return nil
	}
	err := w.computeStaged(j, out) // actD still holds hn from the router
	w.releaseJob(j)
	return err
}

// stageNow issues a lone token's reads of job j's selected experts, one
// staging slot each.
func (w *worker) stageNow(j *stagedJob) {
	ranges := w.m.Layers[j.lp.idx].Experts
	for _, ex := range j.sel {
		j.slots = append(j.slots, w.xio.Stage(ranges[ex]))
	}
}

// newStagedJob takes a job from free (the worker's list
// of finished jobs, so a token allocates none) or makes one, and records
// the routing: layer, selected experts and their normalised weights.
func (w *worker) newStagedJob(free *[]*stagedJob, lp *layerPlan, sel []int, wts []float64, sum float64) *stagedJob {
	var j *stagedJob
	if n := len(*free); n > 0 {
		j, *free = (*free)[n-1], (*free)[:n-1]
	} else {
		j = &stagedJob{hn: make([]float32, w.d)}
	}
	j.lp, j.sel, j.w = lp, append(j.sel[:0], sel...), j.w[:0]
	for i := range sel {
		j.w = append(j.w, float32(wts[i]/sum))
	}
	return j
}

// takeStaged hands enqueue the job routeStaged deferred, if any.
func (w *worker) takeStaged() *stagedJob {
	if w.xio == nil {
		return nil
	}
	st := w.staged()
	j := st.staged
	st.staged = nil
	return j
}

// finishStaged computes a deferred job into out at its injection layer,
// from the saved activation: the same kernels in the same order as the
// routing-layer path, so the sum is bit-identical. A failure is kept for
// the end of the token (inject cannot return it) and out stays zero.
func (w *worker) finishStaged(j *stagedJob, out []float32) {
	w.prepare(stMoE, w.bf.actD, j.hn)
	if err := w.computeStaged(j, out); err != nil {
		clear(out)
		if st := w.staged(); st.err == nil {
			st.err = err
		}
	}
	w.releaseJob(j)
}

// computeStaged awaits each expert's read, parses its tiles from the
// staging buffer and runs moe's expert loop with actD prepared.
func (w *worker) computeStaged(j *stagedJob, out []float32) error {
	b := &w.bf
	clear(out)
	var failed error
	for i, ex := range j.sel {
		var ep *expertPlan
		var err error
		if j.batch != nil {
			if ep, err = w.resolvedExpert(j, i); err != nil && err != errBatchAbandoned {
				// A batch column must keep making the requests the
				// others make (a deferred expert fails inside inject,
				// and the token goes on): it runs a stand-in expert of
				// the routing and discards the sum; the token fails.
				if failed == nil {
					failed = err
				}
				if ep, err = j.batch.standIn(), nil; ep == nil {
					return failed // no expert of the routing was read: every column stops here
				}
			}
		} else {
			ep, err = w.readyExpert(j.lp.idx, ex, j.slots[i])
		}
		if err != nil {
			return err
		}
		w.matvec(ep.gateUp, b.actD, b.eg, b.eu)
		w.glu(b.eg, b.eu)
		w.prepare(stMoE, b.actE, b.eg)
		w.matvec(ep.down, b.actE, b.eo)
		axpy(out, j.w[i], b.eo)
		w.stats.Last.Experts += ep.bytes
	}
	if failed != nil {
		clear(out)
	}
	return failed
}

// dropStaged releases a job whose token ended early (an error), waiting
// out any read still in flight on its slots.
func (w *worker) dropStaged(j *stagedJob) {
	if j != nil {
		w.releaseJob(j)
	}
}

// stagedErr returns (and clears) the token's staged failure.
func (w *worker) stagedErr() error {
	if w.xio == nil {
		return nil
	}
	st := w.staged()
	err := st.err
	st.err = nil
	return err
}

// readyExpert awaits s's read and parses expert ex of layer l from the
// staged bytes with the format's expert parser, returning its plans: built
// on first use and afterwards rebound to this slot's bytes.
func (e *Engine) readyExpert(l, ex int, s *expertio.Slot) (*expertPlan, error) {
	path := e.xio.Path()
	data, off, err := e.xio.Await(s)
	if err != nil {
		return nil, fmt.Errorf("runtime: layer %d expert %d: read %s at %d: %w", l, ex, path, off, err)
	}
	r := e.m.Layers[l].Experts[ex]
	if need := int(r.End() - off); len(data) < need {
		return nil, fmt.Errorf("runtime: layer %d expert %d: read %d of %d bytes at %d of %s", l, ex, len(data), need, off, path)
	}
	ts, err := cflowfmt.ParseExpert(data, cflowfmt.Range{Offset: r.Offset - off, Length: r.Length}, &e.h, l, ex)
	if err != nil {
		var fe *cflowfmt.FormatError
		if errors.As(err, &fe) {
			fe.Offset += off
			fe.File = path
		}
		return nil, err
	}
	for i := range ts {
		ts[i].Offset += off
	}
	key := l*int(e.h.NumExperts) + ex
	sp := e.xplans[key]
	if sp == nil {
		gu, dn := splitExpert(ts)
		ep, err := e.expertPlanOf(l, ex, gu, dn)
		if err != nil {
			return nil, err
		}
		e.xplans[key] = &stagedPlan{ep: ep, gu: gu, dn: dn}
		return ep, nil
	}
	var g, d int
	for i := range ts {
		dst := &sp.dn
		k := &d
		if ts[i].Matrix != archspec.MatExpertDown {
			dst, k = &sp.gu, &g
		}
		if *k >= len(*dst) || (*dst)[*k].TileHeader != ts[i].TileHeader || (*dst)[*k].Offset != ts[i].Offset {
			return nil, fmt.Errorf("runtime: layer %d expert %d: tile %d at %d differs from its first read", l, ex, i, ts[i].Offset)
		}
		(*dst)[*k].Tile = ts[i].Tile
		*k++
	}
	if g != len(sp.gu) || d != len(sp.dn) {
		return nil, fmt.Errorf("runtime: layer %d expert %d: %d tiles, first read had %d", l, ex, len(ts), len(sp.gu)+len(sp.dn))
	}
	return sp.ep, nil
}
