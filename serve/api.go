package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/cflow-dev/cflow/generate"
)

// common are the request fields chat and text completions share.
type common struct {
	Model               string          `json:"model"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Temperature         *float64        `json:"temperature"`
	TopP                *float64        `json:"top_p"`
	TopK                *int            `json:"top_k"`
	MinP                *float64        `json:"min_p"`
	FrequencyPenalty    *float64        `json:"frequency_penalty"`
	PresencePenalty     *float64        `json:"presence_penalty"`
	RepeatPenalty       *float64        `json:"repeat_penalty"`
	RepeatLastN         *int            `json:"repeat_last_n"`
	Seed                *int64          `json:"seed"`
	Stop                json.RawMessage `json:"stop"`
	Stream              bool            `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	// CachePrompt false (llama-server's name) starts the request from an
	// empty sequence instead of a slot's cached prefix; the reply is the
	// same either way, only the time differs.
	CachePrompt *bool `json:"cache_prompt"`
	// Fields that would change the output and are not implemented: a
	// request that sets them is refused, never half-served.
	N              *int               `json:"n"`
	BestOf         *int               `json:"best_of"`
	LogitBias      map[string]float64 `json:"logit_bias"`
	Tools          json.RawMessage    `json:"tools"`
	Functions      json.RawMessage    `json:"functions"`
	ResponseFormat *struct {
		Type string `json:"type"`
	} `json:"response_format"`
	Echo   *bool   `json:"echo"`
	Suffix *string `json:"suffix"`
	// llama.cpp's and vLLM's extensions and OpenAI's newer fields: refused
	// unless they hold the value that changes nothing.
	IgnoreEOS         *bool           `json:"ignore_eos"`
	MinTokens         *int            `json:"min_tokens"`
	Grammar           json.RawMessage `json:"grammar"`
	JSONSchema        json.RawMessage `json:"json_schema"`
	Mirostat          *float64        `json:"mirostat"`
	TypicalP          *float64        `json:"typical_p"`
	Prediction        json.RawMessage `json:"prediction"`
	ToolChoice        json.RawMessage `json:"tool_choice"`
	ParallelToolCalls *bool           `json:"parallel_tool_calls"`
	// Accepted and not used: they change nothing this server answers.
	User        json.RawMessage `json:"user"`
	Metadata    json.RawMessage `json:"metadata"`
	Store       json.RawMessage `json:"store"`
	ServiceTier json.RawMessage `json:"service_tier"`
}

// chatRequest is POST /v1/chat/completions' body.
type chatRequest struct {
	common
	Messages    []chatMessage `json:"messages"`
	Logprobs    *bool         `json:"logprobs"`
	TopLogprobs *int          `json:"top_logprobs"`
}

type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// completionRequest is POST /v1/completions' body.
type completionRequest struct {
	common
	Prompt   json.RawMessage `json:"prompt"`
	Logprobs *int            `json:"logprobs"`
	// TopLogprobs is chat's field: refused here by name.
	TopLogprobs json.RawMessage `json:"top_logprobs"`
}

// MaxBodyBytes bounds a request body whatever --ctx is; a server's own
// bound (Server.bodyLimit) is smaller when its context is.
const MaxBodyBytes = 8 << 20

// MaxStops bounds the stop strings of one request.
const MaxStops = 16

// decodeBody parses one JSON object into v after strictKeys has checked
// its keys against allowed, mapping decoder errors to 400s that say where
// (offset) or which field.
func decodeBody(body []byte, v any, allowed keys) *apiError {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	if len(bytes.TrimSpace(body)) == 0 {
		return badRequest("invalid_json", "the request body is empty; send a JSON object")
	}
	err := json.Unmarshal(body, v)
	if errors.As(err, &se) {
		return badRequest("invalid_json", "malformed JSON at byte %d: %v", se.Offset, err)
	}
	if e := strictKeys(body, allowed); e != nil {
		return e
	}
	switch {
	case errors.As(err, &te) && te.Field != "":
		return badParam(strings.TrimPrefix(te.Field, "common."), "expected %s, got JSON %s", te.Type, te.Value)
	case errors.As(err, &te):
		return badRequest("invalid_json", "the body must be a JSON object, not %s", te.Value)
	case err != nil:
		return badRequest("invalid_json", "malformed JSON: %v", err)
	}
	return nil
}

// unsupported refuses fields this server does not implement.
func (c *common) unsupported() *apiError {
	switch {
	case c.N != nil && *c.N != 1:
		return badParam("n", "%d: only one choice per request is supported", *c.N)
	case c.BestOf != nil && *c.BestOf != 1:
		return badParam("best_of", "%d: only 1 is supported", *c.BestOf)
	case len(c.LogitBias) > 0:
		return badParam("logit_bias", "not supported")
	case isSet(c.Tools):
		return badParam("tools", "tool calls are not supported")
	case isSet(c.Functions):
		return badParam("functions", "function calls are not supported")
	case c.ResponseFormat != nil && c.ResponseFormat.Type != "" && c.ResponseFormat.Type != "text":
		return badParam("response_format", "%q: only text is supported", c.ResponseFormat.Type)
	case c.Echo != nil && *c.Echo:
		return badParam("echo", "not supported")
	case c.Suffix != nil && *c.Suffix != "":
		return badParam("suffix", "not supported")
	case c.IgnoreEOS != nil && *c.IgnoreEOS:
		return badParam("ignore_eos", "not supported: generation always stops at the end-of-sequence token")
	case c.MinTokens != nil && *c.MinTokens != 0:
		return badParam("min_tokens", "%d: not supported (only 0)", *c.MinTokens)
	case isSet(c.Grammar) && !bytes.Equal(bytes.TrimSpace(c.Grammar), []byte(`""`)):
		return badParam("grammar", "constrained sampling is not supported")
	case isSet(c.JSONSchema):
		return badParam("json_schema", "constrained sampling is not supported")
	case c.Mirostat != nil && *c.Mirostat != 0:
		return badParam("mirostat", "%v: not supported (only 0, off)", *c.Mirostat)
	case c.TypicalP != nil && *c.TypicalP != 1:
		return badParam("typical_p", "%v: not supported (only 1, off)", *c.TypicalP)
	case isSet(c.Prediction):
		return badParam("prediction", "predicted outputs are not supported")
	case isSet(c.ToolChoice) && !isJSONString(c.ToolChoice, "none", "auto"):
		return badParam("tool_choice", "tool calls are not supported (only \"none\" or \"auto\" without tools)")
	}
	return nil
}

