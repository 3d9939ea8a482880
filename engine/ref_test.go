package engine

import (
	"math"

	"github.com/cflow-dev/cflow/archspec"
	"github.com/cflow-dev/cflow/cflowfmt"
)

// refModel is the spec's equations (docs/ARCHITECTURES.md),
// literally, in float64 over dense matrices: layers in order, delays kept as
// a full history of x_out and a list of (target, expert output). It shares
// nothing with the engine but the weights.
type refModel struct {
	tm    *testModel
	h     cflowfmt.Header
	md    *cflowfmt.Metadata
	eps   float64
	iters int
	pos   int
	kc    [][][]float64 // per pass: per position: key vector
	vc    [][][]float64
}

type refOut struct {
	logits []float64
	norms  []float64
	pre    float64
}

func newRef(tm *testModel) *refModel {
	h := tm.m.Header
	iters := int(tm.m.Meta.U32(cflowfmt.KeyBlockIterations, 1))
	n := int(h.NumLayers) * iters
	return &refModel{tm: tm, h: h, md: tm.m.Meta, eps: float64(tm.m.Meta.F32(cflowfmt.KeyRMSEps, 1e-6)),
		iters: iters, kc: make([][][]float64, n), vc: make([][][]float64, n)}
}

func (r *refModel) mat(l int, id archspec.MatrixID, e int) [][]float64 {
	return r.tm.dense[mkey(l, id, e)]
}

func matVec(w [][]float64, x []float64) []float64 {
	y := make([]float64, len(w))
	for i, row := range w {
		for j, v := range row {
			y[i] += v * x[j]
		}
	}
	return y
}

func rmsRef(x, w []float64, eps float64) []float64 {
	var ss float64
	for _, v := range x {
		ss += v * v
	}
	s := 1 / math.Sqrt(ss/float64(len(x))+eps)
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = v * s
		if w != nil {
			out[i] *= w[i]
		}
	}
	return out
}

func add(vs ...[]float64) []float64 {
	out := make([]float64, len(vs[0]))
	for _, v := range vs {
		for i := range v {
			out[i] += v[i]
		}
	}
	return out
}

func scale(v []float64, s float64) []float64 {
	out := make([]float64, len(v))
	for i := range v {
		out[i] = v[i] * s
	}
	return out
}

func l2(v []float64) float64 {
	var ss float64
	for _, x := range v {
		ss += x * x
	}
	return math.Sqrt(ss)
}

func (r *refModel) norm(l int, what string) []float64 {
	return r.tm.norms[itoa(l)+what]
}

func itoa(l int) string {
	const digits = "0123456789"
	if l < 10 {
		return digits[l : l+1]
	}
	return itoa(l/10) + digits[l%10:l%10+1]
}

