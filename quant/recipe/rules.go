package recipe

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/cflow-dev/cflow/quant"
)

// Override is one --tensor-type REGEX=TYPE: tensors whose GGUF name the
// pattern matches anywhere get the type instead of the recipe's rules
// (the first matching override wins, and the row-length fallback still
// applies), as llama-quantize's tt_overrides do.
type Override struct {
	Pattern *regexp.Regexp
	Type    quant.Type
	ggml    ggmlType
}

// ParseOverride reads "REGEX=TYPE" as llama-quantize's --tensor-type does:
// the pattern lower-cased (Go's RE2 syntax, which lacks ECMAScript's
// look-around and back-references), the type a ggml type name in any case.
func ParseOverride(s string) (Override, error) {
	pat, typ, ok := strings.Cut(s, "=")
	switch {
	case !ok:
		return Override{}, fmt.Errorf("--tensor-type %q: want REGEX=TYPE", s)
	case pat == "":
		return Override{}, fmt.Errorf("--tensor-type %q: missing tensor name pattern", s)
	case typ == "":
		return Override{}, fmt.Errorf("--tensor-type %q: missing quantization type", s)
	}
	re, err := regexp.Compile(strings.ToLower(pat))
	if err != nil {
		return Override{}, fmt.Errorf("--tensor-type %q: %v", s, err)
	}
	g, err := parseGGMLType(typ)
	if err != nil {
		return Override{}, fmt.Errorf("--tensor-type %q: %v", s, err)
	}
	q, _ := g.cflow("")
	return Override{Pattern: re, Type: q, ggml: g}, nil
}

// Options are llama-quantize's flags that change the choice.
type Options struct {
	// Imatrix says an importance matrix is given (--imatrix), which
	// changes q4_0's first ffn_down layers.
	Imatrix bool
	// Overrides are --tensor-type patterns, in order.
	Overrides []Override
	// Pure gives every quantized tensor the recipe's default type
	// (--pure), row-length fallbacks aside.
	Pure bool
}

