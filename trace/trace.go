// Package trace is the reference-trace schema of docs/TRACE.md: the
// type, its file form and the one top-k order, shared by verify (which
// replays traces) and generate (which records them), so neither needs the
// other and the schema has one home.
package trace

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"

	"github.com/cflow-dev/cflow/internal/fileio"
)

// Schema is the only trace schema this package reads and writes.
const Schema = "cflow-trace/1"

// TopN is how many logits a trace step keeps.
const TopN = 32

// Trace is one reference run, field for field the TRACE.md schema.
type Trace struct {
	Schema       string `json:"schema"`
	Model        string `json:"model"`
	Architecture string `json:"architecture"`
	Weights      string `json:"weights"`
	Prompt       []int  `json:"prompt"`
	Generated    []int  `json:"generated"`
	Steps        []Step `json:"steps"`
}

// Step is one decode position of a trace.
type Step struct {
	Position      int       `json:"position"`
	InputToken    int       `json:"input_token"`
	ResidualNorms []float64 `json:"residual_norms"`
	PreLMHeadNorm float64   `json:"pre_lm_head_norm"`
	TopIDs        []int     `json:"top_ids"`
	TopLogits     []float64 `json:"top_logits"`
	Argmax        int       `json:"argmax"`
}

// Load reads and checks a trace file.
func Load(path string) (*Trace, error) {
	b, err := fileio.ReadFileLimit(path, fileio.MaxArgFileBytes)
	if err != nil {
		return nil, err
	}
	var t Trace
	if err := json.Unmarshal(b, &t); err != nil {
		// Say what was expected: the decoder's own words ("cannot
		// unmarshal array into Go value of type trace.Trace") do not.
		return nil, fmt.Errorf("%s: not a trace (a JSON object, docs/TRACE.md): %w", path, err)
	}
	if err := t.Check(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &t, nil
}

// Check validates the trace's internal consistency: schema, one step per
// fed token, inputs that follow prompt then generated, top lists of equal
// length.
func (t *Trace) Check() error {
	if t.Schema != Schema {
		return fmt.Errorf("schema %q, want %q", t.Schema, Schema)
	}
	if len(t.Steps) == 0 {
		return fmt.Errorf("trace has no steps")
	}
	if len(t.Steps) > len(t.Prompt)+len(t.Generated) {
		return fmt.Errorf("%d steps but only %d prompt + %d generated tokens", len(t.Steps), len(t.Prompt), len(t.Generated))
	}
	for i, s := range t.Steps {
		if s.InputToken != t.Token(i) {
			return fmt.Errorf("step %d input_token %d, but the teacher-forced token is %d", i, s.InputToken, t.Token(i))
		}
		if len(s.TopIDs) != len(s.TopLogits) || len(s.TopIDs) == 0 {
			return fmt.Errorf("step %d: %d top ids and %d top logits", i, len(s.TopIDs), len(s.TopLogits))
		}
	}
	return nil
}

// Token is the token step i feeds: prompt[i], then generated[i−len(prompt)].
func (t *Trace) Token(i int) int {
	if i < len(t.Prompt) {
		return t.Prompt[i]
	}
	return t.Generated[i-len(t.Prompt)]
}

// Write encodes the trace as indented JSON.
func (t *Trace) Write(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	return enc.Encode(t)
}

// Record makes a trace step from what an engine just computed for token
// tok at position pos: the residual norms after each pass, the norm
// before the LM head, and the logits (of which TopN are kept).
func Record(pos, tok int, residualNorms []float64, preLMHeadNorm float64, logits []float32) Step {
	ids := TopK(logits, TopN)
	s := Step{Position: pos, InputToken: tok, PreLMHeadNorm: preLMHeadNorm,
		ResidualNorms: append([]float64(nil), residualNorms...), TopIDs: ids, Argmax: ids[0]}
	for _, id := range ids {
		s.TopLogits = append(s.TopLogits, float64(logits[id]))
	}
	return s
}

// TopK returns the ids of the k largest logits, descending, ties to the
// lower id (TRACE.md's order).
func TopK(logits []float32, k int) []int {
	k = min(k, len(logits))
	ids := make([]int, 0, k+1)
	for i, v := range logits {
		if len(ids) == k && !(v > logits[ids[k-1]]) {
			continue
		}
		j := sort.Search(len(ids), func(j int) bool { return v > logits[ids[j]] })
		ids = append(ids, 0)
		copy(ids[j+1:], ids[j:])
		ids[j] = i
		if len(ids) > k {
			ids = ids[:k]
		}
	}
	return ids
}
