package convert

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/cflow-dev/cflow/internal/fileio"
)

// MoEGeometry is a pipeline-native DelayedSum (arch2_4_combined) model size
// for synthetic checkpoints: the Llama-shaped trunk plus a routed expert
// bank whose expert outputs join the residual ExpertDelay layers later.
type MoEGeometry struct {
	Geometry
	Experts, TopK, ExpertFFN int
	DenseDelay, ExpertDelay  int
}

// moeGeometries are the sizes `cflowc dev synth-moe --geometry` accepts.
// "arch2_4-2k" is the disk-tier benchmark of docs/PERFORMANCE.md's expert
// I/O section: the report's arch2_4 shape at d 2048 with a 3.6 GB Q4_0
// expert bank (16 layers × 32 experts of width 2048, top-2), too large to
// stay cached next to everything else and read with O_DIRECT anyway;
// "tiny" is for tests.
var moeGeometries = map[string]MoEGeometry{
	"arch2_4-2k": {Geometry: Geometry{Hidden: 2048, Layers: 16, FFN: 8192, Heads: 16, KVHeads: 4, Vocab: 32000},
		Experts: 32, TopK: 2, ExpertFFN: 2048, DenseDelay: 1, ExpertDelay: 2},
	"tiny": {Geometry: Geometry{Hidden: 256, Layers: 4, FFN: 512, Heads: 8, KVHeads: 2, Vocab: 1000},
		Experts: 8, TopK: 2, ExpertFFN: 256, DenseDelay: 1, ExpertDelay: 2},
}

// MoEGeometryByName looks up a size `cflowc dev synth-moe --geometry`
// accepts (MoEGeometryNames lists them).
func MoEGeometryByName(name string) (MoEGeometry, bool) {
	g, ok := moeGeometries[name]
	return g, ok
}

// MoEGeometryNames lists the MoE geometries' names for help text.
func MoEGeometryNames() []string {
	var out []string
	for k := range moeGeometries {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// SynthesizeMoE writes config.json and seeded random weights for an
// arch2_4_combined checkpoint into dir, with Synthesize's value recipe
// (o.Geometry and o.Shards are ignored; g sets the size). Like Synthesize
// it exercises throughput — here the expert tier's reads — not quality.
func SynthesizeMoE(dir string, g MoEGeometry, o SynthOptions) error {
	if g.Experts <= 0 || g.TopK <= 0 || g.TopK > g.Experts || g.ExpertFFN <= 0 || g.Experts > 255 {
		return fmt.Errorf("synth: bad expert geometry %+v", g)
	}
	if g.Hidden <= 0 || g.Layers <= 0 || g.Heads <= 0 || g.KVHeads <= 0 || g.Hidden%g.Heads != 0 || g.FFN <= 0 || g.Vocab <= 0 {
		return fmt.Errorf("synth: bad geometry %+v", g.Geometry)
	}
	dt := "F16"
	if o.DType != "" && o.DType != "f16" && o.DType != "F16" {
		return fmt.Errorf("synth: the MoE checkpoint is f16 only (got %q)", o.DType)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	hd, d := g.Hidden/g.Heads, g.Hidden
	var ts []STTensor
	add := func(name string, norm bool, shape ...int) {
		ts = append(ts, randomTensor(name, dt, o.Seed, norm, shape...))
	}
	add("model.embed_tokens.weight", false, g.Vocab, d)
	for l := 0; l < g.Layers; l++ {
		p := fmt.Sprintf("model.layers.%d.", l)
		add(p+"input_layernorm.weight", true, d)
		add(p+"self_attn.q_proj.weight", false, g.Heads*hd, d)
		add(p+"self_attn.k_proj.weight", false, g.KVHeads*hd, d)
		add(p+"self_attn.v_proj.weight", false, g.KVHeads*hd, d)
		add(p+"self_attn.o_proj.weight", false, d, g.Heads*hd)
		add(p+"post_attention_layernorm.weight", true, d)
		add(p+"mlp.gate_proj.weight", false, g.FFN, d)
		add(p+"mlp.up_proj.weight", false, g.FFN, d)
		add(p+"mlp.down_proj.weight", false, d, g.FFN)
		add(p+"moe_norm.weight", true, d)
		add(p+"moe.router.weight", false, g.Experts, d)
		for e := 0; e < g.Experts; e++ {
			q := fmt.Sprintf("%smoe.experts.%d.", p, e)
			add(q+"gate_proj.weight", false, g.ExpertFFN, d)
			add(q+"up_proj.weight", false, g.ExpertFFN, d)
			add(q+"down_proj.weight", false, d, g.ExpertFFN)
		}
	}
	add("model.norm.weight", true, d)
	add("lm_head.weight", false, g.Vocab, d)
	cfg := map[string]any{
		"architectures": []string{"PipelineNativeForCausalLM"}, "model_type": "pipeline_native",
		"architecture": "arch2_4_combined", "combine_style": "DelayedSum",
		"dense_delay": g.DenseDelay, "expert_delay": g.ExpertDelay,
		"hidden_size": d, "intermediate_size": g.FFN, "num_hidden_layers": g.Layers,
		"num_attention_heads": g.Heads, "num_key_value_heads": g.KVHeads, "head_dim": hd, "vocab_size": g.Vocab,
		"num_experts": g.Experts, "num_experts_per_tok": g.TopK, "expert_intermediate_size": g.ExpertFFN,
		"max_position_embeddings": 512, "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
		"tie_word_embeddings": false, "hidden_act": "silu", "bos_token_id": 1, "eos_token_id": 2,
		"torch_dtype": "float16", "_name_or_path": fmt.Sprintf("synthetic-arch2_4-seed%d", o.Seed),
	}
	cb, _ := json.MarshalIndent(cfg, "", "  ")
	if err := fileio.WriteFileAtomic(filepath.Join(dir, "config.json"), cb); err != nil {
		return err
	}
	withProgress(ts, o.Progress)
	return WriteSafetensors(filepath.Join(dir, "model.safetensors"), ts)
}
