// Package recipe chooses each tensor's quantization type the way
// llama.cpp's llama-quantize does for the same model and file type
// (src/llama-quant.cpp: llama_tensor_get_type and tensor_type_fallback),
// so that a cflow file converted with --quant q4_k_m holds, matrix by
// matrix, the types a Q4_K_M GGUF of the same checkpoint holds. It is a
// pure function of the tensor list, the model facts and the options; the
// C++ keeps running counters over the tensors in its loader's order, and
// Choose replays that order rather than asking callers for it.
package recipe

import (
	"fmt"
	"strings"
)

// Recipe is one llama-quantize file type (llama_ftype) cflow reproduces.
type Recipe uint8

// The recipes, named as llama-quantize names them.
const (
	F32 Recipe = iota
	Q4_0
	Q8_0
	Q4_K_S
	Q4_K_M
	Q5_K_S
	Q5_K_M
	Q6_K
)

var recipeNames = [...]string{F32: "f32", Q4_0: "q4_0", Q8_0: "q8_0", Q4_K_S: "q4_k_s", Q4_K_M: "q4_k_m",
	Q5_K_S: "q5_k_s", Q5_K_M: "q5_k_m", Q6_K: "q6_k"}

// String is the lower-case name convert's --quant flag takes.
func (r Recipe) String() string {
	if int(r) < len(recipeNames) {
		return recipeNames[r]
	}
	return fmt.Sprintf("recipe(%d)", uint8(r))
}

// Parse accepts a recipe's name in any case ("Q4_K_M", "q4_k_m").
func Parse(s string) (Recipe, error) {
	for r, n := range recipeNames {
		if strings.EqualFold(s, n) {
			return Recipe(r), nil
		}
	}
	return 0, fmt.Errorf("unknown quantization recipe %q (want one of %s)", s, strings.Join(recipeNames[:], ", "))
}

// defaultType is llama_ftype_get_default_type: the type of every matrix
// no rule singles out.
func (r Recipe) defaultType() ggmlType {
	switch r {
	case Q4_0:
		return tQ4_0
	case Q8_0:
		return tQ8_0
	case Q4_K_S, Q4_K_M:
		return tQ4_K
	case Q5_K_S, Q5_K_M:
		return tQ5_K
	case Q6_K:
		return tQ6_K
	}
	return tF32
}

// Model holds the facts about the model llama-quantize's rules read.
type Model struct {
	// Arch is the GGUF architecture name ("llama", "qwen3", ...); only
	// "falcon" changes a choice.
	Arch string
	// Layers is the number of blocks (hparams.n_layer_all): ffn_down's
	// "more bits" layers are fractions of it.
	Layers int
	// Experts is the number of routed experts (0 or 1 for a dense model);
	// exactly 8 (Mixtral) bumps attention to more bits.
	Experts int
	// Is70B is llama.cpp's LLM_TYPE_70B (for llama: 80 layers with
	// grouped-query attention), which gives attn_v Q5_K instead of Q4_K.
	Is70B bool
}

// Tensor is one tensor as the rules see it.
type Tensor struct {
	// Name is the GGUF tensor name ("blk.3.attn_v.weight"): the rules and
	// the --tensor-type patterns match GGUF names, not Hugging Face ones.
	Name string
	// Shape is ggml's ne: Shape[0] is the row length (input features),
	// Shape[2] the experts of a stacked expert tensor.
	Shape []int
}

// dim is ne[i], 1 past the given dimensions.
func (t Tensor) dim(i int) int {
	if i < len(t.Shape) {
		return t.Shape[i]
	}
	return 1
}

// nDims is ggml_n_dims: the number of dimensions up to the last one
// larger than 1.
func (t Tensor) nDims() int {
	for i := 3; i >= 1; i-- {
		if t.dim(i) > 1 {
			return i + 1
		}
	}
	return 1
}
