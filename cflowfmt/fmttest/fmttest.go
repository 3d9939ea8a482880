// Package fmttest generates small random models and writes them with the
// format writers, so the readers' tests, the fuzz seeds and the CLI tests
// all start from real files and an independent list of what was written.
// Tiles are derived from the spec alone (not from any reader), which makes
// the generator the truth a round trip is compared against.
package fmttest

import (
	"hash/fnv"
	"math/rand"
	randv2 "math/rand/v2"

	"github.com/cflow-dev/cflow/archspec"
	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/internal/tileimage"
	"github.com/cflow-dev/cflow/quant"
)

// Spec is a random model: a header, metadata and a seed from which every
// tile's weights are derived deterministically.
type Spec struct {
	Header cflowfmt.Header
	Meta   *cflowfmt.Metadata
	Seed   int64
}

// Tile is one tile as written: the header and the encoded bytes.
type Tile struct {
	TH cflowfmt.TileHeader
	T  quant.Tile
}

// Random draws a small model of quant type q: odd widths (partial tiles and
// partial groups), optional dense FFN, optional MoE, tied or untied
// embeddings, sometimes mixed sliding/full attention with a global head dim
// and K = V sharing.
func Random(r *rand.Rand, q quant.Type) *Spec {
	pick := func(xs ...int) int { return xs[r.Intn(len(xs))] }
	kv := 1 + r.Intn(2)
	h := cflowfmt.Header{
		Version:          cflowfmt.Version,
		HiddenSize:       uint32(8 + r.Intn(300)),
		VocabSize:        uint32(1 + r.Intn(200)),
		NumLayers:        uint32(1 + r.Intn(3)),
		MaxSeqLen:        64,
		NumKVHeads:       uint16(kv),
		NumHeads:         uint16(kv * (1 + r.Intn(2))),
		HeadDim:          uint16(2 * (1 + r.Intn(24))),
		TileRows:         uint16(pick(1, 7, 16, 64, 128)),
		TileCols:         uint16(pick(32, 64, 96, 256)),
		QuantType:        q,
		CombineStyle:     archspec.CombineStyle(r.Intn(6)),
		FeatureFlags:     uint8(r.Intn(16)),
		SlidingWindow:    uint32(r.Intn(2) * 8),
		IntermediateSize: uint32(pick(0, 1+r.Intn(300))),
	}
	if h.IntermediateSize == 0 || r.Intn(2) == 0 {
		h.NumExperts = uint16(2 + r.Intn(4))
		h.TopK = uint16(1 + r.Intn(int(h.NumExperts)))
		h.ExpertIntermediateSize = uint32(1 + r.Intn(100))
	}
	if h.CombineStyle.DelaysDense() {
		h.DenseDelay = 1
	}
	md := cflowfmt.NewMetadata()
	md.SetString(cflowfmt.KeyArchitecture, "fmttest")
	md.SetF32(cflowfmt.KeyRMSEps, 1e-6)
	md.SetBytes(cflowfmt.KeyTokenizerData, make([]byte, r.Intn(3000)))
	if r.Intn(3) == 0 {
		h.GlobalHeadDim = h.HeadDim + 2*uint16(1+r.Intn(8))
		kinds := make([]byte, h.NumLayers)
		for i := range kinds {
			kinds[i] = byte(r.Intn(2))
		}
		md.SetBytes(cflowfmt.KeyLayerKinds, kinds)
		md.SetU32(cflowfmt.KeyKEqV, uint32(r.Intn(2)))
	}
	if r.Intn(2) == 0 {
		md.SetBytes(cflowfmt.KeyNUMAPlan, []byte(`{"nodes":1,"policy":"numa-tp"}`))
	}
	return &Spec{Header: h, Meta: md, Seed: r.Int63()}
}

