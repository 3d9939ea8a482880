package serve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// The Ollama API (POST /api/chat, POST /api/generate) is a translation:
// each request is checked against Ollama's keys, rewritten as the
// OpenAI request it means (ollamaOptions maps "options"; format, think
// and tools map onto response_format, chat_template_kwargs and tools) and
// run by the OpenAI handler, whose event stream ollamaWriter turns into
// Ollama's NDJSON. So both APIs share one validation, one scheduler and
// one reply path, and a field the OpenAI path refuses is refused here by
// its Ollama name.

// ollamaOptionKeys are the keys of Ollama's "options" (api/types.go's
// Options and Runner).
var ollamaOptionKeys = keys{
	"num_keep": leaf, "seed": leaf, "num_predict": leaf, "top_k": leaf, "top_p": leaf, "min_p": leaf, "tfs_z": leaf,
	"typical_p": leaf, "repeat_last_n": leaf, "temperature": leaf, "repeat_penalty": leaf, "presence_penalty": leaf,
	"frequency_penalty": leaf, "mirostat": leaf, "mirostat_tau": leaf, "mirostat_eta": leaf, "penalize_newline": leaf,
	"stop": leaf,
	"numa": leaf, "num_ctx": leaf, "num_batch": leaf, "num_gpu": leaf, "main_gpu": leaf, "low_vram": leaf, "f16_kv": leaf,
	"logits_all": leaf, "vocab_only": leaf, "use_mmap": leaf, "use_mlock": leaf, "num_thread": leaf,
}

// ollamaToolCallKeys is an Ollama tool call: the function (arguments an
// object, not a string), with the index and id newer servers send.
var ollamaToolCallKeys = keys{"id": leaf, "type": leaf,
	"function": keys{"index": leaf, "name": leaf, "arguments": anyKeys}}

var ollamaCommonKeys = keys{"model": leaf, "stream": leaf, "format": anyKeys, "keep_alive": leaf, "options": ollamaOptionKeys,
	"think": leaf, "truncate": leaf, "shift": leaf, "logprobs": leaf, "top_logprobs": leaf}

var ollamaChatKeys = with(ollamaCommonKeys, keys{
	"messages": keys{"role": leaf, "content": leaf, "images": leaf, "thinking": leaf, "tool_calls": ollamaToolCallKeys,
		"tool_name": leaf, "tool_call_id": leaf},
	"tools": anyKeys,
})

var ollamaGenerateKeys = with(ollamaCommonKeys, keys{"prompt": leaf, "suffix": leaf, "system": leaf, "template": leaf,
	"context": leaf, "raw": leaf, "images": leaf})

// ollamaCommon are the fields /api/chat and /api/generate share.
type ollamaCommon struct {
	Model       string                     `json:"model"`
	Stream      *bool                      `json:"stream"`
	Format      json.RawMessage            `json:"format"`
	KeepAlive   json.RawMessage            `json:"keep_alive"`
	Options     map[string]json.RawMessage `json:"options"`
	Think       json.RawMessage            `json:"think"`
	Truncate    *bool                      `json:"truncate"`
	Shift       *bool                      `json:"shift"`
	Logprobs    *bool                      `json:"logprobs"`
	TopLogprobs *int                       `json:"top_logprobs"`
}

type ollamaChatRequest struct {
	ollamaCommon
	Messages []ollamaMessage `json:"messages"`
	Tools    json.RawMessage `json:"tools"`
}

type ollamaMessage struct {
	Role       string           `json:"role"`
	Content    string           `json:"content"`
	Images     json.RawMessage  `json:"images"`
	Thinking   string           `json:"thinking"`
	ToolCalls  []ollamaToolCall `json:"tool_calls"`
	ToolName   string           `json:"tool_name"`
	ToolCallID string           `json:"tool_call_id"`
}

