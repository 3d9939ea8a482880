package convert

import (
	"fmt"

	"github.com/cflow-dev/cflow/cflowfmt"
)

// naming maps (layer, matrix, expert) to the checkpoint's tensor name: the
// spec's table for every architecture, with Mixtral's block_sparse_moe names
// for HF Mixtral checkpoints.
type naming struct{ mixtral bool }

func (n naming) name(layer int, m cflowfmt.MatrixID, expert int) string {
	lp := fmt.Sprintf("model.layers.%d.", layer)
	switch m {
	case cflowfmt.MatAttnNorm:
		return lp + "input_layernorm.weight"
	case cflowfmt.MatQ, cflowfmt.MatK, cflowfmt.MatV, cflowfmt.MatO:
		return lp + "self_attn." + m.String() + "_proj.weight"
	case cflowfmt.MatFFNNorm:
		return lp + "post_attention_layernorm.weight"
	case cflowfmt.MatGate, cflowfmt.MatUp, cflowfmt.MatDown:
		return lp + "mlp." + m.String() + "_proj.weight"
	case cflowfmt.MatMoENorm:
		return lp + "moe_norm.weight"
	case cflowfmt.MatRouter:
		if n.mixtral {
			return lp + "block_sparse_moe.gate.weight"
		}
		return lp + "moe.router.weight"
	case cflowfmt.MatExpertGate, cflowfmt.MatExpertUp, cflowfmt.MatExpertDown:
		if n.mixtral {
			w := map[cflowfmt.MatrixID]string{cflowfmt.MatExpertGate: "w1", cflowfmt.MatExpertUp: "w3", cflowfmt.MatExpertDown: "w2"}[m]
			return fmt.Sprintf("%sblock_sparse_moe.experts.%d.%s.weight", lp, expert, w)
		}
		return fmt.Sprintf("%smoe.experts.%d.%s_proj.weight", lp, expert, m.String()[len("expert_"):])
	case cflowfmt.MatEmbed:
		return "model.embed_tokens.weight"
	case cflowfmt.MatLMHead:
		return "lm_head.weight"
	case cflowfmt.MatFinalNorm:
		return "model.norm.weight"
	}
	return fmt.Sprintf("%s%s", lp, m)
}
