package generate

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"

	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/cflowfmt/tokmeta"
	"github.com/cflow-dev/cflow/convert"
	"github.com/cflow-dev/cflow/engine"
	"github.com/cflow-dev/cflow/quant"
	"github.com/cflow-dev/cflow/tokenizer"
	"github.com/cflow-dev/cflow/trace"
	"github.com/cflow-dev/cflow/verify"
	"github.com/cflow-dev/cflow/vflowfmt"
)

var demo struct {
	once sync.Once
	path string
	err  error
}

// demoModel converts the trained demo model (byte tokenizer, EOS 257,
// 256 positions) to Q4_0 once per test binary.
func demoModel(t *testing.T) (*cflowfmt.Model, tokenizer.Tokenizer) {
	t.Helper()
	demo.once.Do(func() {
		dir, err := mkdirTemp()
		if err != nil {
			demo.err = err
			return
		}
		demo.path = filepath.Join(dir, "demo.cflow")
		_, demo.err = convert.Convert(context.Background(), "../golden/trained/arch2_4_combined_demo", demo.path,
			convert.Options{Quant: quant.Q4_0, NUMANodes: 1, Workers: 1})
	})
	if demo.err != nil {
		t.Fatal(demo.err)
	}
	m, err := vflowfmt.OpenModel(demo.path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	tk, err := tokmeta.Load(m.Meta, int(m.Header.VocabSize))
	if err != nil {
		t.Fatal(err)
	}
	return m, tk
}

func newEngine(t *testing.T, m *cflowfmt.Model) *engine.Engine {
	t.Helper()
	e, err := engine.New(m, engine.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

func greedy() Params { return Params{TopP: 1, RepeatPenalty: 1} }

// run generates with req on a fresh engine and returns the streamed text
// and tokens.
func run(t *testing.T, m *cflowfmt.Model, req Request, opt Options) (string, []Token, Stats) {
	t.Helper()
	h := &m.Header
	seq, err := NewSequence(req, int(h.VocabSize), int(h.MaxSeqLen))
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	var toks []Token
	opt.OnToken = func(tk Token) error {
		text.Write(tk.Text)
		toks = append(toks, tk)
		return nil
	}
	st, err := Run(context.Background(), newEngine(t, m), seq, opt)
	if err != nil {
		t.Fatal(err)
	}
	return text.String(), toks, st
}

// TestRunGreedyMatchesSteps: Run's greedy tokens are the argmax chain of
// the engine stepped by hand, its text their pieces, and the trace it
// records replays against the same file.
func TestRunGreedyMatchesSteps(t *testing.T) {
	m, tk := demoModel(t)
	prompt, _ := EncodePrompt(tk, "Once upon a time")
	e := newEngine(t, m)
	var want []int
	logits, _ := Feed(e, prompt, nil)
	for range 20 {
		next := trace.TopK(logits, 1)[0]
		want = append(want, next)
		logits, _ = e.Step(next)
	}
	tr := NewTrace(m, prompt)
	text, toks, st := run(t, m, Request{Prompt: prompt, MaxTokens: 20, Ctx: 256, Params: greedy(), Tokenizer: tk, TopLogprobs: -1}, Options{Trace: tr})
	for i, tok := range toks {
		if tok.ID != want[i] {
			t.Fatalf("token %d = %d, stepped argmax %d", i, tok.ID, want[i])
		}
	}
	if text != string(Text(tk, prompt[len(prompt)-1], want)) {
		t.Fatalf("text %q", text)
	}
	if st.Finish != FinishLength || st.Reason != "max tokens" || st.PromptTokens != len(prompt) || st.DecodeTokens != 19 || st.Generated != 20 || st.DecodeBytes <= 0 || st.DecodeTime <= 0 || st.PromptBytes <= 0 {
		t.Fatalf("stats %+v", st)
	}
	if len(tr.Steps) != len(prompt)+19 || len(tr.Generated) != 20 {
		t.Fatalf("trace: %d steps, %d generated", len(tr.Steps), len(tr.Generated))
	}
	if err := tr.Check(); err != nil {
		t.Fatal(err)
	}
	rule, _ := verify.SelectRule(tr.Weights, m.Header.QuantType)
	e2 := newEngine(t, m)
	if rep, err := verify.Replay(e2, &tr.Trace, rule); err != nil || !rep.Pass {
		t.Fatalf("replaying the recorded trace: %v %+v", err, rep)
	}
}

// TestRunStops: a stop string cut from the greedy text ends the run there
// (finish stop, the string not emitted), a stop id ends it at that token,
// and a context shorter than prompt + max tokens ends it with length.
func TestRunStops(t *testing.T) {
	m, tk := demoModel(t)
	prompt, _ := EncodePrompt(tk, "Once upon a time")
	req := Request{Prompt: prompt, MaxTokens: 40, Ctx: 256, Params: greedy(), Tokenizer: tk, TopLogprobs: -1}
	full, toks, _ := run(t, m, req, Options{})
	stop := full[12:16]
	r := req
	r.Stop = []string{"never there", stop}
	got, _, st := run(t, m, r, Options{})
	if want := full[:bytes.Index([]byte(full), []byte(stop))]; got != want || st.Finish != FinishStop || st.Reason != "stop string" {
		t.Fatalf("stop %q: got %q (%s), want %q", stop, got, st.Reason, want)
	}
	r = req
	r.StopIDs = []int{toks[5].ID}
	_, got2, st := run(t, m, r, Options{})
	first := 0
	for toks[first].ID != toks[5].ID {
		first++
	}
	if len(got2) != first+1 || st.Finish != FinishStop || st.Reason != "EOS" {
		t.Fatalf("stop id %d: %d tokens (%s), want %d", toks[5].ID, len(got2), st.Reason, first+1)
	}
	r = req
	r.Ctx = len(prompt) + 7
	_, got3, st := run(t, m, r, Options{})
	if len(got3) != 8 || st.Finish != FinishLength || st.Reason != "context full" {
		t.Fatalf("ctx %d: %d tokens, %+v", r.Ctx, len(got3), st)
	}
}

// TestRunLogprobs: the chosen token's log-probability is log softmax of
// the logits, and greedy's choice is the top alternative.
func TestRunLogprobs(t *testing.T) {
	m, tk := demoModel(t)
	prompt, _ := EncodePrompt(tk, "The cat")
	_, toks, _ := run(t, m, Request{Prompt: prompt, MaxTokens: 3, Ctx: 256, Params: greedy(), Tokenizer: tk, TopLogprobs: 3}, Options{})
	for _, tok := range toks {
		if len(tok.Top) != 3 || tok.Top[0].ID != tok.ID || tok.Top[0].Logprob != tok.Logprob || tok.Logprob > 0 || tok.Top[1].Logprob > tok.Top[0].Logprob {
			t.Fatalf("logprobs %+v", tok)
		}
	}
}

// TestNewSequenceRejects: bad requests are errors naming what is wrong.
func TestNewSequenceRejects(t *testing.T) {
	ok := Request{Prompt: []int{1, 2}, MaxTokens: 4, Ctx: 8, Params: greedy(), TopLogprobs: -1}
	for _, c := range []struct {
		param string
		set   func(*Request)
	}{
		{"max_tokens", func(r *Request) { r.MaxTokens = 0 }},
		{"ctx", func(r *Request) { r.Ctx = 9 }},
		{"top_logprobs", func(r *Request) { r.TopLogprobs = 21 }},
		{"stop", func(r *Request) { r.Stop = []string{"x"} }}, // no tokenizer
		{"temperature", func(r *Request) { r.Params.Temperature = -1 }},
	} {
		r := ok
		c.set(&r)
		_, err := NewSequence(r, 10, 8)
		var pe *ParamError
		if !errors.As(err, &pe) || pe.Param != c.param {
			t.Errorf("%s: %v", c.param, err)
		}
	}
	r := ok
	r.Prompt = make([]int, 9)
	r.Ctx = 8
	var pl *PromptTooLongError
	if _, err := NewSequence(r, 10, 8); !errors.As(err, &pl) {
		t.Errorf("long prompt: %v", err)
	}
	r = ok
	r.Prompt = []int{10}
	if _, err := NewSequence(r, 10, 8); err == nil {
		t.Errorf("token outside the vocabulary accepted")
	}
}
