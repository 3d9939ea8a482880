package generate

import (
	"fmt"
	"math"
)

// Params are the sampling settings every front end shares (run's flags,
// chat's, the server's request fields), so a value means the same thing
// everywhere and is checked in one place. The zero value is not useful;
// start from DefaultParams.
type Params struct {
	// Temperature divides the logits; 0 is greedy (argmax, ties to the
	// lower id). Range [0, MaxTemperature].
	Temperature float64
	// TopK keeps the K most probable tokens; 0 keeps all.
	TopK int
	// TopP keeps the smallest set of most probable tokens whose mass
	// reaches TopP; 1 keeps all, 0 keeps only the most probable. [0, 1].
	TopP float64
	// MinP drops tokens less probable than MinP × the top token's
	// probability; 0 keeps all. [0, 1].
	MinP float64
	// RepeatPenalty divides positive (multiplies negative) logits of tokens
	// seen in the last PenaltyLastN tokens (llama.cpp, HF
	// repetition_penalty); 1 is off. [MinRepeatPenalty, MaxRepeatPenalty].
	RepeatPenalty float64
	// FrequencyPenalty subtracts count × FrequencyPenalty from the logit of
	// each token seen in the window (OpenAI); 0 is off. [−2, 2].
	FrequencyPenalty float64
	// PresencePenalty subtracts PresencePenalty from the logit of each
	// token seen in the window at least once (OpenAI); 0 is off. [−2, 2].
	PresencePenalty float64
	// PenaltyLastN is the window, in tokens of prompt and output, the
	// penalties look at; 0 turns them off. [0, MaxPenaltyLastN].
	PenaltyLastN int
	// Seed fixes the random stream, so a sample can be repeated.
	Seed uint64
}

// Limits of the ranges Validate enforces. Temperature and the two OpenAI
// penalties follow the OpenAI API's ranges.
const (
	MaxTemperature   = 2
	MaxRepeatPenalty = 100
	// MinRepeatPenalty is 1/MaxRepeatPenalty: a logit divided by less
	// would overflow float32 to +Inf (1e-39 did), a silent garbage sample.
	MinRepeatPenalty = 1.0 / MaxRepeatPenalty
	MaxPenalty       = 2
	MaxPenaltyLastN  = 1 << 20
)

// DefaultParams is what run uses unless told otherwise: temperature 0.8,
// top-p 0.9, penalties off over a 64-token window.
func DefaultParams() Params {
	return Params{Temperature: 0.8, TopP: 0.9, RepeatPenalty: 1, PenaltyLastN: 64}
}

// ParamError names the sampling parameter that is out of range, so the CLI
// can name its flag (exit 2) and the server its request field (HTTP 400).
type ParamError struct {
	Param  string // the request field name: temperature, top_p, …
	Value  any
	Reason string
}

func (e *ParamError) Error() string {
	return fmt.Sprintf("%s = %v: %s", e.Param, e.Value, e.Reason)
}

// Validate checks every field: NaN, infinities and values outside the
// documented ranges are errors (*ParamError), never silently "off".
func (p *Params) Validate() error {
	float := func(name string, v, lo, hi float64, loOpen bool) error {
		switch {
		case math.IsNaN(v) || math.IsInf(v, 0):
			return &ParamError{name, v, "must be a finite number"}
		case v < lo || (loOpen && v == lo) || v > hi:
			open := "["
			if loOpen {
				open = "("
			}
			return &ParamError{name, v, fmt.Sprintf("must be in %s%g, %g]", open, lo, hi)}
		}
		return nil
	}
	for _, err := range []error{
		float("temperature", p.Temperature, 0, MaxTemperature, false),
		float("top_p", p.TopP, 0, 1, false),
		float("min_p", p.MinP, 0, 1, false),
		float("repeat_penalty", p.RepeatPenalty, MinRepeatPenalty, MaxRepeatPenalty, false),
		float("frequency_penalty", p.FrequencyPenalty, -MaxPenalty, MaxPenalty, false),
		float("presence_penalty", p.PresencePenalty, -MaxPenalty, MaxPenalty, false),
	} {
		if err != nil {
			return err
		}
	}
	if p.TopK < 0 {
		return &ParamError{"top_k", p.TopK, "must be ≥ 0 (0 keeps every token)"}
	}
	if p.PenaltyLastN < 0 || p.PenaltyLastN > MaxPenaltyLastN {
		return &ParamError{"repeat_last_n", p.PenaltyLastN, fmt.Sprintf("must be in [0, %d]", MaxPenaltyLastN)}
	}
	return nil
}

// Greedy reports whether the sampler always takes the argmax, so no random
// draw happens and the seed does not matter.
func (p *Params) Greedy() bool { return p.Temperature == 0 }

// penalized reports whether any penalty changes logits.
func (p *Params) penalized() bool {
	return p.PenaltyLastN > 0 && (p.RepeatPenalty != 1 || p.FrequencyPenalty != 0 || p.PresencePenalty != 0)
}
