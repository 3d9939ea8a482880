package archspec

// Geometry is the shape of a model: the sizes that fix every matrix's
// [out, in] shape, per layer. The formats fill it from their header and
// metadata (Header.Geometry), so the shape rules (mixed head dims, the full
// layers' own KV heads) are stated once, here, and the converter, the
// engine, gguf export and analyze ask it instead of re-deriving them.
type Geometry struct {
	NumLayers              int
	HiddenSize             int // d
	IntermediateSize       int // dense FFN width; 0 = no dense FFN
	VocabSize              int
	NumHeads               int // query heads
	NumKVHeads             int
	HeadDim                int
	GlobalHeadDim          int // head dim of full-attention layers; 0 = HeadDim
	GlobalKVHeads          int // KV heads of full-attention layers; 0 = NumKVHeads
	NumExperts             int // 0 = no MoE
	ExpertIntermediateSize int
	// LayerKinds holds one LayerFull/LayerSliding byte per layer; nil means
	// every layer is full attention.
	LayerKinds []byte
}

// IsFull reports whether layer l is a full-attention layer (true for every
// layer when LayerKinds is absent, and for l outside it).
func (g Geometry) IsFull(l int) bool {
	return l < 0 || l >= len(g.LayerKinds) || g.LayerKinds[l] == LayerFull
}

// HeadDimFor returns the head dim of a layer of the given kind, so callers
// need not remember that GlobalHeadDim 0 means "same as HeadDim".
func (g Geometry) HeadDimFor(full bool) int {
	if full && g.GlobalHeadDim != 0 {
		return g.GlobalHeadDim
	}
	return g.HeadDim
}

// KVHeads is the KV-head count of a layer of the given kind: NumKVHeads, or
// GlobalKVHeads on full layers when set.
func (g Geometry) KVHeads(full bool) int {
	if full && g.GlobalKVHeads > 0 {
		return g.GlobalKVHeads
	}
	return g.NumKVHeads
}

// MatrixShape is the [out, in] shape of matrix m in layer l. Attention
// shapes use the layer's head dim and KV heads; norms are 1 × d.
func (g Geometry) MatrixShape(l int, m MatrixID) (rows, cols int) {
	full := g.IsFull(l)
	hd := g.HeadDimFor(full)
	if (m == MatK || m == MatV) && l < g.NumLayers {
		return g.KVHeads(full) * hd, g.HiddenSize
	}
	return g.matrixShape(hd, m)
}

// MatrixBounds is the largest shape matrix m can have in any layer (the
// larger head dim for attention), for checks made before the per-layer
// kinds are known.
func (g Geometry) MatrixBounds(m MatrixID) (rows, cols int) {
	return g.matrixShape(max(g.HeadDim, g.GlobalHeadDim), m)
}

func (g Geometry) matrixShape(hd int, m MatrixID) (rows, cols int) {
	d := g.HiddenSize
	switch m {
	case MatQ:
		return g.NumHeads * hd, d
	case MatK, MatV:
		return g.NumKVHeads * hd, d
	case MatO:
		return d, g.NumHeads * hd
	case MatGate, MatUp:
		return g.IntermediateSize, d
	case MatDown:
		return d, g.IntermediateSize
	case MatRouter:
		return g.NumExperts, d
	case MatExpertGate, MatExpertUp:
		return g.ExpertIntermediateSize, d
	case MatExpertDown:
		return d, g.ExpertIntermediateSize
	case MatEmbed, MatLMHead:
		return g.VocabSize, d
	case MatAttnNorm, MatFFNNorm, MatMoENorm, MatFinalNorm:
		return 1, d
	}
	return 0, 0
}
