package runtime

import (
	"fmt"
	"math"
	"sort"

	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/runtime/plan"
)

// Step feeds token tok at position Pos() and returns the logits for the
// next position. The slice is reused by the next Step. Going past
// Header.MaxSeqLen returns ErrContextFull; any error leaves the engine as
// it was before the call.
func (e *Engine) Step(tok int) ([]float32, error) {
	if tok < 0 || tok >= int(e.h.VocabSize) {
		return nil, fmt.Errorf("runtime: token %d outside the vocabulary 0..%d", tok, e.h.VocabSize-1)
	}
	if e.pos >= int(e.h.MaxSeqLen) {
		return nil, fmt.Errorf("%w: the model's KV cache holds %d positions", ErrContextFull, e.h.MaxSeqLen)
	}
	e.stats.Last = StreamBytes{}
	e.embedRow(tok, e.st.x)
	if err := e.runPlan(); err != nil {
		for p := range e.kv {
			c := &e.kv[p]
			c.k, c.v = c.k[:e.pos*c.dim], c.v[:e.pos*c.dim]
		}
		return nil, err
	}
	x := e.st.x
	e.obs.PreLMHeadNorm = norm2(x)
	b := &e.bf
	rmsNorm(b.xn, x, e.m.FinalNorm, e.eps)
	b.actD.set(b.xn)
	e.matvec(e.lm, b.actD, b.logits)
	e.stats.Last.LMHead += e.lm.bytes
	if c := e.h.FinalLogitSoftcap; c > 0 {
		for i, z := range b.logits {
			b.logits[i] = float32(math.Tanh(float64(z/c))) * c
		}
	}
	e.pos++
	e.stats.Tokens++
	l, t := &e.stats.Last, &e.stats.Total
	t.Attn += l.Attn
	t.Dense += l.Dense
	t.Router += l.Router
	t.Experts += l.Experts
	t.Embed += l.Embed
	t.LMHead += l.LMHead
	return b.logits, nil
}

// embedRow dequantizes row tok of the embedding into x (one row from each
// column tile of the stripe that holds it) and applies the embedding scale.
func (e *Engine) embedRow(tok int, x []float32) {
	i := sort.Search(len(e.embed), func(i int) bool { return e.embed[i].row+e.embed[i].rows > tok })
	s := &e.embed[i]
	for _, t := range s.tiles {
		r := tok - int(t.RowOffset)
		if r < 0 || r >= t.Tile.Rows {
			continue
		}
		if e.readHook != nil {
			e.readHook(t.Offset, t.Matrix)
		}
		t.DequantRow(r, x[t.ColOffset:])
		e.stats.Last.Embed += int64(t.Type.ScaleBytes(1, t.Tile.Cols) + t.Type.DataBytes(1, t.Tile.Cols))
	}
	if e.h.Has(cflowfmt.FlagEmbedScale) {
		s := sqrtf(float32(e.d))
		for i := range x {
			x[i] *= s
		}
	}
}

// runPlan executes the plan's steps for one token, leaving the final
// residual (before the final norm) in e.st.x.
func (e *Engine) runPlan() error {
	st, style := &e.st, e.h.CombineStyle
	L, de := int(e.h.NumLayers), int(e.h.ExpertDelay)
	for _, q := range st.queue {
		e.dropStaged(q.job) // left by a token that failed
		st.free = append(st.free, q.v)
	}
	st.queue, st.open = st.queue[:0], -1
	copy(st.sA, st.x) // arch1's attention stream / arch3's attn_reg
	copy(st.sF, st.x) // arch1's FFN stream
	for _, s := range e.steps {
		lp := e.layers[s.Layer]
		switch s.Stream {
		case plan.Attn:
			e.closePass()
			e.beginPass(s.Pass, lp)
		case plan.Dense:
			if style == cflowfmt.DelayedSum {
				// f(ℓ+δd) reads x_out(ℓ): combine layer ℓ first.
				slot := st.ring[s.Layer%e.ring]
				if s.ZeroInput {
					clear(slot)
					continue
				}
				e.closePass()
				rmsNorm(e.bf.hn, st.x, lp.ffnNorm, e.eps)
				e.ffn(lp, e.bf.hn, slot)
				continue
			}
			e.ffn(lp, e.ffnInput(lp), st.f)
			st.hasF = true
		case plan.MoE:
			in := e.bf.hn
			if style == cflowfmt.DelayedSum {
				rmsNorm(in, st.xmid, lp.moeNorm, e.eps)
			} else {
				in = e.ffnInput(lp)
			}
			if err := e.moe(s.Pass, lp, in, st.e); err != nil {
				return err
			}
			switch style {
			case cflowfmt.DelayedSum:
				e.enqueue(min(s.Pass+de, L-1), st.e)
			case cflowfmt.AsyncExperts:
				e.enqueue(s.Pass+de, st.e)
			default:
				st.hasE = true
			}
		}
	}
	e.closePass()
	switch style {
	case cflowfmt.DecoupledStreams:
		for i := range st.x {
			st.x[i] = (st.sA[i] + st.sF[i]) / 2
		}
	default:
		// AsyncExperts: outputs targeted past the last layer join the final
		// residual before the final norm.
		e.inject(math.MaxInt)
	}
	return e.stagedErr()
}

