package engine

import (
	"fmt"
	"math"

	"github.com/cflow-dev/cflow/archspec"
	"github.com/cflow-dev/cflow/cflowfmt"
)

// modelFeatures are the Hugging Face families' computation features a file
// lists in cflow.features (archspec/features.go), decoded once. The zero
// value is a file without any: plain √d embedding scale, 1/√head_dim
// attention, softmax over the k selected router logits, unscaled RoPE.
type modelFeatures struct {
	set        map[string]bool
	attnScale  float64 // 0: 1/√head_dim
	embedScale float32 // under FlagEmbedScale
	routing    string  // "" or archspec.Routing*
	rope       ropeScaling
}

// ropeScaling is a full-attention layer's inverse-frequency rescaling.
type ropeScaling struct {
	kind              string // "", "linear", "llama3"
	factor, low, high float32
	originalContext   float32
}

// layerFeatures are one layer's vectors (nil when absent).
type layerFeatures struct {
	qBias, kBias, vBias, oBias []float32
	gateBias, upBias, downBias []float32
	qNorm, kNorm               []float32
	postAttn, postFFN          []float32
	routerIn, expertIn         []float32 // FeatMoEInputs
	expertScale                []float32 // FeatExpertScale, one per expert
	postMoE, ffnSum            []float32 // FeatFFNSumNorm
	layerScalar                []float32 // FeatLayerScalar, one value
}

// loadFeatures decodes the feature list and the engine-wide values,
// refusing unknown features and out-of-range values.
func loadFeatures(m *cflowfmt.Model) (*modelFeatures, error) {
	h, md := &m.Header, m.Meta
	set, err := cflowfmt.Features(h, md)
	if err != nil {
		return nil, fmt.Errorf("runtime: %w", err)
	}
	f := &modelFeatures{set: set, embedScale: sqrtf(float32(h.HiddenSize))}
	if set[archspec.FeatAttnScale] {
		s := md.F32(cflowfmt.KeyAttnScale, 0)
		if !(s > 0) || math.IsInf(float64(s), 0) {
			return nil, fmt.Errorf("runtime: %s = %v, want a finite value > 0", cflowfmt.KeyAttnScale, s)
		}
		f.attnScale = float64(s)
	}
	if set[archspec.FeatEmbedScale] {
		f.embedScale = md.F32(cflowfmt.KeyEmbedScale, 0)
		if !(f.embedScale > 0) || math.IsInf(float64(f.embedScale), 0) {
			return nil, fmt.Errorf("runtime: %s = %v, want a finite value > 0", cflowfmt.KeyEmbedScale, f.embedScale)
		}
	}
	if set[archspec.FeatMoERouting] {
		switch f.routing = md.String(cflowfmt.KeyMoERouting, ""); f.routing {
		case archspec.RoutingSoftmaxTopK, archspec.RoutingSoftmaxTopKNorm:
		default:
			return nil, fmt.Errorf("runtime: %s = %q, want %s or %s", cflowfmt.KeyMoERouting, f.routing, archspec.RoutingSoftmaxTopK, archspec.RoutingSoftmaxTopKNorm)
		}
	}
	if set[archspec.FeatRopeScaling] {
		r := &f.rope
		r.kind = md.String(cflowfmt.KeyRopeScaling, "")
		r.factor = md.F32(cflowfmt.KeyRopeScalingFactor, 0)
		switch r.kind {
		case "linear":
			if !(r.factor >= 1) {
				return nil, fmt.Errorf("runtime: %s %v, want ≥ 1", cflowfmt.KeyRopeScalingFactor, r.factor)
			}
		case "llama3":
			r.low = md.F32(cflowfmt.KeyRopeLowFreqFactor, 0)
			r.high = md.F32(cflowfmt.KeyRopeHighFreqFactor, 0)
			r.originalContext = float32(md.U32(cflowfmt.KeyRopeOriginalContext, 0))
			if !(r.factor > 0 && r.low > 0 && r.high > r.low && r.originalContext > 0) {
				return nil, fmt.Errorf("runtime: llama3 rope scaling factor %v, low %v, high %v, context %v: want all > 0 and high > low", r.factor, r.low, r.high, r.originalContext)
			}
		default:
			return nil, fmt.Errorf("runtime: %s = %q, want linear or llama3", cflowfmt.KeyRopeScaling, r.kind)
		}
	}
	return f, nil
}