// rng is a cheap deterministic generator per tile (PCG seeding is O(1);
// math/rand's is not, and dominated test time).
func (s *Spec) rng(parts ...int) *randv2.Rand {
	f := fnv.New64a()
	var b [8]byte
	for _, p := range append([]int{int(s.Seed)}, parts...) {
		for i := range b {
			b[i] = byte(uint64(p) >> (8 * i))
		}
		f.Write(b[:])
	}
	return randv2.New(randv2.NewPCG(f.Sum64(), uint64(s.Seed)))
}

// Norm is the norm vector m of layer l (l = NumLayers for the final norm).
func (s *Spec) Norm(l int, m archspec.MatrixID) []float32 {
	r := s.rng(l, int(m), -1)
	v := make([]float32, s.Header.HiddenSize)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

// HasV reports whether layer l stores V (not under K = V sharing).
func (s *Spec) HasV(l int) bool {
	kinds := s.Meta.Bytes(cflowfmt.KeyLayerKinds)
	full := kinds == nil || kinds[l] == archspec.LayerFull
	return !(full && s.Meta.U32(cflowfmt.KeyKEqV, 0) == 1)
}

// stripes returns matrix m's tiles, output stripe by stripe, several
// matrices interleaved by stripe (Q/K/V, gate/up).
func (s *Spec) stripes(l, expert int, ms ...archspec.MatrixID) []Tile {
	h := &s.Header
	var out []Tile
	for r0 := 0; ; r0 += int(h.TileRows) {
		any := false
		for _, m := range ms {
			rows, cols := h.Geometry(s.Meta).MatrixShape(l, m)
			if r0 >= rows {
				continue
			}
			any = true
			for c0 := 0; c0 < cols; c0 += int(h.TileCols) {
				out = append(out, s.tile(l, expert, m, r0, c0, min(int(h.TileRows), rows-r0), min(int(h.TileCols), cols-c0)))
			}
		}
		if !any {
			return out
		}
	}
}

func (s *Spec) tile(l, expert int, m archspec.MatrixID, r0, c0, rows, cols int) Tile {
	r := s.rng(l, int(m), expert, r0, c0)
	w := make([]float32, rows*cols)
	for i := range w {
		w[i] = float32(r.NormFloat64())
	}
	q := cflowfmt.TileQuant(m, s.Header.QuantType)
	th := cflowfmt.TileHeader{Layer: uint16(l), Matrix: m, Expert: cflowfmt.NoExpert,
		RowOffset: uint32(r0), ColOffset: uint16(c0), Rows: uint16(rows), Cols: uint16(cols)}
	if expert >= 0 {
		th.Expert = uint8(expert)
	}
	if q != quant.F32 {
		th.QuantGroup = quant.GroupSize
	}
	return Tile{TH: th, T: quant.Encode(q, w, rows, cols, cols)}
}

func (s *Spec) norm(l int, m archspec.MatrixID) []Tile {
	ths, ts := tileimage.NormTiles(l, m, s.Norm(l, m), int(s.Header.TileCols))
	out := make([]Tile, len(ths))
	for i := range ths {
		out[i] = Tile{ths[i], ts[i]}
	}
	return out
}

// Stream lists the tiles of one non-expert stream in file order (norms
// first, then QKV / gate-up interleaved by stripe, then O / down; the MoE
// stream is its norm then the router). slot is a layer-entry slot
// (SlotAttn, SlotDense, SlotMoE) or, for l == NumLayers, a vocabulary slot.
// Empty when the model has no such stream.
func (s *Spec) Stream(l, slot int) []Tile {
	h := &s.Header
	if l == int(h.NumLayers) {
		switch slot {
		case cflowfmt.SlotEmbed:
			return s.stripes(l, -1, archspec.MatEmbed)
		case cflowfmt.SlotLMHead:
			if h.Has(cflowfmt.FlagTiedEmbed) {
				return nil
			}
			return s.stripes(l, -1, archspec.MatLMHead)
		case cflowfmt.SlotFinalNorm:
			return s.norm(l, archspec.MatFinalNorm)
		}
		return nil
	}
	var out []Tile
	switch slot {
	case cflowfmt.SlotAttn:
		out = s.norm(l, archspec.MatAttnNorm)
		qkv := []archspec.MatrixID{archspec.MatQ, archspec.MatK}
		if s.HasV(l) {
			qkv = append(qkv, archspec.MatV)
		}
		out = append(out, s.stripes(l, -1, qkv...)...)
		out = append(out, s.stripes(l, -1, archspec.MatO)...)
	case cflowfmt.SlotDense:
		if h.IntermediateSize == 0 {
			return nil
		}
		out = s.norm(l, archspec.MatFFNNorm)
		out = append(out, s.stripes(l, -1, archspec.MatGate, archspec.MatUp)...)
		out = append(out, s.stripes(l, -1, archspec.MatDown)...)
	case cflowfmt.SlotMoE:
		if h.NumExperts == 0 {
			return nil
		}
		if id, ok := h.MoESlotNorm(); ok {
			out = s.norm(l, id)
		}
		out = append(out, s.stripes(l, -1, archspec.MatRouter)...)
	}
	return out
}

// Expert lists expert e of layer l's tiles: gate, up, down.
func (s *Spec) Expert(l, e int) []Tile {
	out := s.stripes(l, e, archspec.MatExpertGate)
	out = append(out, s.stripes(l, e, archspec.MatExpertUp)...)
	return append(out, s.stripes(l, e, archspec.MatExpertDown)...)
}

// WriteCflow writes the model as .cflow with slots and experts in an order
// shuffled by r (nil: layer order) and returns every tile written, keyed by
// the file offset the writer put it at.
func WriteCflow(path string, s *Spec, r *rand.Rand) (map[int64]Tile, error) {
	w, err := cflowfmt.Create(path, s.Header, s.Meta)
	if err != nil {
		return nil, err
	}
	at := map[int64]Tile{}
	put := func(ts []Tile) error {
		for _, t := range ts {
			if err := w.WriteTile(t.TH, &t.T); err != nil {
				return err
			}
			// The tile starts where its bytes end minus its size.
			at[w.Offset()-int64(cflowfmt.TileSize(t.T.Type, t.T.Rows, t.T.Cols))] = t
		}
		return nil
	}
	L := int(s.Header.NumLayers)
	type job struct{ l, slot int }
	var jobs []job
	for l := 0; l <= L; l++ {
		for _, sl := range []int{0, 1, 2, cflowfmt.SlotExpertBank} {
			if l == L && sl == cflowfmt.SlotExpertBank || l < L && sl == cflowfmt.SlotExpertBank && s.Header.NumExperts == 0 {
				continue
			}
			jobs = append(jobs, job{l, sl})
		}
	}
	if r != nil {
		r.Shuffle(len(jobs), func(i, j int) { jobs[i], jobs[j] = jobs[j], jobs[i] })
	}
	for _, j := range jobs {
		if err := w.BeginSlot(j.l, j.slot); err != nil {
			w.Abort()
			return nil, err
		}
		if j.l < L && j.slot == cflowfmt.SlotExpertBank {
			order := make([]int, s.Header.NumExperts)
			for i := range order {
				order[i] = i
			}
			if r != nil {
				r.Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })
			}
			for _, e := range order {
				if err := w.BeginExpert(e); err == nil {
					err = put(s.Expert(j.l, e))
				}
				if err != nil {
					w.Abort()
					return nil, err
				}
			}
		} else if err := put(s.Stream(j.l, j.slot)); err != nil {
			w.Abort()
			return nil, err
		}
		if err := w.EndSlot(); err != nil {
			w.Abort()
			return nil, err
		}
	}
	return at, w.Close()
}

