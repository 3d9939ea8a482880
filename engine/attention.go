package engine

import (
	"math"

	"github.com/cflow-dev/cflow/cflowfmt"
)

// attention computes out = Wo·Attn(Na(x)) for one pass of sequence s at
// position s.pos, appending this position's keys and values to the pass's
// cache.
func (w *worker) attention(s *seq, pass int, lp *layerPlan, x, out []float32) {
	b := &w.bf
	rmsNorm(b.xn, x, lp.attnNorm, w.eps)
	w.prepare(stAttn, b.actD, b.xn)
	q, k, v := b.q[:lp.qDim], b.k[:lp.kvDim], b.v[:lp.kvDim]
	vOut := v
	if lp.qkv.outDims[2] == 0 {
		vOut = v[:0]
	}
	w.matvec(lp.qkv, b.actD, q, k, vOut)
	w.stats.Last.Attn += lp.qkv.bytes + lp.o.bytes
	w.qkvBiases(lp, q, k, vOut)
	if lp.kEqV {
		copy(v, k) // full layers of K=V models: v is k before its norm and RoPE
	}
	w.qkNorms(lp, q, k)
	H, Hkv, hd := int(w.h.NumHeads), lp.kvHeads, lp.hd
	if w.h.Has(cflowfmt.FlagVNorm) {
		for j := 0; j < Hkv; j++ {
			rmsNorm(v[j*hd:(j+1)*hd], v[j*hd:(j+1)*hd], nil, w.eps)
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
	c.store(s.pos, k, v)
	n := s.pos + 1
	start := 0
	if lp.window > 0 && n > lp.window {
		start = n - lp.window
	}
	att := b.att[:lp.qDim]
	w.heads(c, lp, q, att, n, start)
	w.prepare(stAttn, b.actAtt, att)
	w.matvec(lp.o, b.actAtt, out)
	w.outFeatures(lp.feat.oBias, lp.feat.postAttn, out)
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
