package chat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/cflow-dev/cflow/chat/internal/jinja"
)

// Message is one turn of a conversation, with the fields OpenAI's chat
// API carries and tool-using templates read: an assistant turn's
// ToolCalls, a "tool" turn's ToolCallID and Name. Content is text;
// NullContent says it was JSON null (an assistant turn that only calls
// tools), which templates see as None, not as "".
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
	// NullContent: the content was null or absent; the template sees None.
	NullContent bool       `json:"-"`
	ToolCalls   []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID names the call a "tool" message answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
	// Name is the tool's name on a "tool" message (some templates print it).
	Name string `json:"name,omitempty"`
}

// ToolCall is one call an assistant turn made, in OpenAI's shape.
type ToolCall struct {
	ID       string       `json:"id,omitempty"`
	Type     string       `json:"type,omitempty"`
	Function FunctionCall `json:"function"`
}

// FunctionCall is a call's function: its name and its arguments as the
// JSON text the model wrote (OpenAI sends arguments as a string).
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// UnmarshalJSON reads an OpenAI message: content may be null or absent
// (NullContent), a string, or a list of text parts (joined, as OpenAI
// concatenates them); any other part type is refused by name.
func (m *Message) UnmarshalJSON(b []byte) error {
	var raw struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCalls  []ToolCall      `json:"tool_calls"`
		ToolCallID string          `json:"tool_call_id"`
		Name       string          `json:"name"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*m = Message{Role: raw.Role, ToolCalls: raw.ToolCalls, ToolCallID: raw.ToolCallID, Name: raw.Name}
	c := bytes.TrimSpace(raw.Content)
	switch {
	case len(c) == 0 || string(c) == "null":
		m.NullContent = true
	case c[0] == '"':
		return json.Unmarshal(c, &m.Content)
	case c[0] == '[':
		var parts []struct {
			Type string  `json:"type"`
			Text *string `json:"text"`
		}
		if err := json.Unmarshal(c, &parts); err != nil {
			return fmt.Errorf("message content: %w", err)
		}
		var sb strings.Builder
		for i, p := range parts {
			if p.Type != "text" || p.Text == nil {
				return fmt.Errorf("message content part %d: type %q is not supported (only text)", i, p.Type)
			}
			sb.WriteString(*p.Text)
		}
		m.Content = sb.String()
	default:
		return fmt.Errorf("message content must be a string, a list of text parts or null")
	}
	return nil
}

// MarshalJSON writes content as null when NullContent is set.
func (m Message) MarshalJSON() ([]byte, error) {
	type plain Message
	var content any = m.Content
	if m.NullContent {
		content = nil
	}
	return json.Marshal(struct {
		plain
		Content any `json:"content"`
	}{plain(m), content})
}

// value is the message as the template sees it: a dict with role and
// content, and tool_calls, tool_call_id and name only when set (templates
// test "is defined"). A call's arguments reach the template as the object
// they encode, as transformers documents them (templates apply tojson or
// iterate over items()); arguments that are not JSON are an error naming
// the call.
func (m Message) value(i int) (jinja.Value, error) {
	d := jinja.NewDict()
	dict := d.AsDict()
	dict.Set("role", jinja.NewString(m.Role))
	if m.NullContent {
		dict.Set("content", jinja.None())
	} else {
		dict.Set("content", jinja.NewString(m.Content))
	}
	if len(m.ToolCalls) > 0 {
		calls := make([]jinja.Value, len(m.ToolCalls))
		for j, tc := range m.ToolCalls {
			args, err := jsonValue([]byte(tc.Function.Arguments))
			if err != nil {
				return jinja.Value{}, fmt.Errorf("messages[%d].tool_calls[%d].function.arguments: not JSON: %w", i, j, err)
			}
			fn := jinja.NewDict()
			fn.AsDict().Set("name", jinja.NewString(tc.Function.Name))
			fn.AsDict().Set("arguments", args)
			c := jinja.NewDict()
			if tc.ID != "" {
				c.AsDict().Set("id", jinja.NewString(tc.ID))
			}
			typ := tc.Type
			if typ == "" {
				typ = "function"
			}
			c.AsDict().Set("type", jinja.NewString(typ))
			c.AsDict().Set("function", fn)
			calls[j] = c
		}
		dict.Set("tool_calls", jinja.NewList(calls))
	}
	if m.ToolCallID != "" {
		dict.Set("tool_call_id", jinja.NewString(m.ToolCallID))
	}
	if m.Name != "" {
		dict.Set("name", jinja.NewString(m.Name))
	}
	return d, nil
}

// jsonValue decodes JSON text into a template value keeping object key
// order (templates' tojson and items() print keys in the order given, as
// Python's dicts keep them) and integers apart from floats.
func jsonValue(b []byte) (jinja.Value, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	v, err := decodeValue(dec)
	if err != nil {
		return jinja.Value{}, err
	}
	if _, err := dec.Token(); err == nil {
		return jinja.Value{}, fmt.Errorf("text after the JSON value")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder) (jinja.Value, error) {
	tok, err := dec.Token()
	if err != nil {
		return jinja.Value{}, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			d := jinja.NewDict()
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return jinja.Value{}, err
				}
				v, err := decodeValue(dec)
				if err != nil {
					return jinja.Value{}, err
				}
				d.AsDict().Set(k.(string), v)
			}
			_, err := dec.Token()
			return d, err
		case '[':
			var items []jinja.Value
			for dec.More() {
				v, err := decodeValue(dec)
				if err != nil {
					return jinja.Value{}, err
				}
				items = append(items, v)
			}
			_, err := dec.Token()
			return jinja.NewList(items), err
		}
		return jinja.Value{}, fmt.Errorf("unexpected %v", t)
	default:
		return jinja.FromGoValue(t), nil
	}
}
