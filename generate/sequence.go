package generate

import (
	"errors"
	"fmt"
	"math"

	"github.com/cflow-dev/cflow/tokenizer"
	"github.com/cflow-dev/cflow/trace"
)

// Request is one generation: the prompt, how to sample, when to stop.
type Request struct {
	// Prompt is fed as is (BOS included when wanted; see EncodePrompt).
	Prompt []int
	// MaxTokens bounds the generated tokens (≥ 1).
	MaxTokens int
	// Ctx is the number of positions the sequence may occupy (prompt and
	// generated); at most the model's maximum sequence length.
	Ctx    int
	Params Params
	// StopIDs end the sequence when sampled (EOS, end of turn); their text
	// is not emitted.
	StopIDs []int
	// Stop strings end the sequence when the generated text contains one;
	// the text from the stop string on is not emitted. Needs Tokenizer.
	Stop []string
	// Tokenizer turns tokens into text; nil generates ids only.
	Tokenizer tokenizer.Tokenizer
	// TopLogprobs: −1 computes no log-probabilities; 0 the chosen token's;
	// n > 0 also the n most likely tokens' (at most MaxTopLogprobs).
	TopLogprobs int
}

// MaxTopLogprobs bounds Request.TopLogprobs (the OpenAI API's limit).
const MaxTopLogprobs = 20

// Finish says why a sequence ended, in the OpenAI API's words.
type Finish string

// The finish reasons: a stop token or string, or a length limit (max
// tokens or the context).
const (
	FinishStop   Finish = "stop"
	FinishLength Finish = "length"
)

// Token is the outcome of one sampling step.
type Token struct {
	ID int
	// Text is the text this step releases: held-back bytes of earlier
	// tokens may come out here, and this token's may be held back (a
	// possible stop-string start, an incomplete UTF-8 character).
	Text []byte
	// Logprob is the chosen token's log-probability under the model's
	// logits (before penalties and temperature), Top the most likely
	// alternatives; set when Request.TopLogprobs ≥ 0.
	Logprob float64
	Top     []Logprob
	// Finish is set on the last token; Reason says which limit in words
	// (EOS, stop string, max tokens, context full).
	Finish Finish
	Reason string
}

// Logprob is one token's log-probability.
type Logprob struct {
	ID      int
	Logprob float64
}

// Sequence is one request's decode state: sampler, history, stop matching
// and detokenization. It never touches an engine, so one loop can advance
// many sequences on their own engines (or one batched engine) in any
// interleaving and each still produces what it would alone.
type Sequence struct {
	req     Request
	smp     *Sampler
	vocab   int
	history []int // prompt and generated
	stopIDs map[int]bool
	text    stopText
	done    bool
}

// NewSequence validates req against a model with vocab tokens and a
// maximum of maxCtx positions.
func NewSequence(req Request, vocab, maxCtx int) (*Sequence, error) {
	smp, err := NewSampler(req.Params)
	if err != nil {
		return nil, err
	}
	switch {
	case len(req.Prompt) == 0:
		return nil, errors.New("empty prompt")
	case req.MaxTokens < 1:
		return nil, &ParamError{"max_tokens", req.MaxTokens, "must be ≥ 1"}
	case req.Ctx < 1 || req.Ctx > maxCtx:
		return nil, &ParamError{"ctx", req.Ctx, fmt.Sprintf("must be in [1, %d] (the model's maximum sequence length)", maxCtx)}
	case len(req.Prompt) > req.Ctx:
		return nil, &PromptTooLongError{Tokens: len(req.Prompt), Ctx: req.Ctx}
	case req.TopLogprobs < -1 || req.TopLogprobs > MaxTopLogprobs:
		return nil, &ParamError{"top_logprobs", req.TopLogprobs, fmt.Sprintf("must be in [0, %d]", MaxTopLogprobs)}
	case len(req.Stop) > 0 && req.Tokenizer == nil:
		return nil, &ParamError{"stop", req.Stop, "stop strings need a tokenizer, and the model file has none"}
	}
	for i, t := range req.Prompt {
		if t < 0 || t >= vocab {
			return nil, fmt.Errorf("prompt token %d (at %d) outside the vocabulary of %d", t, i, vocab)
		}
	}
	s := &Sequence{req: req, smp: smp, vocab: vocab, stopIDs: map[int]bool{}}
	for _, t := range req.StopIDs {
		s.stopIDs[t] = true
	}
	for _, st := range req.Stop {
		if st == "" {
			return nil, &ParamError{"stop", req.Stop, "a stop string must not be empty"}
		}
		s.text.stops = append(s.text.stops, []byte(st))
	}
	s.history = append(make([]int, 0, len(req.Prompt)+min(req.MaxTokens, req.Ctx)), req.Prompt...)
	return s, nil
}

