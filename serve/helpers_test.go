package serve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/cflowfmt/tokmeta"
	"github.com/cflow-dev/cflow/convert"
	"github.com/cflow-dev/cflow/engine"
	"github.com/cflow-dev/cflow/generate"
	"github.com/cflow-dev/cflow/quant"
	"github.com/cflow-dev/cflow/tokenizer"
	"github.com/cflow-dev/cflow/trace"
	"github.com/cflow-dev/cflow/vflowfmt"
)

// The trained demo model (byte tokenizer, BOS 256, EOS 257, 256
// positions), converted to Q4_0 once per test binary into testDir.
var (
	testDir   string
	demoOnce  sync.Once
	demoPath  string
	demoError error
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "cflow-serve-")
	if err != nil {
		panic(err)
	}
	testDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func demoModel(t testing.TB) (*cflowfmt.Model, tokenizer.Tokenizer) {
	t.Helper()
	demoOnce.Do(func() {
		demoPath = filepath.Join(testDir, "demo.cflow")
		_, demoError = convert.Convert(context.Background(), "../golden/trained/arch2_4_combined_demo", demoPath,
			convert.Options{Quant: quant.Q4_0, NUMANodes: 1, Workers: 1})
	})
	if demoError != nil {
		t.Fatal(demoError)
	}
	m, err := vflowfmt.OpenModel(demoPath)
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

// startServer serves the demo model on a loopback test server.
func startServer(t testing.TB, cfg Config, wrap func(backend) backend) (*Server, *httptest.Server) {
	t.Helper()
	m, tk := demoModel(t)
	cfg.Model, cfg.Tokenizer, cfg.ModelID = m, tk, "demo"
	if cfg.Threads == 0 {
		cfg.Threads = 1
	}
	s, err := newServer(cfg, wrap)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		hs.Close()
		s.Close()
	})
	return s, hs
}

// greedyText is the reference a greedy reply must equal: the demo
// engine stepped by hand from BOS + prompt, argmax each time (ties to the
// lower id), n tokens, decoded — `cflowc run --temperature 0` without
// generate's loop.
func greedyText(t testing.TB, prompt string, n int) string {
	t.Helper()
	m, tk := demoModel(t)
	e, err := engine.New(m, engine.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ids, _ := generate.EncodePrompt(tk, prompt)
	var logits []float32
	for _, id := range ids {
		if logits, err = e.Step(id); err != nil {
			t.Fatal(err)
		}
	}
	var out []byte
	prev := ids[len(ids)-1]
	for i := 0; i < n; i++ {
		next := trace.TopK(logits, 1)[0]
		if next == tk.EOS() {
			break
		}
		out = append(out, tk.Piece(prev, next)...)
		prev = next
		if i+1 < n {
			if logits, err = e.Step(next); err != nil {
				t.Fatal(err)
			}
		}
	}
	return string(out)
}

// post sends body and returns the status and the decoded JSON answer.
func post(t testing.TB, url, body string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: answer is not JSON: %q", body, b)
	}
	return resp.StatusCode, v
}

// content is a chat answer's message content.
func content(v map[string]any) string {
	return v["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["content"].(string)
}

// sseEvents reads a stream's data payloads up to [DONE].
func sseEvents(t testing.TB, r io.Reader) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			continue
		}
		data, ok := bytes.CutPrefix(line, []byte("data: "))
		if !ok {
			t.Fatalf("not an SSE data line: %q", line)
		}
		if string(data) == "[DONE]" {
			return out
		}
		var v map[string]any
		if err := json.Unmarshal(data, &v); err != nil {
			t.Fatalf("SSE payload %q: %v", data, err)
		}
		out = append(out, v)
	}
	t.Fatalf("stream ended without [DONE] (%v)", sc.Err())
	return nil
}

// sseDecoder returns a stream's data payloads one by one (safe off the
// test goroutine: errors, not t.Fatal).
type sseDecoder struct {
	r  io.Reader
	sc *bufio.Scanner
}

func (d *sseDecoder) next() (string, error) {
	if d.sc == nil {
		d.sc = bufio.NewScanner(d.r)
	}
	for d.sc.Scan() {
		line := d.sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			return "", fmt.Errorf("not an SSE data line: %q", line)
		}
		return data, nil
	}
	if err := d.sc.Err(); err != nil {
		return "", err
	}
	return "", io.ErrUnexpectedEOF
}

// httptestServer serves s on a loopback test server closed with the test.
func httptestServer(t testing.TB, s *Server) *httptest.Server {
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)
	return hs
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
