package convert

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"

	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/quant"
	"github.com/cflow-dev/cflow/runtime/plan"
)

// modelSpec is a checkpoint mapped onto the file format: the header, the
// metadata, and what the layout needs per layer.
type modelSpec struct {
	p          *preset
	h          cflowfmt.Header
	md         *cflowfmt.Metadata
	blockIters int
	layerKinds []byte // nil: every layer full attention
	kEqV       bool
	steps      []plan.Step // plan.Layout order
}

// Default tile geometry: the report's 128×256 (one Q4 tile fits L2 beside
// the activation).
const (
	tileRows = quant.MaxTileRows
	tileCols = quant.MaxTileCols
)

// buildSpec maps config.json (and, for contradiction checks, the tensors
// present) onto a header. force is the --model name, "" to detect.
func buildSpec(c *checkpoint, force string, q quant.Type) (*modelSpec, error) {
	cfg := c.cfg
	detected, detErr := detectPreset(cfg)
	p := detected
	if force != "" {
		fp, ok := lookupPreset(force)
		if !ok {
			return nil, fmt.Errorf("--model %q: unknown architecture (known: %s)", force, strings.Join(Architectures(), ", "))
		}
		p = fp
	} else if detErr != nil {
		return nil, detErr
	}
	// The config's own pipeline keys describe its own architecture; a
	// forced different preset uses the preset's defaults instead.
	own := detected != nil && detected.name == p.name
	s := &modelSpec{p: p, md: cflowfmt.NewMetadata(), blockIters: 1}
	h := &s.h
	var err error
	geti := func(key string, def int) int {
		if err != nil {
			return 0
		}
		var v int
		v, err = cfg.int(key, def)
		return v
	}
	d := geti("hidden_size", 0)
	L := geti("num_hidden_layers", 0)
	H := geti("num_attention_heads", 0)
	Hkv := geti("num_key_value_heads", H)
	V := geti("vocab_size", 0)
	F := geti("intermediate_size", 0)
	E := geti("num_experts", 0)
	if E == 0 {
		E = geti("num_local_experts", 0)
	}
	topK := geti("num_experts_per_tok", 0)
	Fe := geti("expert_intermediate_size", 0)
	seq := geti("max_position_embeddings", 2048)
	hd := 0
	if H > 0 {
		hd = geti("head_dim", d/H)
	}
	ghd := geti("global_head_dim", 0)
	window := geti("sliding_window", 0)
	if err != nil {
		return nil, err
	}
	for _, k := range []struct {
		key string
		v   int
	}{{"hidden_size", d}, {"num_hidden_layers", L}, {"num_attention_heads", H}, {"vocab_size", V}} {
		if k.v == 0 {
			return nil, fmt.Errorf("%s: missing or zero %q", cfg.file, k.key)
		}
	}
	if p.mixtral && Fe == 0 {
		Fe, F = F, 0 // Mixtral's intermediate_size is the expert width
	}
	if E > 0 && Fe == 0 {
		Fe = F
	}
	// Contradictions between the preset and the checkpoint.
	nm := naming{mixtral: p.mixtral}
	routerName := nm.name(0, cflowfmt.MatRouter, -1)
	if p.needExperts && (E == 0 || !c.has(routerName)) {
		what := "num_experts is 0 or absent in " + cfg.file
		if E > 0 {
			what = "it has no tensor " + routerName
		}
		return nil, fmt.Errorf("%s: architecture %s needs experts, but the checkpoint has none: %s", c.path, p.name, what)
	}
	if E > 0 && !c.has(routerName) {
		return nil, fmt.Errorf("%s: config says %d experts but tensor %s is missing (wrong --model? mixtral names them block_sparse_moe.*)", c.path, E, routerName)
	}
	if E > 0 && (topK == 0 || topK > E) {
		return nil, fmt.Errorf("%s: num_experts_per_tok %d must be in 1..%d", cfg.file, topK, E)
	}
	if p.noDense {
		F = 0
	} else {
		gate := nm.name(0, cflowfmt.MatGate, -1)
		if F == 0 || !c.has(gate) {
			return nil, fmt.Errorf("%s: architecture %s needs a dense FFN, but the checkpoint has none (intermediate_size %d, tensor %s present: %v)",
				c.path, p.name, F, gate, c.has(gate))
		}
	}
	// Combine style and delays.
	dd, ed := p.denseDelay, p.expertDelay
	if own {
		if cs, ok, err := configCombine(cfg); err != nil {
			return nil, err
		} else if ok && cs != p.combine {
			return nil, fmt.Errorf("%s: combine_style %s contradicts architecture %s (%s)", cfg.file, cs, p.name, p.combine)
		}
		if dd, err = cfg.int("dense_delay", dd); err != nil {
			return nil, err
		}
		if ed, err = cfg.int("expert_delay", ed); err != nil {
			return nil, err
		}
	}
	if E == 0 {
		ed = 0
	}
	*h = cflowfmt.Header{
		Version: cflowfmt.Version, HiddenSize: uint32(d), IntermediateSize: uint32(F),
		VocabSize: uint32(V), NumLayers: uint32(L), MaxSeqLen: uint32(seq),
		NumHeads: uint16(H), NumKVHeads: uint16(Hkv), HeadDim: uint16(hd),
		NumExperts: uint16(E), TopK: uint16(topK), ExpertIntermediateSize: uint32(Fe),
		TileRows: tileRows, TileCols: tileCols, SlidingWindow: uint32(window),
		QuantType: q, DenseDelay: uint8(dd), ExpertDelay: uint8(ed), CombineStyle: p.combine,
	}
	if ghd != hd {
		h.GlobalHeadDim = uint16(ghd)
	}
	if err := s.checkWidths(cfg.file, d, L, H, Hkv, hd, ghd, E, dd, ed); err != nil {
		return nil, err
	}
	if err := s.flagsAndMeta(c, p, own); err != nil {
		return nil, err
	}
	if err := h.Validate(); err != nil {
		return nil, fmt.Errorf("%s: the header this config maps to is invalid: %v", cfg.file, err)
	}
	if err := h.CheckWidths(); err != nil {
		return nil, fmt.Errorf("%s: %v", cfg.file, err)
	}
	steps, err := plan.Build(plan.FromHeader(h, s.blockIters))
	if err != nil {
		return nil, fmt.Errorf("%s: %v", cfg.file, err)
	}
	s.steps = plan.Layout(steps)
	return s, nil
}

