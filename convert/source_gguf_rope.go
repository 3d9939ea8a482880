package convert

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/cflow-dev/cflow/gguf"
)

// ggufRopeFreqs is llama.cpp's per-pair RoPE factors tensor: the llama
// graph divides pair i's frequency by factor i (ggml_rope_ext's c).
const ggufRopeFreqs = "rope_freqs.weight"

// ggufRopeConfig maps the RoPE scaling a GGUF states onto rope_scaling:
// rope.scaling.type none or linear (with rope.scaling.factor), or, on the
// llama architecture, a rope_freqs tensor, which convert_hf_to_gguf.py
// writes for Llama 3.x (conversion/llama.py, generate_extra_tensors) and
// which ggufLlama3Scaling reads back into HF's llama3 parameters. Factors
// no such parameters give, and any other scaling type, are refused by name.
func ggufRopeConfig(h *ggufHyper, cfg map[string]any, theta float64, headDim int) error {
	scaling, err := h.f.StringOr(h.key("rope.scaling.type"), "none")
	if err != nil {
		return err
	}
	switch scaling {
	case "none":
	case "linear":
		factor, err := h.float("rope.scaling.factor", 0)
		if err != nil {
			return err
		}
		cfg["rope_scaling"] = map[string]any{"type": "linear", "factor": factor}
	default:
		return fmt.Errorf("gguf: %s %q is not implemented (none and linear are)", h.key("rope.scaling.type"), scaling)
	}
	ti, ok := h.f.Tensor(ggufRopeFreqs)
	if !ok || h.arch == "gemma4" { // gemma4: proportional RoPE (gemma4Keys)
		return nil
	}
	switch {
	case h.arch != "llama":
		return fmt.Errorf("gguf: tensor %s (per-pair RoPE factors) on %s is not implemented (cflow reads it on llama, as Llama 3's scaling)", ggufRopeFreqs, h.arch)
	case scaling != "none":
		return fmt.Errorf("gguf: tensor %s with %s %q: two scalings at once are not implemented", ggufRopeFreqs, h.key("rope.scaling.type"), scaling)
	case ti.Type != gguf.GGMLF32 || len(ti.Dims) != 1 || ti.Dims[0] != uint64(headDim/2):
		return fmt.Errorf("gguf: tensor %s is %s %v, want F32 [%d] (one factor per rotated pair)", ggufRopeFreqs, ti.Type, ti.Dims, headDim/2)
	}
	data, err := h.f.TensorData(ti)
	if err != nil {
		return err
	}
	fac := make([]float64, headDim/2)
	for i := range fac {
		fac[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:])))
	}
	rs, err := ggufLlama3Scaling(fac, theta, headDim)
	if err != nil {
		return fmt.Errorf("gguf: tensor %s: %w", ggufRopeFreqs, err)
	}
	if rs != nil {
		cfg["rope_scaling"] = rs
	}
	return nil
}

// ggufLlama3Scaling recovers HF's llama3 rope_scaling from the per-pair
// factors f_i that formula gives (1 on short wavelengths λ < L/hi, factor on
// long ones λ > L/lo, and 1/((1−s)/factor + s) with s = (L/λ − lo)/(hi − lo)
// between): factor is the largest; the smooth pairs fix L/lo and L/hi,
// so with Llama 3.x's lo = 1 they fix L and hi. The parameters found are
// checked by recomputing every factor (within f32 rounding); factors that
// follow no llama3 curve are refused. All ones: no scaling (nil).
func ggufLlama3Scaling(fac []float64, theta float64, headDim int) (map[string]any, error) {
	const tol = 1e-5
	wave := make([]float64, len(fac))
	factor, ones := 1.0, true
	for i, f := range fac {
		if !(f > 0) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("factor %d is %g, want a positive finite value", i, f)
		}
		wave[i] = 2 * math.Pi * math.Pow(theta, float64(2*i)/float64(headDim))
		factor = math.Max(factor, f)
		ones = ones && math.Abs(f-1) <= tol
	}
	if ones {
		return nil, nil
	}
	// s_i = (1/f_i − 1/factor) / (1 − 1/factor) on the smooth pairs, linear
	// in 1/λ: s = a/λ − b with a = L/(hi − lo), b = lo/(hi − lo).
	var xs, ss []float64
	for i, f := range fac {
		if math.Abs(f-1) > tol && math.Abs(f-factor) > tol*factor {
			xs = append(xs, 1/wave[i])
			ss = append(ss, (1/f-1/factor)/(1-1/factor))
		}
	}
	lo, hi, orig := 1.0, 4.0, 0.0
	switch len(xs) {
	case 0:
		return nil, fmt.Errorf("factors %v follow llama3's bands but state no smooth pair, which leaves its parameters unknown", fac)
	case 1: // lo 1, hi 4 (Llama 3.x's): L from the one smooth pair
		orig = (ss[0]*(hi-lo) + lo) / xs[0]
	default:
		n := len(xs) - 1
		a := (ss[n] - ss[0]) / (xs[n] - xs[0])
		b := a*xs[0] - ss[0]
		if !(a > 0) || !(b > 0) {
			return nil, fmt.Errorf("factors %v do not follow llama3's curve", fac)
		}
		orig = math.Round(a / b) // an integer in HF's config
		hi = orig * (1 + b) / a  // L/hi = a/(1 + b)
	}
	orig = math.Round(orig)
	for i, f := range fac {
		want := llama3Factor(wave[i], factor, lo, hi, orig)
		if math.Abs(want-f) > tol*math.Max(1, f) {
			return nil, fmt.Errorf("factor %d is %g, llama3 scaling (factor %g, low_freq_factor %g, high_freq_factor %g, original_max_position_embeddings %g) gives %g: not a formula cflow implements", i, f, factor, lo, hi, orig, want)
		}
	}
	return map[string]any{"rope_type": "llama3", "factor": factor, "low_freq_factor": lo, "high_freq_factor": hi,
		"original_max_position_embeddings": orig}, nil
}

// llama3Factor is HF's _compute_llama3_parameters for one wavelength, as
// the factor llama.cpp divides the frequency by.
func llama3Factor(wave, factor, lo, hi, orig float64) float64 {
	switch {
	case wave < orig/hi:
		return 1
	case wave > orig/lo:
		return factor
	}
	s := (orig/wave - lo) / (hi - lo)
	return 1 / ((1-s)/factor + s)
}
