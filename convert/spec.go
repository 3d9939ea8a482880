package convert

import (
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strings"

	"github.com/cflow-dev/cflow/archspec"
	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/cflowfmt/tokmeta"
	"github.com/cflow-dev/cflow/engine/plan"
	"github.com/cflow-dev/cflow/quant"
)

// modelSpec is a checkpoint mapped onto the file format: the header, the
// metadata, and what the layout needs per layer.
type modelSpec struct {
	p          *family
	h          cflowfmt.Header
	md         *cflowfmt.Metadata
	blockIters int
	layerKinds []byte // nil: every layer full attention
	kEqV       bool
	steps      []plan.Step // plan.Layout order
	features   []string    // cflowfmt.Feat* the file uses
	cfgFile    string
}

// Default tile geometry: the report's 128×256 (one Q4 tile fits L2 beside
// the activation).
const (
	tileRows = quant.MaxTileRows
	tileCols = quant.MaxTileCols
)

// buildSpec maps family p's decoded config fc (and, for contradiction
// checks, the tensors present) onto a header and metadata: the family
// reshapes the tensors it names (prepare), then its config settles the
// geometry and the family's own facts (apply).
func buildSpec(c *checkpoint, p *family, fc familyConfig, q quant.Type) (*modelSpec, error) {
	if p.prepare != nil {
		if err := p.prepare(c); err != nil {
			return nil, err
		}
	}
	b := fc.base()
	s := &modelSpec{p: p, md: cflowfmt.NewMetadata(), blockIters: 1, cfgFile: b.file}
	g, err := b.sizes()
	if err != nil {
		return nil, err
	}
	g.dd, g.ed = p.denseDelay, p.expertDelay
	if err := fc.geometry(p, &g); err != nil {
		return nil, err
	}
	if err := checkLayerCount(c, b.file, g.L); err != nil {
		return nil, err
	}
	if err := checkWeights(c, p, b.file, &g); err != nil {
		return nil, err
	}
	if g.E == 0 {
		g.ed = 0
	}
	s.h = header(p, g, q)
	if err := s.checkWidths(g); err != nil {
		return nil, err
	}
	if err := s.commonMeta(c, b); err != nil {
		return nil, err
	}
	if err := fc.apply(s, c); err != nil {
		return nil, err
	}
	return s, s.finish()
}

// checkWeights refuses contradictions between the family, the geometry and
// the tensors present: experts the family needs or the config names, a
// dense FFN the family needs. A family without one clears its width.
func checkWeights(c *checkpoint, p *family, file string, g *geom) error {
	nm := p.names
	routerName := nm.name(0, archspec.MatRouter, -1)
	if p.needExperts && (g.E == 0 || !c.has(routerName)) {
		what := "num_experts is 0 or absent in " + file
		if g.E > 0 {
			what = "it has no tensor " + routerName
		}
		return fmt.Errorf("%s: architecture %s needs experts, but the checkpoint has none: %s", c.path, p.name, what)
	}
	if g.E > 0 && !c.has(routerName) {
		return fmt.Errorf("%s: config says %d experts but tensor %s is missing", c.path, g.E, routerName)
	}
	if g.E > 0 && (g.topK == 0 || g.topK > g.E) {
		return fmt.Errorf("%s: num_experts_per_tok %d must be in 1..%d", file, g.topK, g.E)
	}
	if p.noDense {
		g.F = 0
		return nil
	}
	gate := nm.name(0, archspec.MatGate, -1)
	if g.F == 0 || !c.has(gate) {
		return fmt.Errorf("%s: architecture %s needs a dense FFN, but the checkpoint has none (intermediate_size %d, tensor %s present: %v)",
			c.path, p.name, g.F, gate, c.has(gate))
	}
	return nil
}

// header is the geometry as the file's header.
func header(p *family, g geom, q quant.Type) cflowfmt.Header {
	h := cflowfmt.Header{
		Version: cflowfmt.Version, HiddenSize: uint32(g.d), IntermediateSize: uint32(g.F),
		VocabSize: uint32(g.V), NumLayers: uint32(g.L), MaxSeqLen: uint32(g.seq),
		NumHeads: uint16(g.H), NumKVHeads: uint16(g.Hkv), HeadDim: uint16(g.hd),
		NumExperts: uint16(g.E), TopK: uint16(g.topK), ExpertIntermediateSize: uint32(g.Fe),
		TileRows: tileRows, TileCols: tileCols, SlidingWindow: uint32(g.window),
		QuantType: q, DenseDelay: uint8(g.dd), ExpertDelay: uint8(g.ed), CombineStyle: p.combine,
	}
	if g.ghd != g.hd {
		h.GlobalHeadDim = uint16(g.ghd)
	}
	return h
}

// finish records the features the family used, validates the header and
// builds the execution plan the layout follows.
func (s *modelSpec) finish() error {
	h := &s.h
	if len(s.features) > 0 {
		sort.Strings(s.features)
		h.FeatureFlags |= cflowfmt.FlagFeatures
		s.md.SetString(cflowfmt.KeyFeatures, strings.Join(s.features, ","))
	}
	if err := h.Validate(); err != nil {
		return fmt.Errorf("%s: the header this config maps to is invalid: %v", s.cfgFile, err)
	}
	if err := h.CheckWidths(); err != nil {
		return fmt.Errorf("%s: %v", s.cfgFile, err)
	}
	steps, err := plan.Build(plan.FromHeader(h, s.blockIters))
	if err != nil {
		return fmt.Errorf("%s: %v", s.cfgFile, err)
	}
	s.steps = plan.Layout(steps)
	return nil
}

// feature records that the file uses a cflowfmt.Feat* feature.
func (s *modelSpec) feature(f string) {
	for _, x := range s.features {
		if x == f {
			return
		}
	}
	s.features = append(s.features, f)
}

