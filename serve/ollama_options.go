package serve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// ollamaDefaults are Ollama's own sampling defaults (api.DefaultOptions):
// an Ollama client that sets no option samples as it would against an
// Ollama server whose Modelfile sets none. The OpenAI path keeps OpenAI's.
var ollamaDefaults = map[string]any{"temperature": 0.8, "top_k": 40, "top_p": 0.9, "repeat_penalty": 1.1, "repeat_last_n": 64}

// ollamaSampling are the options that are the OpenAI fields of the same
// meaning (and name), checked there.
var ollamaSampling = []string{"temperature", "top_k", "top_p", "min_p", "typical_p", "repeat_penalty",
	"presence_penalty", "frequency_penalty", "mirostat"}

// ollamaNoEffect are the options that change nothing this server sends:
// runner settings (threads, batch, GPU layers, memory mapping: the reply
// is the same), num_keep (only a context shift reads it, and serve never
// shifts) and mirostat's tau and eta (only mirostat reads them, and it is
// refused unless 0).
var ollamaNoEffect = map[string]bool{"num_keep": true, "mirostat_tau": true, "mirostat_eta": true, "numa": true,
	"num_batch": true, "num_gpu": true, "main_gpu": true, "low_vram": true, "f16_kv": true, "use_mmap": true,
	"use_mlock": true, "num_thread": true, "logits_all": true}

// ollamaParams maps the OpenAI request's field names back to the Ollama
// request's, so the OpenAI path's 400s name what the client sent.
var ollamaParams = map[string]string{"max_tokens": "options.num_predict", "stop": "options.stop", "seed": "options.seed",
	"repeat_last_n": "options.repeat_last_n", "response_format": "format", "json_schema": "format",
	"chat_template_kwargs": "think", "stream": "stream"}

func init() {
	for _, k := range ollamaSampling {
		ollamaParams[k] = "options." + k
	}
}

// ollamaTranslate is the OpenAI request an Ollama request's shared
// fields mean: sampling options (Ollama's defaults under them), format,
// think; always streamed with usage, which ollamaWriter turns back into
// one answer or NDJSON. chat says the request goes to the chat endpoint
// (think and a JSON schema format need its template and parser).
func (s *Server) ollamaTranslate(c *ollamaCommon, chat bool) (map[string]any, *apiError) {
	out := map[string]any{"stream": true, "stream_options": map[string]any{"include_usage": true}}
	for k, v := range ollamaDefaults {
		out[k] = v
	}
	if e := s.ollamaOptions(c.Options, out); e != nil {
		return nil, e
	}
	if e := ollamaFormat(c.Format, out); e != nil {
		return nil, e
	}
	if isSet(c.Think) {
		var on bool
		if json.Unmarshal(c.Think, &on) != nil {
			return nil, badParam("think", "%s: only true or false is supported (effort levels are not)", c.Think)
		}
		if !chat {
			return nil, badParam("think", "raw: true sends the prompt as it is; thinking needs the chat template")
		}
		out["chat_template_kwargs"] = map[string]any{"enable_thinking": on}
	}
	if c.Logprobs != nil && *c.Logprobs || c.TopLogprobs != nil && *c.TopLogprobs != 0 {
		if !chat {
			return nil, badParam("logprobs", "with raw: true log-probabilities are not supported (POST /v1/completions has them)")
		}
		if c.Logprobs != nil {
			out["logprobs"] = *c.Logprobs
		}
		if c.TopLogprobs != nil {
			out["top_logprobs"] = *c.TopLogprobs
		}
	}
	return out, nil
}