// PromptTooLongError is a prompt that does not fit the context.
type PromptTooLongError struct{ Tokens, Ctx int }

func (e *PromptTooLongError) Error() string {
	return fmt.Sprintf("the prompt has %d tokens, more than the context of %d", e.Tokens, e.Ctx)
}

// Prompt is the request's prompt.
func (s *Sequence) Prompt() []int { return s.req.Prompt }

// Generated is every token sampled so far.
func (s *Sequence) Generated() []int { return s.history[len(s.req.Prompt):] }

// Last is the token to feed next (the last of the history).
func (s *Sequence) Last() int { return s.history[len(s.history)-1] }

// Done reports whether the sequence has finished.
func (s *Sequence) Done() bool { return s.done }

// Next samples the token that follows the history from logits (the
// engine's output after feeding Last) and applies the stop conditions.
func (s *Sequence) Next(logits []float32) Token {
	prev := s.Last()
	id := s.smp.Sample(logits, s.history)
	s.history = append(s.history, id)
	t := Token{ID: id}
	if s.req.TopLogprobs >= 0 {
		t.Logprob, t.Top = logprobs(logits, id, s.req.TopLogprobs)
	}
	switch {
	case s.stopIDs[id]:
		return s.finish(t, FinishStop, "EOS", s.text.flush())
	case s.req.Tokenizer != nil:
		var hit bool
		t.Text, hit = s.text.add(s.req.Tokenizer.Piece(prev, id))
		if hit {
			s.done = true
			t.Finish, t.Reason = FinishStop, "stop string"
			return t
		}
	}
	switch {
	case len(s.Generated()) >= s.req.MaxTokens:
		return s.finish(t, FinishLength, "max tokens", s.text.flush())
	case len(s.history)-1 >= s.req.Ctx: // id's position is past the context
		return s.finish(t, FinishLength, "context full", s.text.flush())
	}
	return t
}

func (s *Sequence) finish(t Token, f Finish, why string, held []byte) Token {
	s.done = true
	t.Text = append(t.Text, held...)
	t.Finish, t.Reason = f, why
	return t
}

// Cut ends the sequence early because its engine cannot take another
// token (the context is full): it releases the held-back text.
func (s *Sequence) Cut(why string) Token {
	return s.finish(Token{ID: -1}, FinishLength, why, s.text.flush())
}

// logprobs is log softmax(logits) at id and at the n most likely tokens.
func logprobs(logits []float32, id, n int) (float64, []Logprob) {
	mx := float64(logits[Argmax(logits)])
	var sum float64
	for _, z := range logits {
		sum += math.Exp(float64(z) - mx)
	}
	lse := mx + math.Log(sum)
	var top []Logprob
	if n > 0 {
		for _, t := range trace.TopK(logits, n) {
			top = append(top, Logprob{t, float64(logits[t]) - lse})
		}
	}
	return float64(logits[id]) - lse, top
}

// TopLogprobs is the request's log-probability setting (−1: none).
func (s *Sequence) TopLogprobs() int { return s.req.TopLogprobs }