// checkWidths refuses geometry whose numbers do not fit the format's
// fields, before any byte is written.
func (s *modelSpec) checkWidths(g geom) error {
	h, file := &s.h, s.cfgFile
	d, L, H, Hkv, hd, ghd, E, dd, ed := g.d, g.L, g.H, g.Hkv, g.hd, g.ghd, g.E, g.dd, g.ed
	maxIn := max(d, H*max(hd, ghd), int(h.IntermediateSize), int(h.ExpertIntermediateSize))
	switch {
	case maxIn > cflowfmt.MaxInputWidth:
		return fmt.Errorf("%s: an input width of %d columns cannot be addressed by the tile header's u16 col_offset (at most %d columns)", file, maxIn, cflowfmt.MaxInputWidth)
	case L+1 > math.MaxUint16:
		return fmt.Errorf("%s: %d layers exceed the tile header's u16 layer field", file, L)
	case H > math.MaxUint16 || Hkv > math.MaxUint16 || hd > math.MaxUint16 || ghd > math.MaxUint16:
		return fmt.Errorf("%s: heads %d/%d or head dims %d/%d exceed the header's u16 fields", file, H, Hkv, hd, ghd)
	case E >= cflowfmt.NoExpert:
		return fmt.Errorf("%s: %d experts exceed the tile header's u8 expert field (max %d)", file, E, cflowfmt.NoExpert-1)
	case dd > math.MaxUint8 || ed > math.MaxUint8:
		return fmt.Errorf("%s: delays %d/%d exceed the header's u8 fields", file, dd, ed)
	case Hkv == 0 || H%Hkv != 0:
		return fmt.Errorf("%s: num_key_value_heads %d must divide num_attention_heads %d", file, Hkv, H)
	case uint64(h.VocabSize) > math.MaxUint32:
		return fmt.Errorf("%s: vocab %d exceeds u32 row offsets", file, h.VocabSize)
	}
	return nil
}

// commonMeta fills what every family states the same way: name, norm ε and
// RoPE base (both range-checked), tied embeddings, special ids, tokenizer.
func (s *modelSpec) commonMeta(c *checkpoint, b *baseConfig) error {
	h, md, p := &s.h, s.md, s.p
	tied := !c.has(p.names.name(0, archspec.MatLMHead, -1))
	if b.TieWordEmbeddings != nil {
		tied = *b.TieWordEmbeddings
	}
	if tied {
		h.FeatureFlags |= cflowfmt.FlagTiedEmbed
	}
	md.SetString(cflowfmt.KeyArchitecture, p.name)
	// general.name: the hub id (org/model) when the config names one,
	// never a filesystem path, which says where the converter ran, not
	// what the model is.
	name := b.NameOrPath
	if name == "" || strings.HasPrefix(name, "/") || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "~") || strings.Count(name, "/") > 1 {
		if name == "" {
			name = c.path
		}
		name = filepath.Base(strings.TrimRight(filepath.Clean(name), "/"))
	}
	md.SetString(cflowfmt.KeyName, name)
	eps := p.defaultEps
	if b.RMSNormEps != nil {
		eps = *b.RMSNormEps
	}
	// ε is added to a mean of squares: ≤ 0 divides by zero on a zero row,
	// and anything near the activations' scale flattens every norm.
	if !(eps > 0 && eps <= 0.01) {
		return fmt.Errorf("%s: rms_norm_eps = %v, want 0 < ε ≤ 0.01", b.file, eps)
	}
	md.SetF32(cflowfmt.KeyRMSEps, float32(eps))
	theta := b.RopeTheta
	if !(theta > 0) || math.IsInf(theta, 0) {
		return fmt.Errorf("%s: rope_theta = %v, want a finite value > 0", b.file, theta)
	}
	md.SetF32(cflowfmt.KeyRopeTheta, float32(theta))
	for _, id := range []struct {
		key string
		v   tokenID
	}{{cflowfmt.KeyBOS, b.BOS}, {cflowfmt.KeyEOS, b.EOS}} {
		if id.v.set {
			md.SetU32(id.key, id.v.id)
		}
	}
	// Tokenizer: tokenizer.json compiled to the flat form (with
	// tokenizer_config.json's BOS/EOS, chat template and stop ids) when
	// the source has one or --tokenizer names one; a byte-level marker in
	// the config; otherwise none (the runtime then takes token ids, not
	// text).
	tk := strings.ToLower(b.Tokenizer + b.TokenizerType + b.TokenizerClass)
	switch {
	case c.tokenizer != nil:
		if err := tokmeta.Write(md, c.tokenizer, int(h.VocabSize)); err != nil {
			return err
		}
	case strings.Contains(tk, "byte"):
		md.SetString(cflowfmt.KeyTokenizerKind, "byte")
	}
	return nil
}

// setLayerKinds stores one attention kind per layer.
func (s *modelSpec) setLayerKinds(kinds []byte) {
	s.layerKinds = kinds
	s.md.SetBytes(cflowfmt.KeyLayerKinds, kinds)
}

func b2u(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

// full reports whether layer l uses full attention (its own head dim,
// global θ, K = V sharing).
func (s *modelSpec) full(l int) bool {
	return s.layerKinds == nil || l >= len(s.layerKinds) || s.layerKinds[l] == archspec.LayerFull
}

// headDim is layer l's head dimension.
func (s *modelSpec) headDim(l int) int {
	return s.h.Geometry(s.md).HeadDimFor(s.full(l))
}

// hasV reports whether layer l stores a V projection (not with K = V).
func (s *modelSpec) hasV(l int) bool { return !(s.kEqV && s.full(l)) }