// checkWidths refuses geometry whose numbers do not fit the format's
// fields, before any byte is written.
func (s *modelSpec) checkWidths(file string, d, L, H, Hkv, hd, ghd, E, dd, ed int) error {
	h := &s.h
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

// flagsAndMeta fills feature flags, soft-cap and the metadata keys.
func (s *modelSpec) flagsAndMeta(c *checkpoint, p *preset, own bool) error {
	cfg, h, md := c.cfg, &s.h, s.md
	var err error
	flag := func(key string, bit uint8, def bool) {
		if err != nil {
			return
		}
		var on bool
		if on, err = cfg.boolean(key, def); on {
			h.FeatureFlags |= bit
		}
	}
	gemma := p.name == "gemma4"
	flag("use_embedding_scale", cflowfmt.FlagEmbedScale, false)
	flag("use_v_norm", cflowfmt.FlagVNorm, false)
	flag("tie_word_embeddings", cflowfmt.FlagTiedEmbed, !c.has("lm_head.weight"))
	if err != nil {
		return err
	}
	if act := strings.ToLower(cfg.str("hidden_act") + cfg.str("hidden_activation")); strings.HasPrefix(act, "gelu") {
		h.FeatureFlags |= cflowfmt.FlagGELU
	}
	sc, err := cfg.float("final_logit_softcapping", 0)
	if err != nil {
		return err
	}
	h.FinalLogitSoftcap = float32(sc)

	md.SetString(cflowfmt.KeyArchitecture, p.name)
	name := cfg.str("_name_or_path")
	if name == "" {
		name = filepath.Base(strings.TrimSuffix(c.path, "/"))
	}
	md.SetString(cflowfmt.KeyName, name)
	defEps := 1e-6 // pipeline-native default (spec, "Common blocks")
	if p.name == "llama" || p.name == "mixtral" {
		defEps = 1e-5
	}
	fl := func(key, cfgKey string, def float64, always bool) {
		if err != nil || !(always || cfg.present(cfgKey)) {
			return
		}
		var v float64
		v, err = cfg.float(cfgKey, def)
		md.SetF32(key, float32(v))
	}
	fl(cflowfmt.KeyRMSEps, "rms_norm_eps", defEps, true)
	fl(cflowfmt.KeyRopeTheta, "rope_theta", 10000, true)
	fl(cflowfmt.KeyRopeThetaGlobal, "rope_theta_global", 1e6, gemma)
	fl(cflowfmt.KeyRopePartial, "partial_rotary_factor", 0.25, gemma)
	if err != nil {
		return err
	}
	if p.combine.MergesStreams() {
		mi, err := cfg.int("merge_interval", 3)
		if err != nil {
			return err
		}
		if mi == 0 {
			return fmt.Errorf("%s: merge_interval must be ≥ 1", cfg.file)
		}
		md.SetU32(cflowfmt.KeyMergeInterval, uint32(mi))
	}
	if p.name == "arch5_fixed_point" {
		bi, err := cfg.int("block_iterations", 3)
		if err != nil {
			return err
		}
		if bi == 0 {
			return fmt.Errorf("%s: block_iterations must be ≥ 1", cfg.file)
		}
		s.blockIters = bi
		md.SetU32(cflowfmt.KeyBlockIterations, uint32(bi))
	}
	lt, err := cfg.strings("layer_types")
	if err != nil {
		return err
	}
	if lt != nil {
		if len(lt) != int(h.NumLayers) {
			return fmt.Errorf("%s: layer_types has %d entries for %d layers", cfg.file, len(lt), h.NumLayers)
		}
		s.layerKinds = make([]byte, len(lt))
		for i, k := range lt {
			switch k {
			case "full_attention":
				s.layerKinds[i] = cflowfmt.LayerFull
			case "sliding_attention":
				s.layerKinds[i] = cflowfmt.LayerSliding
			default:
				return fmt.Errorf("%s: layer_types[%d] = %q, want full_attention or sliding_attention", cfg.file, i, k)
			}
		}
		md.SetBytes(cflowfmt.KeyLayerKinds, s.layerKinds)
	}
	if s.kEqV, err = cfg.boolean("attention_k_eq_v", false); err != nil {
		return err
	}
	if cfg.present("attention_k_eq_v") {
		md.SetU32(cflowfmt.KeyKEqV, b2u(s.kEqV))
	}
	for _, id := range []struct{ key, cfgKey string }{{cflowfmt.KeyBOS, "bos_token_id"}, {cflowfmt.KeyEOS, "eos_token_id"}} {
		v, ok, err := cfg.num(id.cfgKey)
		if err != nil {
			return err
		}
		if ok && v >= 0 && v <= math.MaxUint32 {
			md.SetU32(id.key, uint32(v))
		}
	}
	// Tokenizer: tokenizer.json verbatim when the directory has one; a
	// byte-level marker in config.json; otherwise none (the runtime then
	// takes token ids, not text).
	tk := strings.ToLower(cfg.str("tokenizer") + cfg.str("tokenizer_type") + cfg.str("tokenizer_class"))
	switch {
	case c.tokenizer != nil:
		md.SetString(cflowfmt.KeyTokenizerKind, "hf-bpe")
		md.SetBytes(cflowfmt.KeyTokenizerData, c.tokenizer)
	case strings.Contains(tk, "byte"):
		md.SetString(cflowfmt.KeyTokenizerKind, "byte")
	}
	_ = own
	return nil
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
	return s.layerKinds == nil || l >= len(s.layerKinds) || s.layerKinds[l] == cflowfmt.LayerFull
}

// headDim is layer l's head dimension.
func (s *modelSpec) headDim(l int) int {
	return s.h.HeadDimFor(s.full(l))
}

// hasV reports whether layer l stores a V projection (not with K = V).
func (s *modelSpec) hasV(l int) bool { return !(s.kEqV && s.full(l)) }
