package serve

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"sort"
	"time"
)

// ollamaRun runs the OpenAI request inner through handler h with an
// ollamaWriter in place of w: the OpenAI reply's events become Ollama's
// NDJSON lines (or, with "stream": false, one JSON object). field is the
// text's key: "message" (chat) or "response" (generate).
func (s *Server) ollamaRun(w http.ResponseWriter, r *http.Request, inner map[string]any, c *ollamaCommon, h http.HandlerFunc, field string) {
	body, err := json.Marshal(inner)
	if err != nil {
		ollamaError(w, badRequest("invalid_json", "%v", err))
		return
	}
	r2 := r.Clone(r.Context())
	r2.Body = io.NopCloser(bytes.NewReader(body))
	r2.ContentLength = int64(len(body))
	ow := &ollamaWriter{w: w, h: http.Header{}, model: c.Model, field: field, stream: c.Stream == nil || *c.Stream, t0: time.Now()}
	h(ow, r2)
	ow.close()
}

// ollamaWriter is the http.ResponseWriter the OpenAI handler writes to
// for an Ollama request. It reads the handler's server-sent events as
// they come (a first token marks the end of the prompt's evaluation) and
// writes Ollama's answer to w; an error answer becomes Ollama's
// {"error": message}, its field named as the Ollama request named it.
// Unwrap hands the handler's read and write deadlines to w's connection.
type ollamaWriter struct {
	w      http.ResponseWriter
	h      http.Header
	status int
	buf    bytes.Buffer // a partial SSE line, or an error answer's body

	model, field string
	stream       bool
	started      bool // w's header is written
	done         bool // the final answer is written
	t0, t1       time.Time

	content, thinking bytes.Buffer
	calls             map[int]*ollamaCallAcc
	// logprobs are the tokens' entries not yet sent (OpenAI's chat shape
	// is Ollama's: token, logprob, bytes, top_logprobs).
	logprobs     []json.RawMessage
	finish       string
	prompt, eval int
}

// ollamaCallAcc gathers one streamed tool call (OpenAI streams its
// arguments in pieces; Ollama sends each call whole).
type ollamaCallAcc struct {
	id, name string
	args     bytes.Buffer
}

func (o *ollamaWriter) Header() http.Header { return o.h }

func (o *ollamaWriter) WriteHeader(code int) {
	if o.status == 0 {
		o.status = code
	}
}

// Unwrap lets http.ResponseController reach the connection (deadlines).
func (o *ollamaWriter) Unwrap() http.ResponseWriter { return o.w }

// FlushError flushes what has been written to the client.
func (o *ollamaWriter) FlushError() error {
	if !o.started {
		return nil
	}
	return http.NewResponseController(o.w).Flush()
}

func (o *ollamaWriter) Write(b []byte) (int, error) {
	o.WriteHeader(http.StatusOK)
	o.buf.Write(b)
	if o.status != http.StatusOK {
		return len(b), nil
	}
	for {
		line, _, ok := bytes.Cut(o.buf.Bytes(), []byte("\n"))
		if !ok {
			break
		}
		err := o.event(line)
		o.buf.Next(len(line) + 1)
		if err != nil {
			return len(b), err
		}
	}
	return len(b), nil
}