// VflowWriter is the subset of vflowfmt.Writer WriteVflow drives; taking
// an interface keeps this package free of a vflowfmt import cycle in tests.
type VflowWriter interface {
	BeginGroupStage(g, st int) error
	BeginVocab(slot int) error
	BeginExpert(l, e int) error
	WriteTile(th cflowfmt.TileHeader, t *quant.Tile) error
	Offset() int64
	Close() error
	Abort()
}

// Group is a vertical group as WriteVflow needs it.
type Group struct{ First, Count int }

// WriteVflow writes the model through w, stage-major per group, then the
// vocabulary slots and experts in an order shuffled by r (nil: in order),
// and returns every tile written keyed by its offset.
func WriteVflow(w VflowWriter, groups []Group, s *Spec, r *rand.Rand) (map[int64]Tile, error) {
	at := map[int64]Tile{}
	fail := func(err error) (map[int64]Tile, error) {
		w.Abort()
		return nil, err
	}
	put := func(ts []Tile) error {
		for _, t := range ts {
			if err := w.WriteTile(t.TH, &t.T); err != nil {
				return err
			}
			at[w.Offset()-int64(cflowfmt.TileSize(t.T.Type, t.T.Rows, t.T.Cols))] = t
		}
		return nil
	}
	for gi, g := range groups {
		for st := 0; st < 3; st++ {
			if err := w.BeginGroupStage(gi, st); err != nil {
				return fail(err)
			}
			for l := g.First; l < g.First+g.Count; l++ {
				if err := put(s.Stream(l, st)); err != nil {
					return fail(err)
				}
			}
		}
	}
	L, E := int(s.Header.NumLayers), int(s.Header.NumExperts)
	jobs := []int{-1, -2, -3}
	for i := 0; i < L*E; i++ {
		jobs = append(jobs, i)
	}
	if r != nil {
		r.Shuffle(len(jobs), func(i, j int) { jobs[i], jobs[j] = jobs[j], jobs[i] })
	}
	for _, j := range jobs {
		var err error
		if j < 0 {
			slot := -j - 1
			if err = w.BeginVocab(slot); err == nil {
				err = put(s.Stream(L, slot))
			}
		} else if err = w.BeginExpert(j/E, j%E); err == nil {
			err = put(s.Expert(j/E, j%E))
		}
		if err != nil {
			return fail(err)
		}
	}
	return at, w.Close()
}