// attn is Wo·Attn(h) for layer l in pass p at position r.pos.
func (r *refModel) attn(p, l int, x []float64) []float64 {
	h := &r.h
	kinds := r.md.Bytes(cflowfmt.KeyLayerKinds)
	full := kinds == nil || kinds[l] == archspec.LayerFull
	hd := h.Geometry(nil).HeadDimFor(full)
	theta := float64(r.md.F32(cflowfmt.KeyRopeTheta, 10000))
	rot := hd / 2
	window := 0
	kEqV := false
	if full {
		theta = float64(r.md.F32(cflowfmt.KeyRopeThetaGlobal, float32(theta)))
		rot = int(float64(r.md.F32(cflowfmt.KeyRopePartial, 1)) * float64(hd/2))
		kEqV = r.md.U32(cflowfmt.KeyKEqV, 0) == 1
	} else {
		window = int(h.SlidingWindow)
	}
	xn := rmsRef(x, r.norm(l, "attn"), r.eps)
	q := matVec(r.mat(l, archspec.MatQ, -1), xn)
	k := matVec(r.mat(l, archspec.MatK, -1), xn)
	var v []float64
	if kEqV {
		v = append([]float64(nil), k...)
	} else {
		v = matVec(r.mat(l, archspec.MatV, -1), xn)
	}
	H, Hkv := int(h.NumHeads), int(h.NumKVHeads)
	if h.Has(cflowfmt.FlagVNorm) {
		for j := 0; j < Hkv; j++ {
			copy(v[j*hd:], rmsRef(v[j*hd:(j+1)*hd], nil, r.eps))
		}
	}
	ropeRef := func(vec []float64) {
		for j := 0; j < len(vec)/hd; j++ {
			hv := vec[j*hd : (j+1)*hd]
			for i := 0; i < rot; i++ {
				ang := float64(r.pos) * math.Pow(theta, -2*float64(i)/float64(hd))
				a, b := hv[i], hv[i+hd/2]
				hv[i] = a*math.Cos(ang) - b*math.Sin(ang)
				hv[i+hd/2] = b*math.Cos(ang) + a*math.Sin(ang)
			}
		}
	}
	ropeRef(q)
	ropeRef(k)
	r.kc[p] = append(r.kc[p], k)
	r.vc[p] = append(r.vc[p], v)
	out := make([]float64, H*hd)
	for j := 0; j < H; j++ {
		g := j * Hkv / H
		lo := 0
		if window > 0 {
			lo = max(0, r.pos-window+1)
		}
		sc := make([]float64, r.pos+1)
		mx := math.Inf(-1)
		for s := lo; s <= r.pos; s++ {
			var dot float64
			for i := 0; i < hd; i++ {
				dot += q[j*hd+i] * r.kc[p][s][g*hd+i]
			}
			sc[s] = dot / math.Sqrt(float64(hd))
			mx = math.Max(mx, sc[s])
		}
		var sum float64
		for s := lo; s <= r.pos; s++ {
			sc[s] = math.Exp(sc[s] - mx)
			sum += sc[s]
		}
		for s := lo; s <= r.pos; s++ {
			for i := 0; i < hd; i++ {
				out[j*hd+i] += sc[s] / sum * r.vc[p][s][g*hd+i]
			}
		}
	}
	return matVec(r.mat(l, archspec.MatO, -1), out)
}

func (r *refModel) act(x float64) float64 {
	if r.h.Has(cflowfmt.FlagGELU) {
		return 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x)))
	}
	return x / (1 + math.Exp(-x))
}

func (r *refModel) glu(g, u, d [][]float64, x []float64) []float64 {
	a, b := matVec(g, x), matVec(u, x)
	for i := range a {
		a[i] = r.act(a[i]) * b[i]
	}
	return matVec(d, a)
}

func (r *refModel) ffn(l int, x []float64) []float64 {
	return r.glu(r.mat(l, archspec.MatGate, -1), r.mat(l, archspec.MatUp, -1), r.mat(l, archspec.MatDown, -1), x)
}

// moe returns the MoE output and the selected experts.
func (r *refModel) moe(l int, x []float64) ([]float64, []int) {
	logits := matVec(r.mat(l, archspec.MatRouter, -1), x)
	var sel []int
	for len(sel) < int(r.h.TopK) {
		best := -1
		for i, v := range logits {
			taken := false
			for _, s := range sel {
				taken = taken || s == i
			}
			if !taken && (best < 0 || v > logits[best]) {
				best = i
			}
		}
		sel = append(sel, best)
	}
	var sum float64
	for _, s := range sel {
		sum += math.Exp(logits[s] - logits[sel[0]])
	}
	out := make([]float64, len(x))
	for _, s := range sel {
		y := r.glu(r.mat(l, archspec.MatExpertGate, s), r.mat(l, archspec.MatExpertUp, s), r.mat(l, archspec.MatExpertDown, s), x)
		out = add(out, scale(y, math.Exp(logits[s]-logits[sel[0]])/sum))
	}
	return out, sel
}

type pending struct {
	target int
	v      []float64
}