// Choose returns the type of each tensor (in the order given) that
// llama-quantize chooses for recipe r. Tensors llama-quantize leaves
// unquantized (1-D tensors, norms, the MoE router ffn_gate_inp, and the
// others tensor_allows_quantization lists) are F32. An error names a
// tensor whose choice cflow cannot store (f16) or whose layer cannot be
// read.
func Choose(r Recipe, m Model, tensors []Tensor, opt Options) ([]quant.Type, error) {
	gs, err := chooseGGML(r, m, tensors, opt)
	if err != nil {
		return nil, err
	}
	out := make([]quant.Type, len(tensors))
	for i, g := range gs {
		if out[i], err = g.cflow(tensors[i].Name); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// chooseGGML is Choose in ggml's types, before the mapping onto cflow's.
func chooseGGML(r Recipe, m Model, tensors []Tensor, opt Options) ([]ggmlType, error) {
	if int(r) >= len(recipeNames) {
		return nil, fmt.Errorf("unknown recipe %d", r)
	}
	st := state{m: m, r: r, opt: opt, tied: true}
	// init_quantize_state_counters
	for _, t := range tensors {
		c := category(t.Name)
		if c.isAttnV() {
			st.nAttnV++
		}
		if c == catOutput {
			st.tied = false
		}
	}
	// llama_model_loader's weight_name_comparer: layer, then name.
	order := make([]int, len(tensors))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		la, lb := layerOf(tensors[a].Name), layerOf(tensors[b].Name)
		if la != lb {
			return la - lb
		}
		return strings.Compare(tensors[a].Name, tensors[b].Name)
	})
	out := make([]ggmlType, len(tensors))
	for _, i := range order {
		t := tensors[i]
		out[i] = tF32
		if allowsQuantization(t) {
			var err error
			if out[i], err = st.getType(t); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// layerOf is sscanf(name, "blk.%d.", &layer) with −1 when it fails.
func layerOf(name string) int {
	n, ok := scanLayer(name)
	if !ok {
		return -1
	}
	return n
}

// scanLayer reads the integer after "blk." as %d does (optional sign,
// digits); ok is false when there is none.
func scanLayer(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, "blk.")
	if !ok {
		return 0, false
	}
	end := 0
	if end < len(rest) && (rest[end] == '+' || rest[end] == '-') {
		end++
	}
	for end < len(rest) && rest[end] >= '0' && rest[end] <= '9' {
		end++
	}
	n, err := strconv.Atoi(rest[:end])
	return n, err == nil
}

// allowsQuantization is tensor_allows_quantization for the default
// parameters: which tensors llama-quantize quantizes at all.
func allowsQuantization(t Tensor) bool {
	if t.nDims() < 2 {
		return false
	}
	name := t.Name
	if !strings.HasSuffix(name, "weight") || strings.Contains(name, "_norm.weight") {
		return false
	}
	if name == "position_embd.weight" || name == "token_types.weight" {
		return false
	}
	for _, s := range unquantized {
		if strings.Contains(name, s) {
			return false
		}
	}
	return true
}

// unquantized are the name fragments tensor_allows_quantization keeps in
// their source type.
var unquantized = []string{
	"ffn_gate_inp.weight", "ffn_gate_tid2eid.weight", "altup", "laurel", "per_layer_model_proj",
	"ssm_conv1d", "shortconv.conv.weight", "indexer.k_proj.weight", "indexer.q_proj.weight",
	"time_mix_first.weight", "time_mix_w0.weight", "time_mix_w1.weight", "time_mix_w2.weight",
	"time_mix_v0.weight", "time_mix_v1.weight", "time_mix_v2.weight", "time_mix_a0.weight",
	"time_mix_a1.weight", "time_mix_a2.weight", "time_mix_g1.weight", "time_mix_g2.weight",
	"time_mix_decay_w1.weight", "time_mix_decay_w2.weight", "time_mix_lerp_fused.weight",
	"attn_rel_b.weight", ".position_embd", "sam.pos_embd", "sam.neck.", "sam.net_", ".rel_pos",
	".patch_embd", ".patch_merger", "a.rvq.codebook", "mm.a.code_embd",
}

// cat is llama-quant.cpp's tensor_category.
type cat uint8

const (
	catOther cat = iota
	catTokenEmbd
	catAttnQ
	catAttnV
	catAttnK
	catAttnQKV
	catAttnKVB
	catAttnOutput
	catFFNUp
	catFFNGate
	catFFNDown
	catOutput
)

// category is tensor_get_category: substring tests in its order.
func category(name string) cat {
	switch {
	case name == "output.weight":
		return catOutput
	case name == "token_embd.weight" || name == "per_layer_token_embd.weight":
		return catTokenEmbd
	case strings.Contains(name, "attn_qkv.weight"):
		return catAttnQKV
	case strings.Contains(name, "attn_kv_b.weight"):
		return catAttnKVB
	case strings.Contains(name, "attn_v.weight"):
		return catAttnV
	case strings.Contains(name, "attn_k.weight"):
		return catAttnK
	case strings.Contains(name, "attn_q.weight"):
		return catAttnQ
	case strings.Contains(name, "attn_output.weight"):
		return catAttnOutput
	case strings.Contains(name, "ffn_up"):
		return catFFNUp
	case strings.Contains(name, "ffn_gate"):
		return catFFNGate
	case strings.Contains(name, "ffn_down"):
		return catFFNDown
	}
	return catOther
}

// isAttnV is category_is_attn_v: the attention-value-like tensors that
// get more bits.
func (c cat) isAttnV() bool { return c == catAttnV || c == catAttnQKV || c == catAttnKVB }

// state is quantize_state_impl: the counters the rules advance tensor by
// tensor.
type state struct {
	m    Model
	r    Recipe
	opt  Options
	tied bool // no output.weight: token_embd doubles as the output

	nAttnV, iAttnV             int
	iFFNDown, iFFNGate, iFFNUp int
}

// getType is llama_tensor_get_type for a tensor that allows quantization.
func (st *state) getType(t Tensor) (ggmlType, error) {
	def := st.r.defaultType()
	if !def.quantized() {
		return def, nil
	}
	typ := def
	manual := false
	for _, o := range st.opt.Overrides {
		if o.Pattern.MatchString(t.Name) {
			typ, manual = o.ggml, true
			break
		}
	}
	if !manual && !st.opt.Pure {
		var err error
		if typ, err = st.getTypeImpl(typ, t, category(t.Name)); err != nil {
			return 0, err
		}
	}
	return fallback(t, typ), nil
}

// moreBits is use_more_bits: the first and last eighth of the layers and
// every third one between.
func moreBits(i, n int) bool { return i < n/8 || i >= 7*n/8 || (i-n/8)%3 == 2 }

// layerInfo is layer_info: the counter's layer, or for a model with
// experts (whose expert tensors are not one per layer) the name's.
func (st *state) layerInfo(i int, name string) (int, int, error) {
	n := st.m.Layers
	if max(1, st.m.Experts) > 1 {
		l, ok := scanLayer(name)
		if !ok {
			return 0, 0, fmt.Errorf("%s: failed to determine the layer of an expert model's tensor", name)
		}
		if l < 0 || l >= n {
			return 0, 0, fmt.Errorf("%s: layer %d outside [0, %d)", name, l, n)
		}
		i = l
	}
	return i, n, nil
}

// getTypeImpl is llama_tensor_get_type_impl restricted to the recipes
// here (the branches for other file types cannot fire).
func (st *state) getTypeImpl(typ ggmlType, t Tensor, c cat) (ggmlType, error) {
	r, m := st.r, st.m
	falcon := m.Arch == "falcon"
	switch {
	case c == catOutput || (st.tied && c == catTokenEmbd):
		if falcon || t.dim(0)%typ.blockSize() != 0 {
			typ = tQ8_0
		} else if typ != tQ8_0 {
			typ = tQ6_K
		}
	case c == catTokenEmbd:
	case c.isAttnV():
		switch {
		case (r == Q4_K_M || r == Q5_K_M) && moreBits(st.iAttnV, st.nAttnV):
			typ = tQ6_K
		case r == Q4_K_S && st.iAttnV < 4:
			typ = tQ5_K
		}
		if m.Is70B && typ == tQ4_K {
			typ = tQ5_K
		}
		if m.Experts == 8 {
			typ = tQ8_0
		}
		st.iAttnV++
	case c == catAttnK:
		if m.Experts == 8 {
			typ = tQ8_0
		}
	case c == catAttnQ:
	case c == catFFNDown:
		i, n, err := st.layerInfo(st.iFFNDown, t.Name)
		if err != nil {
			return 0, err
		}
		switch {
		case r == Q4_K_M:
			if falcon {
				switch {
				case i < n/16:
					typ = tQ6_K
				case moreBits(i, n):
					typ = tQ5_K
				default:
					typ = tQ4_K
				}
			} else if moreBits(i, n) {
				typ = tQ6_K
			}
		case r == Q5_K_M && moreBits(i, n):
			typ = tQ6_K
		case r == Q4_K_S && !falcon && i < n/8:
			typ = tQ5_K
		case r == Q4_0 && st.opt.Imatrix && i < n/8:
			typ = tQ4_1
		}
		st.iFFNDown++
	case c == catAttnOutput:
		if !falcon && m.Experts == 8 && (r == Q4_K_S || r == Q4_K_M) {
			typ = tQ5_K
		}
	case c == catFFNGate:
		if _, _, err := st.layerInfo(st.iFFNGate, t.Name); err != nil {
			return 0, err
		}
		st.iFFNGate++
	case c == catFFNUp:
		if _, _, err := st.layerInfo(st.iFFNUp, t.Name); err != nil {
			return 0, err
		}
		st.iFFNUp++
	}
	return typ, nil
}

// fallback is tensor_type_fallback: a type whose block does not divide the
// row length falls back to a 32-block one, and to f16 when even that does
// not divide it.
func fallback(t Tensor, typ ggmlType) ggmlType {
	cols := t.dim(0)
	if cols%typ.blockSize() == 0 {
		return typ
	}
	switch typ {
	case tQ4_K:
		typ = tQ5_0
	case tQ5_K:
		typ = tQ5_1
	case tQ6_K:
		typ = tQ8_0
	}
	if cols%typ.blockSize() != 0 {
		typ = tF16
	}
	return typ
}