// ollamaOptions copies "options" into the OpenAI request out, each
// option implemented, known to change nothing, or refused by name.
func (s *Server) ollamaOptions(opts map[string]json.RawMessage, out map[string]any) *apiError {
	for _, k := range ollamaSampling {
		if raw, ok := opts[k]; ok && isSet(raw) {
			out[k] = raw
		}
	}
	num := func(k string) (float64, bool, *apiError) {
		raw, ok := opts[k]
		if !ok || !isSet(raw) {
			return 0, false, nil
		}
		var v float64
		if json.Unmarshal(raw, &v) != nil {
			return 0, false, badParam("options."+k, "expected a number, got %s", raw)
		}
		return v, true, nil
	}
	isInt := func(v float64) bool { return v == float64(int64(v)) }
	if v, ok, e := num("seed"); e != nil {
		return e
	} else if ok && v != -1 {
		out["seed"] = opts["seed"]
	}
	if v, ok, e := num("num_predict"); e != nil {
		return e
	} else if ok {
		switch {
		case v == -1 || v == -2: // no limit; fill the context: both the context left
		case v >= 1 && isInt(v):
			out["max_tokens"] = opts["num_predict"]
		default:
			return badParam("options.num_predict", "%v: must be ≥ 1, or -1 (no limit) or -2 (fill the context)", v)
		}
	}
	if v, ok, e := num("repeat_last_n"); e != nil {
		return e
	} else if ok {
		if v == -1 { // Ollama's "the whole context"
			out["repeat_last_n"] = s.ctx
		} else {
			out["repeat_last_n"] = opts["repeat_last_n"]
		}
	}
	if v, ok, e := num("num_ctx"); e != nil {
		return e
	} else if ok && v < float64(s.ctx) {
		return badParam("options.num_ctx", "%v: this server gives every request its --ctx of %d positions; a smaller context per request is not supported (send num_ctx ≥ %d, or none)", v, s.ctx, s.ctx)
	}
	if v, ok, e := num("tfs_z"); e != nil {
		return e
	} else if ok && v != 1 && v != 0 {
		return badParam("options.tfs_z", "%v: tail-free sampling is not supported (only 1, off)", v)
	}
	for _, k := range []string{"penalize_newline", "vocab_only"} {
		if raw, ok := opts[k]; ok && isSet(raw) && !bytes.Equal(bytes.TrimSpace(raw), []byte("false")) {
			return badParam("options."+k, "%s: not supported (only false)", raw)
		}
	}
	if raw, ok := opts["stop"]; ok && isSet(raw) {
		out["stop"] = raw
	}
	for k := range opts {
		if !ollamaNoEffect[k] && !ollamaHandled(k) {
			return badParam("options."+k, "not supported") // strictKeys knows no other
		}
	}
	return nil
}

func ollamaHandled(k string) bool {
	switch k {
	case "seed", "num_predict", "repeat_last_n", "num_ctx", "tfs_z", "penalize_newline", "vocab_only", "stop":
		return true
	}
	for _, s := range ollamaSampling {
		if s == k {
			return true
		}
	}
	return false
}

// ollamaFormat maps "format": "json" (any JSON object) or a JSON Schema.
func ollamaFormat(raw json.RawMessage, out map[string]any) *apiError {
	if !isSet(raw) {
		return nil
	}
	var str string
	if json.Unmarshal(raw, &str) == nil {
		switch str {
		case "":
			return nil
		case "json":
			out["response_format"] = map[string]any{"type": "json_object"}
			return nil
		}
		return badParam("format", "%q: must be \"json\" or a JSON Schema object", str)
	}
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' {
		return badParam("format", "must be \"json\" or a JSON Schema object")
	}
	out["response_format"] = map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "format", "schema": raw}}
	return nil
}

// ollamaMessageFor rewrites an OpenAI error message's leading field name to
// the Ollama request's ("temperature: …" → "options.temperature: …").
func ollamaMessageFor(param *string, msg string) string {
	if param == nil {
		return msg
	}
	p := *param
	if strings.HasPrefix(p, "messages[") && strings.HasSuffix(p, "].name") { // Ollama's tool_name
		name := strings.TrimSuffix(p, "name") + "tool_name"
		if after, ok := strings.CutPrefix(msg, p+":"); ok {
			return name + ":" + after
		}
		return name + ": " + msg
	}
	root, rest, _ := strings.Cut(p, ".")
	name, ok := ollamaParams[root]
	if !ok {
		return msg
	}
	if rest != "" {
		name += "." + rest
	}
	if after, ok := strings.CutPrefix(msg, p+":"); ok {
		return name + ":" + after
	}
	return fmt.Sprintf("%s: %s", name, msg)
}
