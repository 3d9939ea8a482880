package runtime

// buffers are the per-engine scratch vectors, allocated once at New so a
// decode step allocates nothing in steady state.
type buffers struct {
	xn, hn, q, k, v, att []float32
	accs                 []float64
	scores               []float64
	cos, sin             []float32
	g, u                 []float32
	router               []float32
	gate                 []float64
	eg, eu, eo           []float32
	logits               []float32
	actD, actAtt         *actVec
	actFF, actE          *actVec
}

// sched is the delay-aware scheduler's state for one token: the residual(s),
// this pass's attention/FFN/MoE outputs, the ring of dense outputs waiting
// for their layer (DelayedSum) and the expert queue keyed by target layer.
type sched struct {
	x, xmid, h, m, f, e []float32
	sA, sF              []float32 // DecoupledStreams
	hasF, hasE, hasH    bool
	open                int // pass whose attention ran and is not yet combined; −1 none
	ring                [][]float32
	queue               []queued
	free                [][]float32
}

// queued is an expert output waiting for its target layer.
type queued struct {
	target int
	v      []float32
	job    *stagedJob // ExpertIODirect: computed into v at injection
}

func (e *Engine) allocBuffers() {
	d := e.d
	maxQ, maxKV, maxPairs := 0, 0, 0
	for _, lp := range e.layers {
		maxQ, maxKV, maxPairs = max(maxQ, lp.qDim), max(maxKV, lp.kvDim), max(maxPairs, len(lp.invFreq))
	}
	ff, eff, E := int(e.h.IntermediateSize), int(e.h.ExpertIntermediateSize), int(e.h.NumExperts)
	f32 := func(n int) []float32 { return make([]float32, n) }
	e.bf = buffers{
		xn: f32(d), hn: f32(d), q: f32(maxQ), k: f32(maxKV), v: f32(maxKV), att: f32(maxQ),
		accs: make([]float64, maxQ), cos: f32(maxPairs), sin: f32(maxPairs),
		g: f32(ff), u: f32(ff), router: f32(E), gate: make([]float64, e.h.TopK),
		eg: f32(eff), eu: f32(eff), eo: f32(d), logits: f32(int(e.h.VocabSize)),
		actD: newActVec(d), actAtt: newActVec(maxQ), actFF: newActVec(ff), actE: newActVec(eff),
	}
	e.st = sched{x: f32(d), xmid: f32(d), h: f32(d), m: f32(d), f: f32(d), e: f32(d),
		sA: f32(d), sF: f32(d), open: -1}
	e.st.ring = make([][]float32, e.ring)
	for i := range e.st.ring {
		e.st.ring[i] = f32(d)
	}
	e.obs.ResidualNorms = make([]float64, e.passes)
	e.obs.Experts = make([][]int, e.passes)
	for p := range e.obs.Experts {
		e.obs.Experts[p] = make([]int, 0, e.h.TopK)
	}
}
