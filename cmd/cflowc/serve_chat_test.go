package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cflow-dev/cflow/cflowfmt/tokmeta"
	"github.com/cflow-dev/cflow/chat"
	"github.com/cflow-dev/cflow/engine"
	"github.com/cflow-dev/cflow/generate"
	"github.com/cflow-dev/cflow/serve"
	"github.com/cflow-dev/cflow/vflowfmt"
)

// TestServeFileTemplate: the server renders chat messages with the file's
// own template (the real Qwen2.5 one, ChatML specials as single ids):
// prompt_tokens is the rendered conversation's length as the chat package
// tokenizes it, and the greedy reply is generate's on those ids alone,
// stopped by <|im_end|> or the token limit.
func TestServeFileTemplate(t *testing.T) {
	model := chatModelFile(t)
	m, err := vflowfmt.OpenModel(model)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	vocab := int(m.Header.VocabSize)
	tk, err := tokmeta.Load(m.Meta, vocab)
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := serveTemplate(m.Meta, vocab, tk)
	if err != nil || tmpl == nil {
		t.Fatalf("template: %v %v", tmpl, err)
	}
	s, err := serve.New(serve.Config{Model: m, Tokenizer: tk, Template: tmpl, Parallel: 2, Threads: 1, ModelID: "m"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	hs := httptest.NewServer(s.Handler())
	defer hs.Close()
	resp, err := http.Post(hs.URL+"/v1/chat/completions", "application/json", strings.NewReader(
		`{"messages":[{"role":"developer","content":"Be brief."},{"role":"user","content":"Hello there"}],"temperature":0,"max_tokens":8}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v struct {
		Choices []struct{ Message struct{ Content string } }
		Usage   struct {
			PromptTokens int `json:"prompt_tokens"`
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || resp.StatusCode != 200 {
		t.Fatalf("%d %v", resp.StatusCode, err)
	}
	cm, err := chat.OpenModel(m.Meta, vocab)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := cm.Prompt([]chat.Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Hello there"}})
	if err != nil {
		t.Fatal(err)
	}
	if v.Usage.PromptTokens != len(ids) {
		t.Fatalf("prompt_tokens %d, the rendered conversation has %d", v.Usage.PromptTokens, len(ids))
	}
	e, err := engine.New(m, engine.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	seq, err := generate.NewSequence(generate.Request{Prompt: ids, MaxTokens: 8, Ctx: int(m.Header.MaxSeqLen),
		Params: generate.Params{TopP: 1, RepeatPenalty: 1}, StopIDs: generate.StopIDs(tk), Tokenizer: tk, TopLogprobs: -1}, vocab, int(m.Header.MaxSeqLen))
	if err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	if _, err := generate.Run(context.Background(), e, seq, generate.Options{OnToken: func(tok generate.Token) error {
		want.Write(tok.Text)
		return nil
	}}); err != nil {
		t.Fatal(err)
	}
	// JSON carries text: invalid UTF-8 from this random model becomes U+FFFD.
	var wantJSON string
	b, _ := json.Marshal(want.String())
	json.Unmarshal(b, &wantJSON)
	if got := v.Choices[0].Message.Content; got != wantJSON || got == "" {
		t.Fatalf("reply %q, alone %q", got, want.String())
	}
}
