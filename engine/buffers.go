package engine

// buffers are the per-engine scratch vectors, allocated once at New so a
// decode step allocates nothing in steady state.
type buffers struct {
	xn, hn, q, k, v, att []float32
	heads                []headScratch
	headGroups           []groupScratch
	cos, sin             []float32
	g, u                 []float32
	router               []float32
	gate                 []float64
	eg, eu, eo           []float32
	logits               []float32
	actD, actAtt         *actVec
	actFF, actE          *actVec
}

// allocBuffers sizes a worker's scratch for its engine's geometry.
func (w *worker) allocBuffers() {
	e := w.Engine
	d := e.d
	maxQ, maxKV, maxPairs := 0, 0, 0
	for _, lp := range e.layers {
		maxQ, maxKV, maxPairs = max(maxQ, lp.qDim), max(maxKV, lp.kvDim), max(maxPairs, len(lp.invFreq))
	}
	ff, eff, E := int(e.h.IntermediateSize), int(e.h.ExpertIntermediateSize), int(e.h.NumExperts)
	f32 := func(n int) []float32 { return make([]float32, n) }
	w.bf = buffers{
		xn: f32(d), hn: f32(d), q: f32(maxQ), k: f32(maxKV), v: f32(maxKV), att: f32(maxQ),
		cos: f32(maxPairs), sin: f32(maxPairs),
		g: f32(ff), u: f32(ff), router: f32(E), gate: make([]float64, e.h.TopK),
		eg: f32(eff), eu: f32(eff), eo: f32(d), logits: f32(int(e.h.VocabSize)),
		actD: e.newActVec(d), actAtt: e.newActVec(maxQ), actFF: e.newActVec(ff), actE: e.newActVec(eff),
	}
}
