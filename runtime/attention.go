package runtime

import (
	"math"

	"github.com/cflow-dev/cflow/cflowfmt"
)

// attention computes out = Wo·Attn(Na(x)) for one pass of sequence s at
// position s.pos, appending this position's keys and values to the pass's
// cache.
func (e *Engine) attention(s *seq, pass int, lp *layerPlan, x, out []float32) {
	b := &e.bf
	rmsNorm(b.xn, x, lp.attnNorm, e.eps)
	e.prepare(stAttn, b.actD, b.xn)
	q, k, v := b.q[:lp.qDim], b.k[:lp.kvDim], b.v[:lp.kvDim]
	vOut := v
	if lp.qkv.outDims[2] == 0 {
		vOut = v[:0]
	}
	e.matvec(lp.qkv, b.actD, q, k, vOut)
	e.stats.Last.Attn += lp.qkv.bytes + lp.o.bytes
	e.qkvBiases(lp, q, k, vOut)
	if lp.kEqV {
		copy(v, k) // full layers of K=V models: v is k before its norm and RoPE
	}
	e.qkNorms(lp, q, k)
	H, Hkv, hd := int(e.h.NumHeads), lp.kvHeads, lp.hd
	if e.h.Has(cflowfmt.FlagVNorm) {
		for j := 0; j < Hkv; j++ {
			rmsNorm(v[j*hd:(j+1)*hd], v[j*hd:(j+1)*hd], nil, e.eps)
		}
	}
	cos, sin := b.cos[:len(lp.invFreq)], b.sin[:len(lp.invFreq)]
	for i, f := range lp.invFreq {
		a := float32(s.pos) * f
		cos[i], sin[i] = float32(math.Cos(float64(a))), float32(math.Sin(float64(a)))
	}
	for j := 0; j < H; j++ {
		rope(q[j*hd:(j+1)*hd], cos, sin)
	}
	for j := 0; j < Hkv; j++ {
		rope(k[j*hd:(j+1)*hd], cos, sin)
	}
	c := &s.kv[pass]
	c.k = append(c.k, k...)
	c.v = append(c.v, v...)
	n := s.pos + 1
	start := 0
	if lp.window > 0 && n > lp.window {
		start = n - lp.window
	}
	if cap(b.scores) < H*n {
		b.scores = make([]float64, H*max(n, 2*cap(b.scores)/max(1, H)))
	}
	att := b.att[:lp.qDim]
	scale := e.attnScale(hd)
	e.pool.run(H, func(j int) {
		kvh := j * Hkv / H
		qh := q[j*hd : (j+1)*hd]
		sc := b.scores[j*n : (j+1)*n]
		mx := math.Inf(-1)
		for t := start; t < n; t++ {
			kr := c.k[t*c.dim+kvh*hd : t*c.dim+(kvh+1)*hd]
			var dot float64
			for i, qv := range qh {
				dot += float64(qv) * float64(kr[i])
			}
			sc[t] = dot * scale
			mx = max(mx, sc[t])
		}
		var sum float64
		for t := start; t < n; t++ {
			p := math.Exp(sc[t] - mx)
			sc[t] = p
			sum += p
		}
		oh := att[j*hd : (j+1)*hd]
		acc := b.accs[j*hd : (j+1)*hd]
		clear(acc)
		for t := start; t < n; t++ {
			p := sc[t] / sum
			vr := c.v[t*c.dim+kvh*hd : t*c.dim+(kvh+1)*hd]
			for i, vv := range vr {
				acc[i] += p * float64(vv)
			}
		}
		for i := range oh {
			oh[i] = float32(acc[i])
		}
	})
	e.prepare(stAttn, b.actAtt, att)
	e.matvec(lp.o, b.actAtt, out)
	e.outFeatures(lp.feat.oBias, lp.feat.postAttn, out)
}

// rope rotates the first len(cos) split-half pairs (i, i+hd/2) of one head.
func rope(x, cos, sin []float32) {
	half := len(x) / 2
	for i := range cos {
		a, b := x[i], x[i+half]
		x[i] = a*cos[i] - b*sin[i]
		x[i+half] = b*cos[i] + a*sin[i]
	}
}