// enqueue copies v into the expert queue for target layer t.
func (e *Engine) enqueue(t int, v []float32) {
	st := &e.st
	var buf []float32
	if n := len(st.free); n > 0 {
		buf, st.free = st.free[n-1], st.free[:n-1]
	} else {
		buf = make([]float32, e.d)
	}
	copy(buf, v)
	st.queue = append(st.queue, queued{target: t, v: buf, job: e.takeStaged()})
}

// inject adds every queued output whose target is ≤ t to the residual, in
// the order they were queued, and drops them from the queue.
func (e *Engine) inject(t int) {
	st := &e.st
	keep := st.queue[:0]
	for _, q := range st.queue {
		if q.target <= t {
			if q.job != nil {
				e.finishStaged(q.job, q.v)
			}
			addTo(st.x, q.v)
			st.free = append(st.free, q.v)
		} else {
			keep = append(keep, q)
		}
	}
	st.queue = keep
}

// ffnInput is the normalized input the dense FFN and MoE of this pass
// share, computed once per pass.
func (e *Engine) ffnInput(lp *layerPlan) []float32 {
	st := &e.st
	if st.hasH {
		return st.h
	}
	var src []float32
	switch e.h.CombineStyle {
	case cflowfmt.AsyncExperts, cflowfmt.PipelineRegisters:
		src = st.x // x_in(ℓ) / xfm_reg(ℓ−1)
	case cflowfmt.DecoupledStreams:
		src = st.sF
	default:
		src = st.xmid
	}
	rmsNorm(st.h, src, lp.ffnNorm, e.eps)
	st.hasH = true
	return st.h
}

// beginPass runs a pass's attention on the value its combine style feeds
// it.
func (e *Engine) beginPass(pass int, lp *layerPlan) {
	st := &e.st
	st.open, st.hasF, st.hasE, st.hasH = pass, false, false, false
	switch e.h.CombineStyle {
	case cflowfmt.AsyncExperts:
		e.inject(pass)
		e.attention(pass, lp, st.x, st.m)
	case cflowfmt.DecoupledStreams, cflowfmt.PipelineRegisters:
		e.attention(pass, lp, st.sA, st.m)
	default:
		e.attention(pass, lp, st.x, st.m)
		for i := range st.xmid {
			st.xmid[i] = st.x[i] + st.m[i]
		}
	}
}

// closePass combines the open pass's outputs into x_out by combine style
// and records ‖x_out‖₂.
func (e *Engine) closePass() {
	st := &e.st
	p := st.open
	if p < 0 {
		return
	}
	st.open = -1
	x := st.x
	switch e.h.CombineStyle {
	case cflowfmt.DelayedSum:
		copy(x, st.xmid)
		if e.h.IntermediateSize > 0 {
			addTo(x, st.ring[p%e.ring])
		}
		e.inject(p)
	case cflowfmt.PreNorm:
		copy(x, st.xmid)
		if st.hasF {
			addTo(x, st.f)
		}
		if st.hasE {
			addTo(x, st.e)
		}
	case cflowfmt.ParallelSqrt2:
		r2 := sqrtf(2)
		for i := range x {
			var t float32
			if st.hasF {
				t = st.f[i]
			}
			if st.hasE {
				t += st.e[i]
			}
			x[i] = st.xmid[i] + t/r2
		}
	case cflowfmt.AsyncExperts:
		addTo(x, st.m)
		if st.hasF {
			addTo(x, st.f)
		}
	case cflowfmt.DecoupledStreams:
		addTo(st.sA, st.m)
		if st.hasF {
			addTo(st.sF, st.f)
		}
		if st.hasE {
			addTo(st.sF, st.e)
		}
		avg := e.bf.xn
		for i := range avg {
			avg[i] = (st.sA[i] + st.sF[i]) / 2
		}
		if (p+1)%e.merge == 0 {
			copy(st.sA, avg)
			copy(st.sF, avg)
		}
		e.obs.ResidualNorms[p] = norm2(avg)
		return
	case cflowfmt.PipelineRegisters:
		addTo(st.sA, st.m)
		copy(x, st.sA)
		if st.hasF {
			addTo(x, st.f)
		}
		if st.hasE {
			addTo(x, st.e)
		}
	}
	e.obs.ResidualNorms[p] = norm2(x)
}
