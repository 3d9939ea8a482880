package engine

import (
	"math"

	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/quant"
)

// prepare loads an activation for a stream's kernels and counts it, so a
// test can show that one load serves all of a fused stripe's outputs.
func (w *worker) prepare(stream int, a *actVec, x []float32) {
	w.prepCount[stream]++
	a.set(x)
}

// glu writes act(g)⊙u into g: SwiGLU, or GeGLU (tanh) under FlagGELU.
func (w *worker) glu(g, u []float32) {
	if w.h.Has(cflowfmt.FlagGELU) {
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
func (w *worker) ffn(lp *layerPlan, hn, out []float32) {
	b := &w.bf
	w.prepare(stDense, b.actD, hn)
	w.matvec(lp.gateUp, b.actD, b.g, b.u)
	addBias(b.g, lp.feat.gateBias)
	addBias(b.u, lp.feat.upBias)
	w.glu(b.g, b.u)
	w.prepare(stDense, b.actFF, b.g)
	w.matvec(lp.down, b.actFF, out)
	w.outFeatures(lp.feat.downBias, lp.feat.postFFN, out)
	w.stats.Last.Dense += lp.gateUp.bytes + lp.down.bytes
}

// moe computes out = Σ_j s_j·Expert_{i_j}(hn): router (F32 tiles), top-k
// with ties to the lower index, softmax over the k selected logits, then
// only the selected experts' tiles. It records the selection in the
// observation for pass.
func (w *worker) moe(pass int, lp *layerPlan, routerIn, hn, out []float32) error {
	b := &w.bf
	if routerIn != nil {
		// The router reads its own input (FeatMoEInputs); the experts hn.
		w.prepare(stMoE, b.actD, routerIn)
		w.matvec(lp.router, b.actD, b.router)
		w.prepare(stMoE, b.actD, hn)
	} else {
		w.prepare(stMoE, b.actD, hn)
		w.matvec(lp.router, b.actD, b.router)
	}
	w.stats.Last.Router += lp.router.bytes
	k := int(w.h.TopK)
	sel := topK(b.router, k, w.obs.Experts[pass][:0])
	w.obs.Experts[pass] = sel
	mx := float64(b.router[sel[0]])
	var sum float64
	wts := b.gate[:k]
	for j, x := range sel {
		wts[j] = math.Exp(float64(b.router[x]) - mx)
		sum += wts[j]
	}
	sum = w.routeWeights(b.router, sel, wts, sum)
	w.scaleExperts(lp, sel, wts)
	if w.xio != nil {
		return w.routeStaged(lp, sel, wts, sum, hn, out)
	}
	clear(out)
	for j, x := range sel {
		ep, err := w.expert(lp, x)
		if err != nil {
			return err
		}
		w.matvec(ep.gateUp, b.actD, b.eg, b.eu)
		w.glu(b.eg, b.eu)
		w.prepare(stMoE, b.actE, b.eg)
		w.matvec(ep.down, b.actE, b.eo)
		axpy(out, float32(wts[j]/sum), b.eo)
		w.stats.Last.Experts += ep.bytes
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
