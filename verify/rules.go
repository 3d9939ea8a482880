package verify

import (
	"fmt"

	"github.com/cflow-dev/cflow/quant"
)

// Rule is one row of TRACE.md's parity table. Logit errors are measured at
// the reference's top ids, relative to the reference's largest absolute
// top logit (the scale TRACE.md names for replay traces; applied to the f32
// row too, where "1e-4 relative" would otherwise blow up on logits near 0).
type Rule struct {
	Name string
	// NormTol bounds the relative error of every residual norm and of the
	// pre-LM-head norm at every step.
	NormTol float64
	// LogitTol bounds logit errors at every step; 0 = logits not checked.
	LogitTol float64
	// ArgmaxFrac is the fraction of steps whose argmax must match; with
	// ArgmaxGap > 0 only steps whose reference top-2 gap exceeds it count
	// (and must all match).
	ArgmaxFrac float64
	ArgmaxGap  float64
	// ArgmaxGapRel adds to ArgmaxGap this fraction of the step's largest
	// absolute top logit (KVRule: the logits' own error scale).
	ArgmaxGapRel float64
	// MinOverlap is the top-32 overlap required on OverlapFrac of steps;
	// 0 = not checked.
	MinOverlap  int
	OverlapFrac float64
}

// Rules by (trace weights, file quant type), straight from TRACE.md. They
// are functions so no caller can loosen a rule for everyone else.

// RuleF32 judges an f32 trace against an F32 file.
func RuleF32() Rule {
	return Rule{Name: "f32 trace vs F32 file", NormTol: 1e-4, LogitTol: 1e-4, ArgmaxFrac: 1}
}

// RuleReplay judges a *_replay trace against a file of the same
// quantization.
func RuleReplay() Rule {
	return Rule{Name: "replay trace vs same quantization", NormTol: 1e-3, LogitTol: 1e-3, ArgmaxFrac: 1, ArgmaxGap: 1e-3}
}

// RuleQ8 judges an f32 trace against a Q8_0 file.
func RuleQ8() Rule {
	return Rule{Name: "f32 trace vs Q8_0 file", NormTol: 0.01, ArgmaxFrac: 0.9, MinOverlap: 27, OverlapFrac: 1}
}

// RuleQ4 judges an f32 trace against a Q4_0 file.
func RuleQ4() Rule {
	return Rule{Name: "f32 trace vs Q4_0 file", NormTol: 0.05, MinOverlap: 20, OverlapFrac: 0.9}
}

// SelectRule picks the parity rule for a trace computed with weights
// against a file of quant type q; other pairings have no defined rule.
func SelectRule(weights string, q quant.Type) (Rule, error) {
	switch {
	case weights == "f32" && q == quant.F32:
		return RuleF32(), nil
	case weights == "f32" && q == quant.Q8_0:
		return RuleQ8(), nil
	case weights == "f32" && q == quant.Q4_0:
		return RuleQ4(), nil
	case weights == "q4_replay" && q == quant.Q4_0, weights == "q8_replay" && q == quant.Q8_0:
		return RuleReplay(), nil
	}
	return Rule{}, fmt.Errorf("no parity rule for a %q trace against a %s file (replay traces need the same quantization)", weights, q)
}
