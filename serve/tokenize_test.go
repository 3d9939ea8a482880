package serve

import (
	"testing"
)

// TestTokenizeEndpoints: the demo's byte tokenizer is its own truth (a
// token is a byte; BOS 256): /tokenize, /detokenize and /apply-template
// in llama-server's shapes.
func TestTokenizeEndpoints(t *testing.T) {
	_, hs := startServer(t, Config{Parallel: 1}, nil)
	code, v := post(t, hs.URL+"/tokenize", `{"content":"hé!"}`)
	want := []any{104.0, 0xc3 * 1.0, 0xa9 * 1.0, 33.0}
	if code != 200 || !equalAny(v["tokens"], want) {
		t.Errorf("tokenize: %d %v, want %v", code, v, want)
	}
	if _, v = post(t, hs.URL+"/tokenize", `{"content":"hi","add_special":true}`); !equalAny(v["tokens"], []any{256.0, 104.0, 105.0}) {
		t.Errorf("add_special: %v", v)
	}
	_, v = post(t, hs.URL+"/tokenize", `{"content":"hé","with_pieces":true}`)
	toks, _ := v["tokens"].([]any)
	if len(toks) != 3 || toks[0].(map[string]any)["piece"] != "h" || !equalAny(toks[1].(map[string]any)["piece"], []any{195.0}) {
		t.Errorf("with_pieces: %v", v)
	}
	if code, v = post(t, hs.URL+"/detokenize", `{"tokens":[104,195,169,33]}`); code != 200 || v["content"] != "hé!" {
		t.Errorf("detokenize: %d %v", code, v)
	}
	if code, _ = post(t, hs.URL+"/detokenize", `{"tokens":[99999]}`); code != 400 {
		t.Errorf("detokenize out of vocabulary: %d", code)
	}
	if code, _ = post(t, hs.URL+"/tokenize", `{"text":"x"}`); code != 400 {
		t.Errorf("tokenize unknown key: %d", code)
	}
	code, v = post(t, hs.URL+"/apply-template", `{"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Once upon a time"}]}`)
	if code != 200 || v["prompt"] != "Be brief.\nOnce upon a time" {
		t.Errorf("apply-template: %d %v", code, v)
	}
}

func equalAny(a any, b []any) bool {
	l, ok := a.([]any)
	if !ok || len(l) != len(b) {
		return false
	}
	for i := range l {
		if l[i] != b[i] {
			return false
		}
	}
	return true
}
