package convert

import (
	"fmt"
	"maps"

	"github.com/cflow-dev/cflow/archspec"
)

// naming maps (layer, matrix, expert) to the checkpoint's tensor name. It is
// data: fmt patterns taking the layer index (and the expert index for
// expert matrices). Families start from hfNames and override what differs.
type naming struct {
	layer  map[archspec.MatrixID]string // pattern(layer)
	expert map[archspec.MatrixID]string // pattern(layer, expert)
	global map[archspec.MatrixID]string // embedding, LM head, final norm
	vector map[string]string            // per-layer vectors by cflowfmt.Vec* role, pattern(layer)
}

// hfNames are the Llama names every HF family shares.
var hfNames = naming{
	layer: map[archspec.MatrixID]string{
		archspec.MatAttnNorm: "model.layers.%d.input_layernorm.weight",
		archspec.MatQ:        "model.layers.%d.self_attn.q_proj.weight",
		archspec.MatK:        "model.layers.%d.self_attn.k_proj.weight",
		archspec.MatV:        "model.layers.%d.self_attn.v_proj.weight",
		archspec.MatO:        "model.layers.%d.self_attn.o_proj.weight",
		archspec.MatFFNNorm:  "model.layers.%d.post_attention_layernorm.weight",
		archspec.MatGate:     "model.layers.%d.mlp.gate_proj.weight",
		archspec.MatUp:       "model.layers.%d.mlp.up_proj.weight",
		archspec.MatDown:     "model.layers.%d.mlp.down_proj.weight",
	},
	global: map[archspec.MatrixID]string{
		archspec.MatEmbed:     "model.embed_tokens.weight",
		archspec.MatLMHead:    "lm_head.weight",
		archspec.MatFinalNorm: "model.norm.weight",
	},
	vector: map[string]string{
		archspec.VecQBias:    "model.layers.%d.self_attn.q_proj.bias",
		archspec.VecKBias:    "model.layers.%d.self_attn.k_proj.bias",
		archspec.VecVBias:    "model.layers.%d.self_attn.v_proj.bias",
		archspec.VecOBias:    "model.layers.%d.self_attn.o_proj.bias",
		archspec.VecGateBias: "model.layers.%d.mlp.gate_proj.bias",
		archspec.VecUpBias:   "model.layers.%d.mlp.up_proj.bias",
		archspec.VecDownBias: "model.layers.%d.mlp.down_proj.bias",
		archspec.VecQNorm:    "model.layers.%d.self_attn.q_norm.weight",
		archspec.VecKNorm:    "model.layers.%d.self_attn.k_norm.weight",
	},
}

// with returns a copy of n with the given layer patterns, expert patterns
// and vector patterns replaced or added.
func (n naming) with(layer, expert map[archspec.MatrixID]string, vector map[string]string) naming {
	out := naming{layer: maps.Clone(n.layer), expert: maps.Clone(n.expert), global: n.global, vector: maps.Clone(n.vector)}
	if out.expert == nil {
		out.expert = map[archspec.MatrixID]string{}
	}
	maps.Copy(out.layer, layer)
	maps.Copy(out.expert, expert)
	maps.Copy(out.vector, vector)
	return out
}

func (n naming) name(layer int, m archspec.MatrixID, expert int) string {
	if p, ok := n.global[m]; ok {
		return p
	}
	if m.IsExpert() {
		if p, ok := n.expert[m]; ok {
			return fmt.Sprintf(p, layer, expert)
		}
	} else if p, ok := n.layer[m]; ok {
		return fmt.Sprintf(p, layer)
	}
	return fmt.Sprintf("model.layers.%d.%s (no name in this family)", layer, m)
}

// vectorName is the tensor of layer l's vector role.
func (n naming) vectorName(l int, role string) string {
	if p, ok := n.vector[role]; ok {
		return fmt.Sprintf(p, l)
	}
	return fmt.Sprintf("model.layers.%d.%s (no name in this family)", l, role)
}
