// Package generate owns the decode loop every front end shares — run,
// chat, serve (and bench/ppl's prompt feeding): feeding the prompt,
// sampling (one Sampler, one validated Params), stop conditions (stop
// tokens; stop strings matched on text across token boundaries and never
// emitted), streaming, stats and trace recording.
//
// The per-request state is a Sequence, which never touches an engine: Run
// drives one Sequence on one Engine; a server's scheduler drives many
// Sequences on their own engines (or one batched engine) step by step, and
// each produces exactly what Run would give it alone.
package generate

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cflow-dev/cflow/engine"
	"github.com/cflow-dev/cflow/tokenizer"
)

// Engine is what the loop needs of a decode engine (*engine.Engine).
type Engine interface {
	// Step feeds one token and returns the next position's logits.
	Step(tok int) ([]float32, error)
	// Pos is the number of tokens fed.
	Pos() int
	// Stats counts weight bytes read, for the bandwidth figures.
	Stats() engine.Stats
	// Observation describes the last Step, for traces.
	Observation() *engine.Observation
}

// Prefiller is an Engine that can feed several tokens of one sequence in
// one pass over the weights (batched prefill) and return the last token's
// logits.
type Prefiller interface {
	Prefill(toks []int) ([]float32, error)
}

// EachPrefiller is a Prefiller that also hands over every position's
// logits and observation (for traces and perplexity).
type EachPrefiller interface {
	PrefillEach(toks []int, each func(i int, logits []float32, obs *engine.Observation) error) error
}

// Feed feeds toks in order and returns the logits after the last. each,
// when set, sees every position's logits and observation (valid during
// the call only). Engines that prefill in batches (*engine.Engine) feed
// the tokens that way, bit-identical to one Step per token.
func Feed(e Engine, toks []int, each func(i int, logits []float32, obs *engine.Observation) error) ([]float32, error) {
	if len(toks) > 1 {
		if p, ok := e.(Prefiller); ok && each == nil {
			return p.Prefill(toks)
		}
		if p, ok := e.(EachPrefiller); ok && each != nil {
			var last []float32
			err := p.PrefillEach(toks, func(i int, logits []float32, obs *engine.Observation) error {
				if i == len(toks)-1 {
					last = append(last, logits...)
				}
				return each(i, logits, obs)
			})
			if err != nil {
				return nil, err
			}
			return last, nil
		}
	}
	var logits []float32
	for i, t := range toks {
		var err error
		if logits, err = e.Step(t); err != nil {
			return nil, err
		}
		if each != nil {
			if err := each(i, logits, e.Observation()); err != nil {
				return nil, err
			}
		}
	}
	return logits, nil
}

// Options are Run's hooks.
type Options struct {
	// OnToken sees every sampled token as it is produced (streaming); an
	// error from it stops the run and is returned.
	OnToken func(Token) error
	// Trace, when set, receives a step for every fed token and the
	// generated ids (the cflow-trace/1 file of run --trace-out).
	Trace *Trace
}

// Stats is what a run measured: token counts, wall time and weight bytes
// for the prompt and the decode phases, and why it stopped.
type Stats struct {
	// PromptTokens are fed before the first sample, Generated sampled,
	// DecodeTokens fed after the first sample (Generated less the last).
	PromptTokens, Generated, DecodeTokens int
	PromptTime, DecodeTime                time.Duration
	// PromptBytes and DecodeBytes are weight bytes read in each phase.
	PromptBytes, DecodeBytes int64
	// LastTokenBytes is the weight bytes of the last fed token.
	LastTokenBytes int64
	Finish         Finish
	Reason         string
}

