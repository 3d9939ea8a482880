package engine

import (
	"math"

	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/quant"
)

// prepare loads an activation for a stream's kernels and counts it, so a
// test can show that one load serves all of a fused stripe's outputs.
func (e *Engine) prepare(stream int, a *actVec, x []float32) {
	e.prepCount[stream]++
	a.set(x)
}

// glu writes act(g)⊙u into g: SwiGLU, or GeGLU (tanh) under FlagGELU.
func (e *Engine) glu(g, u []float32) {
	if e.h.Has(cflowfmt.FlagGELU) {
		for i := range g {
			g[i] = geluTanh(g[i]) * u[i]
		}
		return
	}
	// silu(x)·u, 8 at a time on AVX2, bit-identical to the scalar loop
	// (quant.TestSiLUMul).
	quant.SiLUMul(g, u)
}

// ffn computes out = FFN(hn) for an already-normalized input.
func (e *Engine) ffn(lp *layerPlan, hn, out []float32) {
	b := &e.bf
	e.prepare(stDense, b.actD, hn)
	e.matvec(lp.gateUp, b.actD, b.g, b.u)
	addBias(b.g, lp.feat.gateBias)
	addBias(b.u, lp.feat.upBias)
	e.glu(b.g, b.u)
	e.prepare(stDense, b.actFF, b.g)
	e.matvec(lp.down, b.actFF, out)
	e.outFeatures(lp.feat.downBias, lp.feat.postFFN, out)
	e.stats.Last.Dense += lp.gateUp.bytes + lp.down.bytes
}

// moe computes out = Σ_j s_j·Expert_{i_j}(hn): router (F32 tiles), top-k
// with ties to the lower index, softmax over the k selected logits, then
// only the selected experts' tiles. It records the selection in the
// observation for pass.
func (e *Engine) moe(pass int, lp *layerPlan, routerIn, hn, out []float32) error {
	b := &e.bf
	if routerIn != nil {
		// The router reads its own input (FeatMoEInputs); the experts hn.
		e.prepare(stMoE, b.actD, routerIn)
		e.matvec(lp.router, b.actD, b.router)
		e.prepare(stMoE, b.actD, hn)
	} else {
		e.prepare(stMoE, b.actD, hn)
		e.matvec(lp.router, b.actD, b.router)
	}
	e.stats.Last.Router += lp.router.bytes
	k := int(e.h.TopK)
	sel := topK(b.router, k, e.obs.Experts[pass][:0])
	e.obs.Experts[pass] = sel
	mx := float64(b.router[sel[0]])
	var sum float64
	w := b.gate[:k]
	for j, x := range sel {
		w[j] = math.Exp(float64(b.router[x]) - mx)
		sum += w[j]
	}
	sum = e.routeWeights(b.router, sel, w, sum)
	e.scaleExperts(lp, sel, w)
	if e.xio != nil {
		return e.routeStaged(lp, sel, w, sum, hn, out)
	}
	clear(out)
	for j, x := range sel {
		ep, err := e.expert(lp, x)
		if err != nil {
			return err
		}
		e.matvec(ep.gateUp, b.actD, b.eg, b.eu)
		e.glu(b.eg, b.eu)
		e.prepare(stMoE, b.actE, b.eg)
		e.matvec(ep.down, b.actE, b.eo)
		axpy(out, float32(w[j]/sum), b.eo)
		e.stats.Last.Experts += ep.bytes
	}
	return nil
}

// topK returns the indices of the k largest values, largest first, ties
// to the lower index.
func topK(v []float32, k int, dst []int) []int {
	dst = dst[:0]
	for len(dst) < k {
		best := -1
		for i, x := range v {
			if contains(dst, i) {
				continue
			}
			if best < 0 || x > v[best] {
				best = i
			}
		}
		dst = append(dst, best)
	}
	return dst
}

func contains(s []int, x int) bool {
	for _, y := range s {
		if y == x {
			return true
		}
	}
	return false
}
