package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// FuzzRequestBody: no body, on either completion endpoint, crashes the
// server (a handler or scheduler panic fails the fuzz run); every answer
// is a well-formed success, stream or OpenAI error object.
func FuzzRequestBody(f *testing.F) {
	for _, s := range []string{
		`{"messages":[{"role":"user","content":"Once"}],"max_tokens":4,"temperature":0}`,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"a"}]}],"max_tokens":3,"stream":true,"logprobs":true,"top_logprobs":2}`,
		`{"prompt":"abc","max_tokens":3,"stop":["b","c"],"logprobs":2,"seed":-4}`,
		`{"prompt":[256,72,105],"max_tokens":2,"top_k":3,"min_p":0.2,"repeat_penalty":1.3,"frequency_penalty":-1}`,
		`{"messages":[{"role":"user","content":"x"}],"temperature":1e999}`,
		`{"prompt":"` + "\xff\xfe" + `","stream":true,"stream_options":{"include_usage":true},"max_tokens":2}`,
		`{`, `null`, `[]`, `{"messages":null}`,
		`{"messages":[{"role":"user","content":"a","CONTENT":"b"}],"max_tokens":2}`, `{"prompt":"a","prompt":"b"}`,
		`{"prompt":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}`,
	} {
		f.Add(byte(0), []byte(s))
		f.Add(byte(1), []byte(s))
	}
	_, hs := startServer(f, Config{Parallel: 2, Queue: 2}, nil)
	h := hs.Config.Handler
	paths := []string{"/v1/chat/completions", "/v1/completions"}
	f.Fuzz(func(t *testing.T, which byte, body []byte) {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		req := httptest.NewRequestWithContext(ctx, "POST", paths[int(which)%len(paths)], bytes.NewReader(body))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if ctx.Err() != nil {
			return // cut off by the deadline: whatever was written is partial
		}
		out := rec.Body.Bytes()
		switch code := rec.Code; {
		case code == http.StatusOK && rec.Header().Get("Content-Type") == "text/event-stream":
			if !bytes.HasPrefix(out, []byte("data: ")) || !bytes.HasSuffix(out, []byte("data: [DONE]\n\n")) {
				t.Fatalf("stream %q", out)
			}
		case code == http.StatusOK:
			var v struct{ Choices []json.RawMessage }
			if json.Unmarshal(out, &v) != nil || len(v.Choices) != 1 {
				t.Fatalf("200 with %q", out)
			}
		case code == http.StatusBadRequest || code == http.StatusNotFound || code == http.StatusTooManyRequests ||
			code == http.StatusRequestEntityTooLarge:
			var v struct{ Error *apiError }
			if json.Unmarshal(out, &v) != nil || v.Error == nil || v.Error.Message == "" {
				t.Fatalf("%d with %q", code, out)
			}
		default:
			t.Fatalf("status %d for %q: %q", code, body, out)
		}
	})
}
