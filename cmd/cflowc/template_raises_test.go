package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cflow-dev/cflow/cflowfmt/tokmeta"
	"github.com/cflow-dev/cflow/serve"
	"github.com/cflow-dev/cflow/vflowfmt"
)

// TestTemplateThatRaises: a chat template on which jinja2 raises (a
// string plus an undefined variable: UndefinedError, as in llama.cpp's
// firefunction-v2 template without its functions; chat's probes hold the
// jinja2 truth) is said to fail by every front end — tokenize --chat and
// chat exit 2, serve answers 400 naming messages — never rendered as
// something else.
func TestTemplateThatRaises(t *testing.T) {
	dir := t.TempDir()
	tokPath := writeChatTokenizer(t, dir, `{{ "tools: " + functions }}{% for m in messages %}{{ m.content }}{% endfor %}`)
	model := filepath.Join(dir, "m.cflow")
	if code := runApp("convert", copyFixture(t, "llama"), "-o", model, "--quant", "f32", "--quiet", "--tokenizer", tokPath); code != 0 {
		t.Fatalf("convert: exit %d", code)
	}
	msgs := filepath.Join(dir, "msgs.json")
	os.WriteFile(msgs, []byte(`[{"role":"user","content":"hi"}]`), 0o644)
	if code, out := runIO(t, "", "tokenize", model, "--chat", msgs); code != exitUsage {
		t.Errorf("tokenize --chat: exit %d (%q), want %d", code, out, exitUsage)
	}
	if code, out := runIO(t, "hi\n", "chat", model, "--max-tokens", "2", "--threads", "1"); code != exitUsage {
		t.Errorf("chat: exit %d (%q), want %d", code, out, exitUsage)
	}
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
	s, err := serve.New(serve.Config{Model: m, Tokenizer: tk, Template: tmpl, Parallel: 1, Threads: 1, ModelID: "m"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	hs := httptest.NewServer(s.Handler())
	defer hs.Close()
	resp, err := http.Post(hs.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"messages":[{"role":"user","content":"hi"}],"max_tokens":2}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b := new(strings.Builder)
	io.Copy(b, resp.Body)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(b.String(), `"param":"messages"`) || !strings.Contains(b.String(), "undefined") {
		t.Errorf("serve: %d %s, want a 400 naming messages and the undefined value", resp.StatusCode, b)
	}
}