// isJSONString reports whether raw is one of the JSON strings in.
func isJSONString(raw json.RawMessage, in ...string) bool {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return false
	}
	for _, x := range in {
		if s == x {
			return true
		}
	}
	return false
}

func isSet(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && !bytes.Equal(t, []byte("null"))
}

// params are the sampling settings: the request's values over the OpenAI
// API's defaults (temperature 1, top_p 1, penalties off), validated by
// generate. seed picks a seed when the request has none.
func (c *common) params(seed func() uint64) (generate.Params, error) {
	p := generate.Params{Temperature: 1, TopP: 1, RepeatPenalty: 1, PenaltyLastN: 64}
	setF := func(dst *float64, src *float64) {
		if src != nil {
			*dst = *src
		}
	}
	setF(&p.Temperature, c.Temperature)
	setF(&p.TopP, c.TopP)
	setF(&p.MinP, c.MinP)
	setF(&p.FrequencyPenalty, c.FrequencyPenalty)
	setF(&p.PresencePenalty, c.PresencePenalty)
	setF(&p.RepeatPenalty, c.RepeatPenalty)
	if c.TopK != nil {
		p.TopK = *c.TopK
	}
	if c.RepeatLastN != nil {
		p.PenaltyLastN = *c.RepeatLastN
	}
	if c.Seed != nil {
		p.Seed = uint64(*c.Seed)
	} else {
		p.Seed = seed()
	}
	return p, p.Validate()
}

// maxTokens is the request's limit (max_completion_tokens over the older
// max_tokens), or def when it sets none.
func (c *common) maxTokens(def int) (int, *apiError) {
	name, v := "max_completion_tokens", c.MaxCompletionTokens
	if v == nil {
		name, v = "max_tokens", c.MaxTokens
	}
	if v == nil {
		return def, nil
	}
	if *v < 1 {
		return 0, badParam(name, "%d: must be ≥ 1", *v)
	}
	// More than the room the context leaves is the room: the same
	// tokens as sending none.
	return min(*v, def), nil
}

// stops parses "stop": null, a string or a list of strings.
func (c *common) stops() ([]string, *apiError) {
	if !isSet(c.Stop) {
		return nil, nil
	}
	var one string
	if json.Unmarshal(c.Stop, &one) == nil {
		if one == "" {
			return nil, badParam("stop", "a stop string must not be empty")
		}
		return []string{one}, nil
	}
	var list []string
	if err := json.Unmarshal(c.Stop, &list); err != nil {
		return nil, badParam("stop", "must be a string or a list of strings")
	}
	if len(list) > MaxStops {
		return nil, badParam("stop", "%d stop strings; at most %d", len(list), MaxStops)
	}
	for _, s := range list {
		if s == "" {
			return nil, badParam("stop", "a stop string must not be empty")
		}
	}
	return list, nil
}

// Message is one turn of a conversation, as the chat template sees it.
type Message struct {
	Role    string
	Content string
}

// messages checks the conversation: at most limit turns, known roles,
// text content (a string or a list of text parts).
func (r *chatRequest) messages(limit int) ([]Message, *apiError) {
	if len(r.Messages) == 0 {
		return nil, badParam("messages", "must be a non-empty list")
	}
	if len(r.Messages) > limit {
		return nil, &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Param: strp("messages"),
			Code: strp("context_length_exceeded"), Message: fmt.Sprintf("messages: %d turns cannot fit in %d tokens of context", len(r.Messages), limit)}
	}
	out := make([]Message, len(r.Messages))
	for i, m := range r.Messages {
		where := fmt.Sprintf("messages[%d]", i)
		switch m.Role {
		case "system", "developer", "user", "assistant", "tool":
		default:
			return nil, badParam(where+".role", "%q: must be system, developer, user, assistant or tool", m.Role)
		}
		text, err := contentText(m.Content)
		if err != "" {
			return nil, badParam(where+".content", "%s", err)
		}
		role := m.Role
		if role == "developer" { // OpenAI's newer name for system; templates know system
			role = "system"
		}
		out[i] = Message{Role: role, Content: text}
	}
	return out, nil
}

// contentText flattens a message's content; the string is the reason it
// cannot.
func contentText(raw json.RawMessage) (string, string) {
	if !isSet(raw) {
		return "", ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, ""
	}
	var parts []struct {
		Type string  `json:"type"`
		Text *string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return "", "must be a string or a list of content parts"
	}
	var b bytes.Buffer
	for _, p := range parts {
		if p.Type != "text" || p.Text == nil {
			return "", fmt.Sprintf("part type %q: only text parts are supported", p.Type)
		}
		b.WriteString(*p.Text)
	}
	return b.String(), ""
}