type ollamaToolCall struct {
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Index     *int            `json:"index,omitempty"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

type ollamaGenerateRequest struct {
	ollamaCommon
	Prompt   string          `json:"prompt"`
	Suffix   string          `json:"suffix"`
	System   string          `json:"system"`
	Template string          `json:"template"`
	Context  []int           `json:"context"`
	Raw      bool            `json:"raw"`
	Images   json.RawMessage `json:"images"`
}

// ollamaError answers in Ollama's error shape, {"error": "message"}.
func ollamaError(w http.ResponseWriter, e *apiError) {
	if e.Status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", "1")
	}
	writeJSON(w, e.Status, map[string]string{"error": e.Message})
}

// ollamaModel checks "model" (required, as Ollama's server has it): a
// served name, with or without the ":latest" tag.
func (s *Server) ollamaModel(name string) *apiError {
	if name == "" {
		return badParam("model", "required (GET /api/tags lists %q)", ollamaName(s.id))
	}
	if s.acceptsModel(strings.TrimSuffix(name, ":latest")) || s.acceptsModel(name) {
		return nil
	}
	e := s.unknownModel(name)
	e.Message = fmt.Sprintf("model %q not found; this server serves %q", name, ollamaName(s.id))
	return e
}

// ollamaName is a model id as Ollama names it: with a tag.
func ollamaName(id string) string {
	if strings.Contains(id, ":") {
		return id
	}
	return id + ":latest"
}

func (s *Server) ollamaChat(w http.ResponseWriter, r *http.Request) {
	var req ollamaChatRequest
	body, e := s.readBody(w, r)
	if e == nil {
		e = decodeBody(body, &req, ollamaChatKeys)
	}
	if e == nil {
		e = s.ollamaModel(req.Model)
	}
	var inner map[string]any
	if e == nil {
		inner, e = s.ollamaTranslate(&req.ollamaCommon, true)
	}
	if e == nil && len(req.Messages) == 0 {
		// Ollama's "load the model" request: nothing to generate.
		s.ollamaLoaded(w, req.Model, "message")
		return
	}
	if e == nil {
		inner["messages"], e = ollamaMessages(req.Messages)
	}
	if e == nil && isSet(req.Tools) {
		inner["tools"] = req.Tools
	}
	if e != nil {
		ollamaError(w, e)
		return
	}
	s.ollamaRun(w, r, inner, &req.ollamaCommon, s.chat, "message")
}

func (s *Server) ollamaGenerate(w http.ResponseWriter, r *http.Request) {
	var req ollamaGenerateRequest
	body, e := s.readBody(w, r)
	if e == nil {
		e = decodeBody(body, &req, ollamaGenerateKeys)
	}
	if e == nil {
		e = s.ollamaModel(req.Model)
	}
	var inner map[string]any
	if e == nil {
		inner, e = s.ollamaTranslate(&req.ollamaCommon, !req.Raw)
	}
	switch {
	case e != nil:
	case req.Suffix != "":
		e = badParam("suffix", "fill-in-the-middle is not supported")
	case req.Template != "":
		e = badParam("template", "a template override is not supported: the file's own chat template renders (raw: true sends the prompt as it is)")
	case len(req.Context) > 0:
		e = badParam("context", "token context from an earlier reply is not supported; send the conversation to /api/chat")
	case isSet(req.Images) && string(bytes.TrimSpace(req.Images)) != "[]":
		e = badParam("images", "images are not supported (text models only)")
	case req.Raw && req.System != "":
		e = badParam("system", "raw: true sends the prompt as it is; a system message needs the template (raw: false)")
	case req.Prompt == "" && req.System == "":
		s.ollamaLoaded(w, req.Model, "response")
		return
	}
	if e != nil {
		ollamaError(w, e)
		return
	}
	if req.Raw {
		inner["prompt"] = req.Prompt
		s.ollamaRun(w, r, inner, &req.ollamaCommon, s.completions, "response")
		return
	}
	var msgs []map[string]any
	if req.System != "" {
		msgs = append(msgs, map[string]any{"role": "system", "content": req.System})
	}
	inner["messages"] = append(msgs, map[string]any{"role": "user", "content": req.Prompt})
	s.ollamaRun(w, r, inner, &req.ollamaCommon, s.chat, "response")
}

// ollamaLoaded answers a request without a prompt as Ollama does: the
// model is loaded (it always is), done_reason "load".
func (s *Server) ollamaLoaded(w http.ResponseWriter, model, field string) {
	resp := map[string]any{"model": model, "created_at": ollamaNow(), "done": true, "done_reason": "load"}
	if field == "message" {
		resp["message"] = map[string]any{"role": "assistant", "content": ""}
	} else {
		resp["response"] = ""
	}
	writeJSON(w, http.StatusOK, resp)
}

// ollamaMessages maps Ollama's messages onto OpenAI's: tool calls'
// arguments objects become JSON strings, tool_name the tool turn's name.
func ollamaMessages(in []ollamaMessage) ([]map[string]any, *apiError) {
	out := make([]map[string]any, len(in))
	for i, m := range in {
		where := fmt.Sprintf("messages[%d]", i)
		if isSet(m.Images) && string(bytes.TrimSpace(m.Images)) != "[]" {
			return nil, badParam(where+".images", "images are not supported (text models only)")
		}
		if m.Thinking != "" {
			return nil, badParam(where+".thinking", "an earlier turn's thinking is not rendered back; send the turn without it")
		}
		om := map[string]any{"role": m.Role, "content": m.Content}
		if m.ToolName != "" {
			om["name"] = m.ToolName
		}
		if m.ToolCallID != "" {
			om["tool_call_id"] = m.ToolCallID
		}
		if len(m.ToolCalls) > 0 {
			calls := make([]map[string]any, len(m.ToolCalls))
			for k, c := range m.ToolCalls {
				args := string(bytes.TrimSpace(c.Function.Arguments))
				if args == "" || args == "null" {
					args = "{}"
				}
				id := c.ID
				if id == "" {
					id = fmt.Sprintf("call_%d_%d", i, k)
				}
				calls[k] = map[string]any{"id": id, "type": "function", "function": map[string]any{"name": c.Function.Name, "arguments": args}}
			}
			om["tool_calls"] = calls
		}
		out[i] = om
	}
	return out, nil
}