// scale rescales a full-attention layer's inverse frequencies the way
// transformers' rope init functions do: linear divides by the factor;
// llama3 divides wavelengths longer than original/low_freq_factor by the
// factor, keeps those shorter than original/high_freq_factor, and blends
// the band between.
func (r *ropeScaling) scale(inv []float32) {
	switch r.kind {
	case "linear":
		for i := range inv {
			inv[i] /= r.factor
		}
	case "llama3":
		// In f64 from the f32 base frequency, rounded once to f32.
		orig, lo, hi, fac := float64(r.originalContext), float64(r.low), float64(r.high), float64(r.factor)
		for i, f32 := range inv {
			f := float64(f32)
			wave := 2 * math.Pi / f
			switch {
			case wave < orig/hi:
			case wave > orig/lo:
				f /= fac
			default:
				s := (orig/wave - lo) / (hi - lo)
				f = (1-s)*f/fac + s*f
			}
			inv[i] = float32(f)
		}
	}
}

// attachFeatures gives layer l its vectors and, on full-attention layers,
// its RoPE scaling; each vector's length is checked against the geometry.
func (e *Engine) attachFeatures(lp *layerPlan, l int) error {
	fx, md, h := e.fx, e.m.Meta, &e.h
	kinds := md.Bytes(cflowfmt.KeyLayerKinds)
	if full := kinds == nil || kinds[l] == archspec.LayerFull; full && fx.rope.kind != "" {
		fx.rope.scale(lp.invFreq)
	}
	lf := &layerFeatures{}
	lp.feat = lf
	vec := func(feat, name string, n int) ([]float32, error) {
		key := cflowfmt.LayerKey(l, name)
		v := md.F32s(key)
		if !fx.set[feat] {
			if v != nil {
				return nil, fmt.Errorf("runtime: metadata %s present but %s does not list %q", key, cflowfmt.KeyFeatures, feat)
			}
			return nil, nil
		}
		if v != nil && len(v) != n {
			return nil, fmt.Errorf("runtime: metadata %s has %d values, want %d", key, len(v), n)
		}
		return v, nil
	}
	d, ff, E := e.d, int(h.IntermediateSize), int(h.NumExperts)
	var err error
	for _, x := range []struct {
		dst        *[]float32
		feat, name string
		n          int
		required   bool
	}{
		{&lf.qBias, archspec.FeatBias, archspec.VecQBias, lp.qDim, false},
		{&lf.kBias, archspec.FeatBias, archspec.VecKBias, lp.kvDim, false},
		{&lf.vBias, archspec.FeatBias, archspec.VecVBias, lp.kvDim, false},
		{&lf.oBias, archspec.FeatBias, archspec.VecOBias, d, false},
		{&lf.gateBias, archspec.FeatBias, archspec.VecGateBias, ff, false},
		{&lf.upBias, archspec.FeatBias, archspec.VecUpBias, ff, false},
		{&lf.downBias, archspec.FeatBias, archspec.VecDownBias, d, false},
		{&lf.qNorm, archspec.FeatQKNorm, archspec.VecQNorm, lp.hd, true},
		{&lf.kNorm, archspec.FeatQKNorm, archspec.VecKNorm, lp.hd, true},
		{&lf.postAttn, archspec.FeatPostNorms, archspec.VecPostAttnNorm, d, true},
		{&lf.postFFN, archspec.FeatPostNorms, archspec.VecPostFFNNorm, d, ff > 0},
		{&lf.routerIn, archspec.FeatMoEInputs, archspec.VecRouterInScale, d, E > 0},
		{&lf.expertIn, archspec.FeatMoEInputs, archspec.VecExpertInNorm, d, E > 0},
		{&lf.expertScale, archspec.FeatExpertScale, archspec.VecExpertScale, E, E > 0},
		{&lf.postMoE, archspec.FeatFFNSumNorm, archspec.VecPostMoENorm, d, E > 0},
		{&lf.ffnSum, archspec.FeatFFNSumNorm, archspec.VecFFNSumNorm, d, true},
		{&lf.layerScalar, archspec.FeatLayerScalar, archspec.VecLayerScalar, 1, true},
	} {
		if *x.dst, err = vec(x.feat, x.name, x.n); err != nil {
			return err
		}
		if x.required && fx.set[x.feat] && *x.dst == nil {
			return fmt.Errorf("runtime: feature %q needs metadata %s", x.feat, cflowfmt.LayerKey(l, x.name))
		}
	}
	return nil
}

