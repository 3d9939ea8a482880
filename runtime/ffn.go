package runtime

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
func (e *Engine) glu(g, u []float32) { gluRows(e.h.Has(cflowfmt.FlagGELU), g, u) }

// gluRows is glu on any row range: each output depends on its own row
// only, so a pool item can apply it to the rows it just computed.
func gluRows(gelu bool, g, u []float32) {
	if gelu {
		for i := range g {
			g[i] = geluTanh(g[i]) * u[i]
		}
		return
	}
	// silu(x)·u, 8 at a time on AVX2, bit-identical to the scalar loop
	// (siluMulScalar in the tests).
	quant.SiLUMul(g, u)
}

// ffn computes out = FFN(hn) for an already-normalized input.
func (e *Engine) ffn(lp *layerPlan, hn, out []float32) {
	b := &e.bf
	e.prepare(stDense, b.actD, hn)
	if !e.gateUpGLU(lp, b.actD, b.g, b.u) {
		e.matvec(lp.gateUp, b.actD, b.g, b.u)
		addBias(b.g, lp.feat.gateBias)
		addBias(b.u, lp.feat.upBias)
		e.glu(b.g, b.u)
	}
	e.prepare(stDense, b.actFF, b.g)
	e.matvec(lp.down, b.actFF, out)
	e.outFeatures(lp.feat.downBias, lp.feat.postFFN, out)
	e.stats.Last.Dense += lp.gateUp.bytes + lp.down.bytes
}

// gateUpGLU is the gate/up matvec with the GLU applied inside the same
// pool pass: an item computes a gate stripe and the up stripe of the same
// rows (a .cflow file stores them in that order) and then act(g)⊙u for
// those rows, so with several threads the GLU (5632 exps per TinyLlama
// layer) no longer runs on one thread while the others wait. Each stripe is still summed whole, in file order, by one
// goroutine, and the GLU is elementwise: the result is bit-identical to
// matvec then glu. It reports false, doing nothing, where that fusion does
// not apply (another stripe order, biases, a batch column or the NUMA
// path); the caller then runs the two steps.
func (e *Engine) gateUpGLU(lp *layerPlan, a *actVec, g, u []float32) bool {
	p := lp.gateUp
	if !p.gluPairs || e.ln != nil || e.numa != nil || lp.feat.gateBias != nil || lp.feat.upBias != nil {
		return false
	}
	clear(g)
	clear(u)
	gelu := e.h.Has(cflowfmt.FlagGELU)
	hook := e.readHook
	outs := [2][]float32{g, u}
	e.pool.run(len(p.stripes)/2, func(i int) {
		pair := p.stripes[2*i : 2*i+2]
		for k := range pair {
			s := &pair[k]
			y := outs[s.out]
			for _, t := range s.tiles {
				if hook != nil {
					hook(t.Offset, t.Matrix)
				}
				dotTile(&t.Tile, a, int(t.ColOffset), y[t.RowOffset:])
			}
		}
		r0, r1 := pair[0].row, pair[0].row+pair[0].rows
		gluRows(gelu, g[r0:r1], u[r0:r1])
	})
	return true
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