// openAIChunk is the part of an OpenAI stream chunk Ollama's answer uses.
type openAIChunk struct {
	Choices []struct {
		Delta struct {
			Role             *string `json:"role"`
			Content          string  `json:"content"`
			ReasoningContent string  `json:"reasoning_content"`
			ToolCalls        []struct {
				Index    int    `json:"index"`
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		Text     string `json:"text"`
		Logprobs *struct {
			Content []json.RawMessage `json:"content"`
		} `json:"logprobs"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
	Error *apiError `json:"error"`
}

// event takes one SSE line of the OpenAI stream.
func (o *ollamaWriter) event(line []byte) error {
	data, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r"), []byte("data: "))
	if !ok || o.done {
		return nil // blank separators, comments (keep-alives)
	}
	if string(data) == "[DONE]" {
		return o.final()
	}
	var c openAIChunk
	if err := json.Unmarshal(data, &c); err != nil {
		return err
	}
	if c.Error != nil {
		o.fail(c.Error)
		return nil
	}
	if c.Usage != nil {
		o.prompt, o.eval = c.Usage.PromptTokens, c.Usage.CompletionTokens
	}
	if len(c.Choices) == 0 {
		return nil
	}
	ch := c.Choices[0]
	d := ch.Delta
	if d.Role == nil && o.t1.IsZero() {
		o.t1 = time.Now() // the first token: the prompt is evaluated
	}
	if ch.FinishReason != nil {
		o.finish = *ch.FinishReason
	}
	for _, tc := range d.ToolCalls {
		if o.calls == nil {
			o.calls = map[int]*ollamaCallAcc{}
		}
		a := o.calls[tc.Index]
		if a == nil {
			a = &ollamaCallAcc{}
			o.calls[tc.Index] = a
		}
		if tc.ID != "" {
			a.id = tc.ID
		}
		a.name += tc.Function.Name
		a.args.WriteString(tc.Function.Arguments)
	}
	if ch.Logprobs != nil {
		o.logprobs = append(o.logprobs, ch.Logprobs.Content...)
	}
	text := d.Content + ch.Text
	o.content.WriteString(text)
	o.thinking.WriteString(d.ReasoningContent)
	if !o.stream || text == "" && d.ReasoningContent == "" {
		return nil
	}
	return o.line(o.piece(text, d.ReasoningContent, nil))
}

// piece is one answer object with its text, thinking and tool calls.
func (o *ollamaWriter) piece(text, thinking string, calls []map[string]any) map[string]any {
	m := map[string]any{"model": o.model, "created_at": ollamaNow(), "done": false}
	if len(o.logprobs) > 0 {
		m["logprobs"] = o.logprobs
		o.logprobs = nil
	}
	if o.field == "message" {
		msg := map[string]any{"role": "assistant", "content": text}
		if thinking != "" {
			msg["thinking"] = thinking
		}
		if len(calls) > 0 {
			msg["tool_calls"] = calls
		}
		m["message"] = msg
	} else {
		m["response"] = text
		if thinking != "" {
			m["thinking"] = thinking
		}
	}
	return m
}

// toolCalls are the gathered calls in Ollama's shape: arguments an object.
func (o *ollamaWriter) toolCalls() []map[string]any {
	idx := make([]int, 0, len(o.calls))
	for i := range o.calls {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	var out []map[string]any
	for n, i := range idx {
		a := o.calls[i]
		args := json.RawMessage(a.args.Bytes())
		if !json.Valid(args) {
			b, _ := json.Marshal(a.args.String())
			args = b
		}
		out = append(out, map[string]any{"id": a.id, "function": map[string]any{"index": n, "name": a.name, "arguments": args}})
	}
	return out
}

// final writes the last object: done, why, the counts and durations (ns).
func (o *ollamaWriter) final() error {
	o.done = true
	end := time.Now()
	if o.t1.IsZero() {
		o.t1 = end
	}
	reason := o.finish
	if reason == "tool_calls" || reason == "" {
		reason = "stop" // Ollama's done_reason after tool calls
	}
	calls := o.toolCalls()
	if o.stream && len(calls) > 0 {
		if err := o.line(o.piece("", "", calls)); err != nil {
			return err
		}
		calls = nil
	}
	var m map[string]any
	if o.stream {
		m = o.piece("", "", nil)
	} else {
		m = o.piece(o.content.String(), o.thinking.String(), calls)
	}
	m["done"], m["done_reason"] = true, reason
	m["total_duration"] = end.Sub(o.t0).Nanoseconds()
	m["load_duration"] = 0 // the model is loaded at start
	m["prompt_eval_count"], m["prompt_eval_duration"] = o.prompt, o.t1.Sub(o.t0).Nanoseconds()
	m["eval_count"], m["eval_duration"] = o.eval, end.Sub(o.t1).Nanoseconds()
	return o.line(m)
}

// line writes one object: an NDJSON line when streaming, else the answer.
func (o *ollamaWriter) line(v any) error {
	if !o.started {
		o.started = true
		ct := "application/json"
		if o.stream {
			ct = "application/x-ndjson"
		}
		o.w.Header().Set("Content-Type", ct)
		o.w.WriteHeader(http.StatusOK)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = o.w.Write(append(b, '\n'))
	return err
}

// fail answers an error that came after the OpenAI stream began: a last
// NDJSON line {"error"} when streaming (Ollama's way), else the status.
func (o *ollamaWriter) fail(e *apiError) {
	o.done = true
	msg := ollamaMessageFor(e.Param, e.Message)
	if o.stream || o.started {
		o.line(map[string]string{"error": msg})
		return
	}
	status := http.StatusInternalServerError
	if e.Type == "invalid_request_error" {
		status = http.StatusBadRequest
	}
	o.started = true
	writeJSON(o.w, status, map[string]string{"error": msg})
}

// close answers an error the handler sent before any event: its status
// and headers (Allow, Retry-After, Connection) with Ollama's body.
func (o *ollamaWriter) close() {
	if o.status == 0 || o.status == http.StatusOK || o.started {
		return
	}
	var e struct {
		Error *apiError `json:"error"`
	}
	msg := o.buf.String()
	if json.Unmarshal(o.buf.Bytes(), &e) == nil && e.Error != nil {
		msg = ollamaMessageFor(e.Error.Param, e.Error.Message)
	}
	for _, k := range []string{"Allow", "Retry-After", "Connection"} {
		if v := o.h.Get(k); v != "" {
			o.w.Header().Set(k, v)
		}
	}
	o.started = true
	writeJSON(o.w, o.status, map[string]string{"error": msg})
}

// ollamaNow is a created_at timestamp as Ollama writes them.
func ollamaNow() string { return time.Now().UTC().Format(time.RFC3339Nano) }
