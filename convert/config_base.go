package convert

import "fmt"

// familyConfig is a family's config, decoded once from the source's config
// document (cfgMap.decode) into the family's own struct. Every family's
// struct embeds baseConfig (through its base family's struct: a variant
// embeds its base, ollama's habit) and implements:
//
//   - geometry, the family's adjustments of the sizes every family names the
//     same way (expert widths under its own keys, its window default);
//   - apply, which maps the family's keys onto the spec once the header
//     geometry is known and refuses, by key and value, every
//     computation-changing setting the runtime does not implement.
type familyConfig interface {
	base() *baseConfig
	geometry(p *family, g *geom) error
	apply(s *modelSpec, c *checkpoint) error
}

// baseConfig is what every family's config.json states the same way: the
// geometry, norm ε, RoPE base, tied embeddings, special ids, the model's
// name and a byte-level tokenizer marker. Defaults are filled before
// decoding (newBaseConfig); pointers are keys whose absence matters.
type baseConfig struct {
	file string // the document's name, for messages

	HiddenSize             int      `json:"hidden_size"`
	NumLayers              int      `json:"num_hidden_layers"`
	NumHeads               int      `json:"num_attention_heads"`
	NumKVHeads             *int     `json:"num_key_value_heads"` // default: num_attention_heads
	VocabSize              int      `json:"vocab_size"`
	IntermediateSize       int      `json:"intermediate_size"`
	NumExperts             int      `json:"num_experts"`
	NumLocalExperts        int      `json:"num_local_experts"` // Mixtral's name for it
	ExpertsPerToken        int      `json:"num_experts_per_tok"`
	ExpertIntermediateSize int      `json:"expert_intermediate_size"`
	MaxPositions           int      `json:"max_position_embeddings"`
	HeadDim                *int     `json:"head_dim"` // default: hidden_size / heads
	GlobalHeadDim          int      `json:"global_head_dim"`
	Window                 int      `json:"sliding_window"`
	TieWordEmbeddings      *bool    `json:"tie_word_embeddings"` // default: no lm_head tensor
	NameOrPath             string   `json:"_name_or_path"`
	RMSNormEps             *float64 `json:"rms_norm_eps"` // default: the family's
	RopeTheta              float64  `json:"rope_theta"`
	BOS                    tokenID  `json:"bos_token_id"`
	EOS                    tokenID  `json:"eos_token_id"`
	Tokenizer              string   `json:"tokenizer"`
	TokenizerType          string   `json:"tokenizer_type"`
	TokenizerClass         string   `json:"tokenizer_class"`
}

func (b *baseConfig) base() *baseConfig { return b }

// baseDefaults are the values of keys a config may omit.
var baseDefaults = baseConfig{MaxPositions: 2048, RopeTheta: 10000}

// geom is the header geometry as the config states it, before the format
// checks, with the combine delays.
type geom struct {
	d, L, H, Hkv, V, F, E, topK, Fe, seq, hd, ghd, window int
	dd, ed                                                int
}

// sizes derives the sizes every family names the same way and refuses
// a config missing one the header cannot do without.
func (b *baseConfig) sizes() (geom, error) {
	g := geom{d: b.HiddenSize, L: b.NumLayers, H: b.NumHeads, V: b.VocabSize, F: b.IntermediateSize,
		E: b.NumExperts, topK: b.ExpertsPerToken, Fe: b.ExpertIntermediateSize, seq: b.MaxPositions,
		ghd: b.GlobalHeadDim, window: b.Window}
	g.Hkv = g.H
	if b.NumKVHeads != nil {
		g.Hkv = *b.NumKVHeads
	}
	if g.E == 0 {
		g.E = b.NumLocalExperts
	}
	if g.H > 0 {
		g.hd = g.d / g.H
		if b.HeadDim != nil {
			g.hd = *b.HeadDim
		}
	}
	for _, k := range []struct {
		key string
		v   int
	}{{"hidden_size", g.d}, {"num_hidden_layers", g.L}, {"num_attention_heads", g.H}, {"vocab_size", g.V}} {
		if k.v == 0 {
			return g, fmt.Errorf("%s: missing or zero %q", b.file, k.key)
		}
	}
	if g.E > 0 && g.Fe == 0 {
		g.Fe = g.F
	}
	return g, nil
}

// geometry is the default adjustment: none.
func (b *baseConfig) geometry(*family, *geom) error { return nil }