// Run feeds seq's prompt to e and samples until a stop condition; the
// last token is reported but not fed. e is usually empty; a conversation
// that continues on e (chat turns) passes only the new tokens as the prompt
// and, as Request.Ctx, only the positions e has left.
func Run(ctx context.Context, e Engine, seq *Sequence, opt Options) (st Stats, err error) {
	var each func(int, []float32, *engine.Observation) error
	step := e.Step
	if opt.Trace != nil {
		step = func(tok int) ([]float32, error) {
			pos := e.Pos()
			logits, err := e.Step(tok)
			if err == nil {
				opt.Trace.record(pos, tok, e.Observation(), logits)
			}
			return logits, err
		}
		start := e.Pos()
		each = func(i int, logits []float32, obs *engine.Observation) error {
			opt.Trace.record(start+i, seq.Prompt()[i], obs, logits)
			return nil
		}
	}
	b0, t0 := e.Stats().Total.Sum(), time.Now()
	logits, err := Feed(e, seq.Prompt(), each)
	if err != nil {
		return st, err
	}
	st.PromptTokens, st.PromptTime = len(seq.Prompt()), time.Since(t0)
	b1, t1 := e.Stats().Total.Sum(), time.Now()
	st.PromptBytes = b1 - b0
	defer func() {
		st.DecodeTime = time.Since(t1)
		st.DecodeBytes = e.Stats().Total.Sum() - b1
		st.LastTokenBytes = e.Stats().Last.Sum()
	}()
	for {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		t := seq.Next(logits)
		st.Generated++
		if opt.Trace != nil {
			opt.Trace.Generated = append(opt.Trace.Generated, t.ID)
		}
		if opt.OnToken != nil {
			if err := opt.OnToken(t); err != nil {
				return st, err
			}
		}
		if t.Finish != "" {
			st.Finish, st.Reason = t.Finish, t.Reason
			return st, nil
		}
		if logits, err = step(t.ID); err != nil {
			if errors.Is(err, engine.ErrContextFull) {
				t := seq.Cut("context full")
				st.Finish, st.Reason = t.Finish, t.Reason
				if opt.OnToken != nil {
					return st, opt.OnToken(t)
				}
				return st, nil
			}
			return st, err
		}
		st.DecodeTokens++
	}
}

// String is run's summary line: prompt and decode rates and the weight
// bandwidth decode reached.
func (st Stats) String() string {
	rate := func(n int64, d time.Duration) float64 {
		if d <= 0 {
			return 0
		}
		return float64(n) / d.Seconds()
	}
	return fmt.Sprintf("prompt: %d tokens, %.2f tok/s; decode: %d tokens, %.2f tok/s; effective weight bandwidth %.2f GB/s (%.2f MB/token)",
		st.PromptTokens, rate(int64(st.PromptTokens), st.PromptTime), st.Generated, rate(int64(st.DecodeTokens), st.DecodeTime),
		rate(st.DecodeBytes, st.DecodeTime)/1e9, float64(st.LastTokenBytes)/1e6)
}

// EncodePrompt is the prompt run and the server's completions feed for
// text: BOS when the tokenizer adds one (tokenizer.AddsBOS), then the
// text's tokens.
func EncodePrompt(tk tokenizer.Tokenizer, text string) ([]int, error) {
	return EncodePromptLimit(tk, text, 0)
}

// EncodePromptLimit is EncodePrompt that stops once more than limit ids
// are out (tokenizer.EncodeLimited; limit ≤ 0: none): the server passes
// ctx, so it stops at ctx + 1 tokens, enough to refuse a prompt that does
// not fit without tokenizing all of it.
func EncodePromptLimit(tk tokenizer.Tokenizer, text string, limit int) ([]int, error) {
	var ids []int
	if tk.BOS() >= 0 && tokenizer.AddsBOS(tk) {
		ids = append(ids, tk.BOS())
	}
	if limit > 0 {
		limit = max(1, limit-len(ids))
	}
	body, err := tokenizer.EncodeLimited(tk, text, false, limit)
	if err != nil {
		return nil, err
	}
	return append(ids, body...), nil
}

// StopIDs are the tokens that end a generation with tk: EOS, plus the
// end-of-turn tokens of tokenizers that know them (an EndOfTurn method).
func StopIDs(tk tokenizer.Tokenizer) []int {
	if tk == nil {
		return nil
	}
	var ids []int
	if tk.EOS() >= 0 {
		ids = append(ids, tk.EOS())
	}
	if et, ok := tk.(interface{ EndOfTurn() []int }); ok {
		ids = append(ids, et.EndOfTurn()...)
	}
	return ids
}

// Text is the text of ids, each piece decoded after its predecessor (prev
// before the first; −1 at the start of a sequence).
func Text(tk tokenizer.Tokenizer, prev int, ids []int) []byte {
	var out []byte
	for _, id := range ids {
		out = append(out, tk.Piece(prev, id)...)
		prev = id
	}
	return out
}
