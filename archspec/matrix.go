package archspec

import "fmt"

// MatrixID names a weight of the model by its role (which projection of
// which block). The values are the ones the formats store in a tile header,
// so they never change; what a role implies (always F32, lives in an expert
// bank, a norm vector, part of the vocabulary entry) is stated here once and
// asked by the formats, the converter, the engine, gguf export and analyze.
type MatrixID uint8

const (
	MatQ          MatrixID = 0
	MatK          MatrixID = 1
	MatV          MatrixID = 2
	MatO          MatrixID = 3
	MatGate       MatrixID = 4
	MatUp         MatrixID = 5
	MatDown       MatrixID = 6
	MatRouter     MatrixID = 7 // always F32
	MatExpertGate MatrixID = 8
	MatExpertUp   MatrixID = 9
	MatExpertDown MatrixID = 10
	MatEmbed      MatrixID = 11
	MatLMHead     MatrixID = 12
	MatAttnNorm   MatrixID = 13 // Na, 1×d, always F32
	MatFFNNorm    MatrixID = 14 // Nf
	MatMoENorm    MatrixID = 15 // Nr (DelayedSum)
	MatFinalNorm  MatrixID = 16
	numMatrixIDs           = 17
)

var matrixNames = [...]string{"q", "k", "v", "o", "gate", "up", "down", "router",
	"expert_gate", "expert_up", "expert_down", "embed", "lm_head",
	"attn_norm", "ffn_norm", "moe_norm", "final_norm"}

func (m MatrixID) String() string {
	if int(m) < len(matrixNames) {
		return matrixNames[m]
	}
	return fmt.Sprintf("matrix(%d)", uint8(m))
}

// Valid reports whether m is a known matrix.
func (m MatrixID) Valid() bool { return m < numMatrixIDs }

// AlwaysF32 reports matrices never quantized: the router (its per-group
// overhead would dominate) and norm vectors.
func (m MatrixID) AlwaysF32() bool {
	return m == MatRouter || (m >= MatAttnNorm && m <= MatFinalNorm)
}

// IsExpert reports matrices that live in an expert bank.
func (m MatrixID) IsExpert() bool { return m >= MatExpertGate && m <= MatExpertDown }

// IsNorm reports the norm-vector matrices (1 × d).
func (m MatrixID) IsNorm() bool { return m >= MatAttnNorm && m <= MatFinalNorm }

// IsVocab reports the matrices of the vocabulary entry (embedding, LM head,
// final norm), which belong to no layer.
func (m MatrixID) IsVocab() bool { return m == MatEmbed || m == MatLMHead || m == MatFinalNorm }

// Attention kinds of a layer, as the formats store them one byte per layer
// (KeyLayerKinds): full attention over the whole context, or sliding-window
// attention. Mixed models (gemma) give the kinds different head dims, KV
// heads and RoPE bases.
const (
	LayerFull    = 0
	LayerSliding = 1
)