// qkvBiases adds the q/k/v biases to a freshly projected q, k, v (before
// K = V sharing, the norms and RoPE).
func (w *worker) qkvBiases(lp *layerPlan, q, k, v []float32) {
	lf := lp.feat
	addBias(q, lf.qBias)
	addBias(k, lf.kBias)
	if len(v) > 0 {
		addBias(v, lf.vBias)
	}
}

// qkNorms applies the per-head q/k RMSNorm (after K = V sharing took the
// raw k, before RoPE).
func (w *worker) qkNorms(lp *layerPlan, q, k []float32) {
	lf, hd := lp.feat, lp.hd
	if lf.qNorm != nil {
		for j := 0; j+hd <= len(q); j += hd {
			rmsNorm(q[j:j+hd], q[j:j+hd], lf.qNorm, w.eps)
		}
		for j := 0; j+hd <= len(k); j += hd {
			rmsNorm(k[j:j+hd], k[j:j+hd], lf.kNorm, w.eps)
		}
	}
}

// outFeatures applies a projection's bias, then a post-norm, to its
// output before it joins the residual.
func (w *worker) outFeatures(bias, post, out []float32) {
	addBias(out, bias)
	if post != nil {
		rmsNorm(out, out, post, w.eps)
	}
}

func addBias(x, b []float32) {
	if b != nil {
		addTo(x, b)
	}
}

// attnScale is the factor on q·k: 1/√head_dim unless the file sets one.
func (e *Engine) attnScale(hd int) float64 {
	if e.fx != nil && e.fx.attnScale > 0 {
		return e.fx.attnScale
	}
	return 1 / math.Sqrt(float64(hd))
}

// routeWeights turns the selected experts' router logits into weights
// wts[j]/sum. Without a routing feature (Mixtral, the pipeline-native MoE) wts
// is already the softmax numerator over the k and sum its total. Under
// softmax_topk each weight is its probability under the softmax over all
// E logits; softmax_topk_norm renormalises those k probabilities.
func (w *worker) routeWeights(logits []float32, sel []int, wts []float64, sum float64) float64 {
	if w.fx == nil || w.fx.routing == "" {
		return sum
	}
	mx := float64(logits[sel[0]])
	var all float64
	for _, z := range logits {
		all += math.Exp(float64(z) - mx)
	}
	sum = 0
	for j := range sel {
		wts[j] /= all
		sum += wts[j]
	}
	if w.fx.routing == archspec.RoutingSoftmaxTopK {
		return 1
	}
	return sum
}

// moeInputs returns the router's and the experts' inputs under
// FeatMoEInputs (rms of the residual r, scaled by each one's vector); nil
// routerIn means both read the shared FFN input.
func (w *worker) moeInputs(lp *layerPlan, r []float32) (routerIn, expertIn []float32) {
	lf := lp.feat
	if lf.routerIn == nil {
		return nil, nil
	}
	b := &w.bf
	rmsNorm(b.xn, r, lf.routerIn, w.eps)
	rmsNorm(b.hn, r, lf.expertIn, w.eps)
	return b.xn, b.hn
}

// scaleExperts multiplies the selected experts' weights by their
// per-expert scale (FeatExpertScale).
func (w *worker) scaleExperts(lp *layerPlan, sel []int, wts []float64) {
	if s := lp.feat.expertScale; s != nil {
		for j, x := range sel {
			wts[j] *= float64(s[x])
		}
	}
}

// sumFFN forms x_out = x_mid + Nsum(f + Npost(e)) under FeatFFNSumNorm and
// then multiplies by the layer scalar (FeatLayerScalar); it reports
// whether it did the combine.
func (w *worker) sumFFN(lp *layerPlan, s *seq) bool {
	lf := lp.feat
	if lf.ffnSum == nil && lf.layerScalar == nil {
		return false
	}
	m := w.bf.xn
	clear(m)
	if s.hasF {
		addTo(m, s.f)
	}
	if s.hasE {
		addTo(m, s.e)
	}
	if lf.ffnSum != nil {
		rmsNorm(m, m, lf.ffnSum, w.eps)
	}
	for i := range s.x {
		s.x[i] = s.xmid[i] + m[i]
	}
	if lf.layerScalar != nil {
		c := lf.layerScalar[0]
		for i := range s.x {
			s.x[i] *= c
		}
	}
	return true
}
