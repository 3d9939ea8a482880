package engine

import (
	"fmt"
	"math"
	"sort"
	"sync"

	"github.com/cflow-dev/cflow/archspec"
	"github.com/cflow-dev/cflow/cflowfmt"
)

// layerPlan is one unique layer ready to execute: its attention geometry
// (from the header and the attn.layer_kinds metadata) and stripe plans.
type layerPlan struct {
	idx      int
	hd       int // head dim of this layer
	kvHeads  int // KV heads of this layer (cflowfmt.KVHeads)
	qDim     int
	kvDim    int
	window   int // 0 = attend to every cached position
	kEqV     bool
	invFreq  []float32 // one per rotated pair; len = rotated pairs
	attnNorm []float32
	ffnNorm  []float32
	moeNorm  []float32
	feat     *layerFeatures // biases, q/k norms, post-norms

	qkv, o, gateUp, down, router *matPlan
	// experts is built as the router first selects each expert; the
	// columns of a batch route concurrently, hence the lock.
	expertsMu sync.Mutex
	experts   map[int]*expertPlan
}

// expertPlan is one expert's gate/up and down plans, built the first time
// the router selects the expert.
type expertPlan struct {
	gateUp, down *matPlan
	bytes        int64
}

func (e *Engine) buildLayer(l int) (*layerPlan, error) {
	h, md, L := &e.h, e.m.Meta, &e.m.Layers[l]
	kinds := md.Bytes(cflowfmt.KeyLayerKinds)
	if kinds != nil && len(kinds) != int(h.NumLayers) {
		return nil, fmt.Errorf("runtime: %s has %d entries for %d layers", cflowfmt.KeyLayerKinds, len(kinds), h.NumLayers)
	}
	lp := &layerPlan{idx: l, experts: map[int]*expertPlan{}, attnNorm: L.AttnNorm, ffnNorm: L.FFNNorm, moeNorm: L.MoENorm}
	theta := md.F32(cflowfmt.KeyRopeTheta, 10000)
	partial := float32(1)
	lp.hd = int(h.HeadDim)
	if kinds != nil && kinds[l] == archspec.LayerSliding {
		lp.window = int(h.SlidingWindow)
	} else {
		// A full-attention layer (every layer when attn.layer_kinds is
		// absent): the global geometry, each key defaulting to the uniform
		// value so plain models need none of them.
		lp.hd = h.Geometry(md).HeadDimFor(true)
		theta = md.F32(cflowfmt.KeyRopeThetaGlobal, theta)
		partial = md.F32(cflowfmt.KeyRopePartial, 1)
		lp.kEqV = md.U32(cflowfmt.KeyKEqV, 0) != 0
	}
	if partial <= 0 || partial > 1 {
		return nil, fmt.Errorf("runtime: %s %v outside (0, 1]", cflowfmt.KeyRopePartial, partial)
	}
	lp.invFreq = ropeFreqs(lp.hd, theta, int(partial*float32(lp.hd/2)))
	lp.kvHeads = h.Geometry(md).KVHeads(!(kinds != nil && kinds[l] == archspec.LayerSliding))
	lp.qDim, lp.kvDim = int(h.NumHeads)*lp.hd, lp.kvHeads*lp.hd
	if err := e.attachFeatures(lp, l); err != nil {
		return nil, err
	}
	d := e.d
	if len(lp.attnNorm) != d {
		return nil, fmt.Errorf("runtime: layer %d attention norm has %d values, want %d", l, len(lp.attnNorm), d)
	}
	vDim := lp.kvDim
	if lp.kEqV && !hasMatrix(L.QKV, archspec.MatV) {
		vDim = 0
	}
	var err error
	what := func(s string) string { return fmt.Sprintf("layer %d %s", l, s) }
	if lp.qkv, err = buildCovering(what("q/k/v"), L.QKV, map[archspec.MatrixID]int{archspec.MatQ: 0, archspec.MatK: 1, archspec.MatV: 2},
		[]int{lp.qDim, lp.kvDim, vDim}, d); err != nil {
		return nil, err
	}
	if lp.o, err = buildCovering(what("o"), L.O, map[archspec.MatrixID]int{archspec.MatO: 0}, []int{d}, lp.qDim); err != nil {
		return nil, err
	}
	needFFNNorm := false
	if ff := int(h.IntermediateSize); ff > 0 {
		needFFNNorm = true
		if lp.gateUp, err = buildCovering(what("gate/up"), L.GateUp, map[archspec.MatrixID]int{archspec.MatGate: 0, archspec.MatUp: 1}, []int{ff, ff}, d); err != nil {
			return nil, err
		}
		if lp.down, err = buildCovering(what("down"), L.Down, map[archspec.MatrixID]int{archspec.MatDown: 0}, []int{d}, ff); err != nil {
			return nil, err
		}
	}
	if E := int(h.NumExperts); E > 0 {
		if lp.router, err = buildCovering(what("router"), L.Router, map[archspec.MatrixID]int{archspec.MatRouter: 0}, []int{E}, d); err != nil {
			return nil, err
		}
		if len(L.Experts) != E {
			return nil, fmt.Errorf("runtime: layer %d has %d expert ranges, want %d", l, len(L.Experts), E)
		}
		if h.CombineStyle.OwnMoENorm() {
			if len(lp.moeNorm) != d {
				return nil, fmt.Errorf("runtime: layer %d MoE norm has %d values, want %d", l, len(lp.moeNorm), d)
			}
		} else {
			needFFNNorm = true
		}
	}
	if lp.ffnNorm == nil && !h.CombineStyle.OwnMoENorm() {
		lp.ffnNorm = lp.moeNorm // a reader may file an FFN-less layer's norm as the MoE norm
	}
	if needFFNNorm && len(lp.ffnNorm) != d {
		return nil, fmt.Errorf("runtime: layer %d FFN norm has %d values, want %d", l, len(lp.ffnNorm), d)
	}
	return lp, nil
}

