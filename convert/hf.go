package convert

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/cflow-dev/cflow/archspec"
	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/x448/float16"
)

// refuse is the error for a computation-changing key the runtime does not
// implement.
func refuse(s *modelSpec, key string, value any, why string) error {
	if b, err := json.Marshal(value); err == nil {
		value = string(b)
	}
	return fmt.Errorf("%s: %s = %v is not implemented for %s (%s); refusing rather than computing something else", s.cfgFile, key, value, s.p.name, why)
}

// layerVectors loads role's tensor of every layer (n values each) into the
// metadata, claiming it.
func (s *modelSpec) layerVectors(c *checkpoint, role string, n int) error {
	return s.layerVectorsBy(c, role, func(int) int { return n })
}

// layerVectorsBy is layerVectors with a per-layer length.
func (s *modelSpec) layerVectorsBy(c *checkpoint, role string, size func(l int) int) error {
	return s.layerVectorsFrom(c, role, s.p.names.vector[role], size)
}

// layerVectorsFrom is layerVectorsBy with the tensor-name pattern given
// (a family whose role maps to another tensor in some configurations).
func (s *modelSpec) layerVectorsFrom(c *checkpoint, role, pattern string, size func(l int) int) error {
	for l := 0; l < int(s.h.NumLayers); l++ {
		n := size(l)
		name := fmt.Sprintf(pattern, l)
		if pattern == "" {
			name = s.p.names.vectorName(l, role)
		}
		t, err := c.get(name)
		if err != nil {
			return err
		}
		if t.rows*t.cols != n || len(t.shape) != 1 {
			return fmt.Errorf("%s: tensor %s: shape %v, but %s implies [%d]", t.file, name, t.shape, s.cfgFile, n)
		}
		s.md.SetF32s(cflowfmt.LayerKey(l, role), t.vector())
	}
	return nil
}

// attnBiases loads the biases of the projections named, feature "bias".
func (s *modelSpec) attnBiases(c *checkpoint, roles ...string) error {
	h := &s.h
	hd := int(h.HeadDim)
	size := map[string]int{
		archspec.VecQBias: int(h.NumHeads) * hd, archspec.VecKBias: int(h.NumKVHeads) * hd, archspec.VecVBias: int(h.NumKVHeads) * hd,
		archspec.VecOBias: int(h.HiddenSize), archspec.VecGateBias: int(h.IntermediateSize), archspec.VecUpBias: int(h.IntermediateSize),
		archspec.VecDownBias: int(h.HiddenSize),
	}
	for _, r := range roles {
		if err := s.layerVectors(c, r, size[r]); err != nil {
			return err
		}
	}
	s.feature(archspec.FeatBias)
	return nil
}

// ropeScalingConfig is config "rope_scaling" (or a flat "rope_parameters").
type ropeScalingConfig struct {
	RopeType                      string   `json:"rope_type"`
	Type                          string   `json:"type"` // older configs
	Factor                        *float64 `json:"factor"`
	LowFreqFactor                 *float64 `json:"low_freq_factor"`
	HighFreqFactor                *float64 `json:"high_freq_factor"`
	OriginalMaxPositionEmbeddings *float64 `json:"original_max_position_embeddings"`
	RopeTheta                     *float64 `json:"rope_theta"`            // rope_parameters only
	PartialRotaryFactor           *float64 `json:"partial_rotary_factor"` // Gemma 4's rope_parameters only
}

func (r *ropeScalingConfig) kind() string {
	if r == nil {
		return "default"
	}
	if r.RopeType != "" {
		return r.RopeType
	}
	if r.Type != "" {
		return r.Type
	}
	return "default"
}

// applyRopeScaling maps rope scaling onto the metadata (full-attention
// layers only): none, linear (inv_freq / factor) or llama3. Every other
// type (dynamic, yarn, longrope, …) is refused.
func (s *modelSpec) applyRopeScaling(key string, r *ropeScalingConfig) error {
	md := s.md
	switch k := r.kind(); k {
	case "default":
		return nil
	case "linear":
		if r.Factor == nil || !(*r.Factor >= 1) {
			return refuse(s, key+".factor", r.Factor, "linear scaling needs factor ≥ 1")
		}
		md.SetString(cflowfmt.KeyRopeScaling, "linear")
		md.SetF32(cflowfmt.KeyRopeScalingFactor, float32(*r.Factor))
	case "llama3":
		for _, p := range []struct {
			name string
			v    *float64
		}{{"factor", r.Factor}, {"low_freq_factor", r.LowFreqFactor}, {"high_freq_factor", r.HighFreqFactor}, {"original_max_position_embeddings", r.OriginalMaxPositionEmbeddings}} {
			if p.v == nil || !(*p.v > 0) || math.IsInf(*p.v, 0) {
				return refuse(s, key+"."+p.name, p.v, "llama3 scaling needs it > 0")
			}
		}
		if *r.HighFreqFactor <= *r.LowFreqFactor {
			return refuse(s, key+".high_freq_factor", *r.HighFreqFactor, "it must exceed low_freq_factor")
		}
		md.SetString(cflowfmt.KeyRopeScaling, "llama3")
		md.SetF32(cflowfmt.KeyRopeScalingFactor, float32(*r.Factor))
		md.SetF32(cflowfmt.KeyRopeLowFreqFactor, float32(*r.LowFreqFactor))
		md.SetF32(cflowfmt.KeyRopeHighFreqFactor, float32(*r.HighFreqFactor))
		md.SetU32(cflowfmt.KeyRopeOriginalContext, uint32(*r.OriginalMaxPositionEmbeddings))
	default:
		return refuse(s, key+".rope_type", k, "implemented: default, linear, llama3")
	}
	s.feature(archspec.FeatRopeScaling)
	return nil
}

// checkAct refuses every activation but the one the family's runtime path
// computes.
func (s *modelSpec) checkAct(key, act string, allowed ...string) error {
	for _, a := range allowed {
		if strings.EqualFold(act, a) {
			return nil
		}
	}
	return refuse(s, key, act, "implemented: "+strings.Join(allowed, ", "))
}

// roundToDtype rounds x to the element type of the checkpoint's weights,
// the way torch's tensor.to(dtype) does (round to nearest even).
func roundToDtype(x float32, dt dtype) float32 {
	switch dt {
	case dtBF16:
		b := math.Float32bits(x)
		b += 0x7fff + (b>>16)&1
		return math.Float32frombits(b &^ 0xffff)
	case dtF16:
		return float16.Fromfloat32(x).Float32()
	}
	return x
}
