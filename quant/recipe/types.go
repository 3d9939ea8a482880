package recipe

import (
	"fmt"
	"strings"

	"github.com/cflow-dev/cflow/quant"
)

// ggmlType is the subset of ggml's types the recipes here can choose
// (llama-quantize's rules and fallbacks for these file types never leave
// it), named as ggml_type_name names them.
type ggmlType uint8

const (
	tF32 ggmlType = iota
	tF16
	tQ4_0
	tQ4_1
	tQ5_0
	tQ5_1
	tQ8_0
	tQ4_K
	tQ5_K
	tQ6_K
)

var ggmlNames = [...]string{tF32: "f32", tF16: "f16", tQ4_0: "q4_0", tQ4_1: "q4_1", tQ5_0: "q5_0", tQ5_1: "q5_1",
	tQ8_0: "q8_0", tQ4_K: "q4_K", tQ5_K: "q5_K", tQ6_K: "q6_K"}

func (t ggmlType) String() string { return ggmlNames[t] }

// blockSize is ggml_blck_size.
func (t ggmlType) blockSize() int {
	switch t {
	case tF32, tF16:
		return 1
	case tQ4_K, tQ5_K, tQ6_K:
		return 256
	}
	return 32
}

// quantized is ggml_is_quantized.
func (t ggmlType) quantized() bool { return t != tF32 && t != tF16 }

// parseGGMLType is llama-quantize's parse_ggml_type for the types cflow
// holds (case-insensitive ggml names).
func parseGGMLType(s string) (ggmlType, error) {
	for t, n := range ggmlNames {
		if strings.EqualFold(s, n) {
			if _, err := ggmlType(t).cflow(""); err != nil {
				return 0, err
			}
			return ggmlType(t), nil
		}
	}
	return 0, fmt.Errorf("unknown tensor type %q (want f32, q4_0, q4_1, q8_0, q4_k, q5_k, q6_k, q5_0 or q5_1)", s)
}

// cflow is the quant.Type storing t. cflow has no f16 tiles; a choice of
// f16 (llama-quantize's for rows not a multiple of 32) is an error naming
// the tensor, never a silent substitute.
func (t ggmlType) cflow(tensor string) (quant.Type, error) {
	switch t {
	case tF32:
		return quant.F32, nil
	case tQ4_0:
		return quant.Q4_0, nil
	case tQ8_0:
		return quant.Q8_0, nil
	case tQ4_K:
		return quant.Q4_K, nil
	case tQ5_K:
		return quant.Q5_K, nil
	case tQ6_K:
		return quant.Q6_K, nil
	case tQ5_0:
		return quant.Q5_0, nil
	case tQ5_1:
		return quant.Q5_1, nil
	case tQ4_1:
		return quant.Q4_1, nil
	}
	if tensor == "" {
		return 0, fmt.Errorf("tensor type %s: cflow has no %s codec", t, t)
	}
	return 0, fmt.Errorf("%s: llama-quantize would store it as %s, which cflow has no codec for (override it with --tensor-type)", tensor, t)
}