func buildCovering(what string, tiles []cflowfmt.MappedTile, outs map[archspec.MatrixID]int, dims []int, in int) (*matPlan, error) {
	p, err := buildPlan(what, tiles, outs, dims, in)
	if err != nil {
		return nil, fmt.Errorf("runtime: %w", err)
	}
	if !p.covers() {
		return nil, fmt.Errorf("runtime: %s tiles do not cover the %v×%d matrices", what, dims, in)
	}
	return p, nil
}

func hasMatrix(ts []cflowfmt.MappedTile, m archspec.MatrixID) bool {
	for i := range ts {
		if ts[i].Matrix == m {
			return true
		}
	}
	return false
}

// ropeFreqs returns the inverse frequencies of the first n split-half pairs,
// θ^(−2i/hd), computed in f32 the way the PyTorch reference does.
func ropeFreqs(hd int, theta float32, n int) []float32 {
	f := make([]float32, n)
	for i := range f {
		exp := float32(2*i) / float32(hd)
		f[i] = 1 / float32(math.Pow(float64(theta), float64(exp)))
	}
	return f
}

// expert returns expert x's plans, parsing its tiles on first selection.
func (e *Engine) expert(lp *layerPlan, x int) (*expertPlan, error) {
	lp.expertsMu.Lock()
	defer lp.expertsMu.Unlock()
	if ep := lp.experts[x]; ep != nil {
		return ep, nil
	}
	if e.m.ExpertTiles == nil {
		return nil, fmt.Errorf("runtime: model has no expert reader")
	}
	ts, err := e.m.ExpertTiles(lp.idx, x)
	if err != nil {
		return nil, fmt.Errorf("runtime: layer %d expert %d: %w", lp.idx, x, err)
	}
	gu, dn := splitExpert(ts)
	ep, err := e.expertPlanOf(lp.idx, x, gu, dn)
	if err != nil {
		// The tiles came from the file: a plan they cannot form is bad
		// input found late, reported as the file's fault.
		return nil, &cflowfmt.FormatError{File: e.m.Path, Offset: e.m.Layers[lp.idx].Experts[x].Offset, What: err.Error()}
	}
	lp.experts[x] = ep
	return ep, nil
}

// splitExpert separates an expert's tiles (file order) into its gate/up and
// down tiles, each in file order, copying them into fresh slices.
func splitExpert(ts []cflowfmt.MappedTile) (gu, dn []cflowfmt.MappedTile) {
	for _, t := range ts {
		if t.Matrix == archspec.MatExpertDown {
			dn = append(dn, t)
		} else {
			gu = append(gu, t)
		}
	}
	return gu, dn
}

// expertPlanOf builds expert x of layer l's plans over gu and dn; the plans
// point at those slices' elements, so a staged fetch can rebind their bytes.
func (e *Engine) expertPlanOf(l, x int, gu, dn []cflowfmt.MappedTile) (*expertPlan, error) {
	eff, d := int(e.h.ExpertIntermediateSize), e.d
	what := fmt.Sprintf("layer %d expert %d", l, x)
	ep := &expertPlan{}
	var err error
	if ep.gateUp, err = buildCovering(what+" gate/up", gu, map[archspec.MatrixID]int{archspec.MatExpertGate: 0, archspec.MatExpertUp: 1}, []int{eff, eff}, d); err != nil {
		return nil, err
	}
	if ep.down, err = buildCovering(what+" down", dn, map[archspec.MatrixID]int{archspec.MatExpertDown: 0}, []int{d}, eff); err != nil {
		return nil, err
	}
	ep.bytes = ep.gateUp.bytes + ep.down.bytes
	return ep, nil
}

// sortStripes orders stripes by first row for binary search.
func sortStripes(s []stripe) []stripe {
	out := append([]stripe(nil), s...)
	sort.Slice(out, func(i, j int) bool { return out[i].row < out[j].row })
	return out
}