// step runs one token; experts records each pass's selection.
func (r *refModel) step(tok int) (refOut, [][]int) {
	h := &r.h
	L := int(h.NumLayers)
	d := int(h.HiddenSize)
	hasDense, hasMoE := h.IntermediateSize > 0, h.NumExperts > 0
	x := append([]float64(nil), r.mat(L, archspec.MatEmbed, -1)[tok]...)
	if h.Has(cflowfmt.FlagEmbedScale) {
		x = scale(x, math.Sqrt(float64(d)))
	}
	var norms []float64
	var sels [][]int
	zero := make([]float64, d)
	switch h.CombineStyle {
	case archspec.PreNorm, archspec.ParallelSqrt2:
		for b := 0; b < L; b++ {
			for i := 0; i < r.iters; i++ {
				p := b*r.iters + i
				mid := add(x, r.attn(p, b, x))
				hn := rmsRef(mid, r.norm(b, "ffn"), r.eps)
				f, e := zero, zero
				if hasDense {
					f = r.ffn(b, hn)
				}
				if hasMoE {
					var s []int
					e, s = r.moe(b, hn)
					sels = append(sels, s)
				}
				if h.CombineStyle == archspec.ParallelSqrt2 {
					x = add(mid, scale(add(f, e), 1/math.Sqrt2))
				} else {
					x = add(mid, f, e)
				}
				norms = append(norms, l2(x))
			}
		}
	case archspec.DelayedSum:
		dd, de := int(h.DenseDelay), int(h.ExpertDelay)
		var outs [][]float64
		var q []pending
		for l := 0; l < L; l++ {
			mid := add(x, r.attn(l, l, x))
			f := zero
			if hasDense && l-dd >= 0 {
				f = r.ffn(l, rmsRef(outs[l-dd], r.norm(l, "ffn"), r.eps))
			}
			if hasMoE {
				e, s := r.moe(l, rmsRef(mid, r.norm(l, "moe"), r.eps))
				sels = append(sels, s)
				q = append(q, pending{min(l+de, L-1), e})
			}
			x = add(mid, f)
			for _, pe := range q {
				if pe.target == l {
					x = add(x, pe.v)
				}
			}
			outs = append(outs, x)
			norms = append(norms, l2(x))
		}
	case archspec.AsyncExperts:
		de := int(h.ExpertDelay)
		var q []pending
		for l := 0; l < L; l++ {
			for _, pe := range q {
				if pe.target == l {
					x = add(x, pe.v)
				}
			}
			hn := rmsRef(x, r.norm(l, "ffn"), r.eps)
			m := r.attn(l, l, x)
			f := zero
			if hasDense {
				f = r.ffn(l, hn)
			}
			if hasMoE {
				e, s := r.moe(l, hn)
				sels = append(sels, s)
				q = append(q, pending{l + de, e})
			}
			x = add(x, m, f)
			norms = append(norms, l2(x))
		}
		for _, pe := range q {
			if pe.target >= L {
				x = add(x, pe.v)
			}
		}
	case archspec.DecoupledStreams:
		mi := int(r.md.U32(cflowfmt.KeyMergeInterval, 3))
		sa, sf := x, x
		for l := 0; l < L; l++ {
			sa = add(sa, r.attn(l, l, sa))
			sf = add(sf, r.ffn(l, rmsRef(sf, r.norm(l, "ffn"), r.eps)))
			avg := scale(add(sa, sf), 0.5)
			if (l+1)%mi == 0 {
				sa, sf = avg, avg
			}
			norms = append(norms, l2(avg))
		}
		x = scale(add(sa, sf), 0.5)
	case archspec.PipelineRegisters:
		ar, xr := x, x
		for l := 0; l < L; l++ {
			f := r.ffn(l, rmsRef(xr, r.norm(l, "ffn"), r.eps))
			ar = add(ar, r.attn(l, l, ar))
			xr = add(ar, f)
			norms = append(norms, l2(xr))
		}
		x = xr
	}
	out := refOut{norms: norms, pre: l2(x)}
	lm := r.mat(L, archspec.MatLMHead, -1)
	if h.Has(cflowfmt.FlagTiedEmbed) {
		lm = r.mat(L, archspec.MatEmbed, -1)
	}
	out.logits = matVec(lm, rmsRef(x, r.tm.norms["final"], r.eps))
	if c := float64(h.FinalLogitSoftcap); c > 0 {
		for i, z := range out.logits {
			out.logits[i] = c * math.Tanh(z/c)
		}
	}
	r.pos++
	return out, sels
}