// Tiny is a fixed model of a few KB for fuzz seeds and CLI tests (the
// fuzzer minimizes every new input, so seeds must be small): 2 layers,
// d = 34 (a partial group), 1/1 heads of dim 4, dense FFN 8, vocab 5, 8×32
// tiles, and with moe two experts of width 4 (DelayedSum, so moe_norm
// exists). mixed makes layer 1 sliding, gives full layers a larger head
// dim and ties the embeddings.
func Tiny(q quant.Type, moe, mixed bool) *Spec {
	h := cflowfmt.Header{
		Version: cflowfmt.Version, HiddenSize: 34, IntermediateSize: 8, VocabSize: 5,
		NumLayers: 2, MaxSeqLen: 16, NumHeads: 1, NumKVHeads: 1, HeadDim: 4,
		TileRows: 8, TileCols: 32, QuantType: q, CombineStyle: archspec.PreNorm,
	}
	md := cflowfmt.NewMetadata()
	md.SetString(cflowfmt.KeyArchitecture, "tiny")
	md.SetF32(cflowfmt.KeyRMSEps, 1e-5)
	// No tokenizer.kind: a byte tokenizer needs 256 ids and vocab is 5;
	// the data bytes stay so inspect shows a bytes value.
	md.SetBytes(cflowfmt.KeyTokenizerData, []byte("0123456789abcdef"))
	md.SetBytes(cflowfmt.KeyNUMAPlan, []byte(`{"nodes":1,"policy":"numa-tp"}`))
	if moe {
		h.NumExperts, h.TopK, h.ExpertIntermediateSize = 2, 1, 4
		h.CombineStyle, h.DenseDelay, h.ExpertDelay = archspec.DelayedSum, 1, 1
	}
	if mixed {
		h.GlobalHeadDim = 6
		h.SlidingWindow = 4
		h.FeatureFlags = cflowfmt.FlagTiedEmbed
		md.SetBytes(cflowfmt.KeyLayerKinds, []byte{archspec.LayerFull, archspec.LayerSliding})
	}
	return &Spec{Header: h, Meta: md, Seed: 1}
}
