// Package chat renders a model's chat template (the Jinja chat_template
// of tokenizer_config.json) the way transformers' apply_chat_template
// does: jinja2's sandbox with trim_blocks and lstrip_blocks, loop
// controls, raise_exception, a tojson that keeps non-ASCII, strftime_now,
// and the variables messages, add_generation_prompt, bos_token and
// eos_token, and for tool-using templates tools (OpenAI tool objects),
// messages carrying tool_calls, tool_call_id and name, and the caller's
// chat_template_kwargs (Qwen3's enable_thinking) as further variables.
//
// The Jinja engine is chat/internal/jinja: github.com/ardanlabs/jinja
// (pure Go, written for LLM chat templates, applying trim_blocks and
// lstrip_blocks as transformers configures jinja2), copied and changed
// where it rendered something jinja2 does not (NOTICE.md there: % string
// formatting, None and float printing, undefined values in arithmetic,
// which jinja2 raises on, tojson's indented form). It renders the real
// templates of Llama 3, 3.1 (= 3.3), 3.2, Qwen 2.5, Qwen3, Gemma 3 and 4,
// Hermes 2 Pro, Mistral Nemo and DeepSeek-R1 byte-identical to Debian's
// python3-jinja2 (testdata/golden; tool-use conversations in
// testdata/tools.json) and agrees with it on held-out probes
// (testdata/probes.json): the same text, or an error where jinja2 raises.
// gonja/v2 was evaluated too: it fails to parse Gemma 3's template (a
// string literal spanning lines).
package chat

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cflow-dev/cflow/chat/internal/jinja"
)

// Template is a compiled chat template, safe for concurrent use.
type Template struct {
	t *jinja.Template
}

// ErrNoTemplate means the model file carries no chat template.
var ErrNoTemplate = errors.New("the model file has no chat template (tokenizer_config.json had none)")

// Parse compiles a chat template.
func Parse(src string) (*Template, error) {
	if strings.TrimSpace(src) == "" {
		return nil, ErrNoTemplate
	}
	t, err := jinja.Compile(src)
	if err != nil {
		return nil, fmt.Errorf("chat template: %w", err)
	}
	return &Template{t: t}, nil
}

// Options are the template's variables beside the messages.
type Options struct {
	// AddGenerationPrompt ends the text with the opening of the
	// assistant's turn, so the model writes the reply next.
	AddGenerationPrompt bool
	// BOSToken and EOSToken are the tokenizer's special token texts
	// ("" leaves it undefined: transformers passes only the tokens a
	// tokenizer has, its special_tokens_map).
	BOSToken, EOSToken string
	// Now is strftime_now's clock; nil means time.Now (tests pin it).
	Now func() time.Time
	// Tools are the OpenAI tool objects ({"type":"function","function":
	// {name, description, parameters}}) as JSON; nil leaves tools
	// undefined, as llama.cpp does (Hermes' tool_use template iterates
	// over tools and raises on None).
	Tools []json.RawMessage
	// NullContentAsEmpty renders null content as "", as llama.cpp does
	// for templates that reject None (Qwen3's raises on an assistant
	// turn that only calls tools, which OpenAI clients send as null);
	// jinja2 without it raises too, so the caller chooses.
	NullContentAsEmpty bool
	// Kwargs are further template variables (a request's
	// chat_template_kwargs, e.g. {"enable_thinking": false}), each a JSON
	// value; a name the renderer sets itself is refused.
	Kwargs map[string]json.RawMessage
}

// Render applies the template to messages.
func (t *Template) Render(messages []Message, o Options) (string, error) {
	msgs := make([]jinja.Value, len(messages))
	for i, m := range messages {
		if o.NullContentAsEmpty {
			m.NullContent = false
		}
		v, err := m.value(i)
		if err != nil {
			return "", err
		}
		msgs[i] = v
	}
	tools := jinja.Undefined()
	if o.Tools != nil {
		list := make([]jinja.Value, len(o.Tools))
		for i, raw := range o.Tools {
			v, err := jsonValue(raw)
			if err != nil {
				return "", fmt.Errorf("tools[%d]: not JSON: %w", i, err)
			}
			list[i] = v
		}
		tools = jinja.NewList(list)
	}
	now := o.Now
	if now == nil {
		now = time.Now
	}
	tokenValue := func(s string) jinja.Value {
		if s == "" {
			return jinja.Undefined()
		}
		return jinja.NewString(s)
	}
	vars := map[string]jinja.Value{
		"messages":              jinja.NewList(msgs),
		"add_generation_prompt": jinja.NewBool(o.AddGenerationPrompt),
		"bos_token":             tokenValue(o.BOSToken),
		"eos_token":             tokenValue(o.EOSToken),
		"tools":                 tools,
		"strftime_now": jinja.NewCallable("strftime_now", func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
			if len(args) != 1 {
				return jinja.Undefined(), fmt.Errorf("strftime_now takes one format argument, got %d", len(args))
			}
			if !args[0].IsString() {
				return jinja.Undefined(), fmt.Errorf("strftime_now: the format is not a string")
			}
			return jinja.NewString(strftime(now(), args[0].AsString())), nil
		}),
	}
	for k, raw := range o.Kwargs {
		if _, ok := vars[k]; ok || k == "raise_exception" {
			return "", fmt.Errorf("chat_template_kwargs: %q is a variable the renderer sets itself", k)
		}
		v, err := jsonValue(raw)
		if err != nil {
			return "", fmt.Errorf("chat_template_kwargs.%s: not JSON: %w", k, err)
		}
		vars[k] = v
	}
	out, err := t.t.RenderValues(vars)
	if err != nil {
		return "", fmt.Errorf("chat template: %w", err)
	}
	return out, nil
}

// strftime formats t with Python's strftime directives (the C locale).
func strftime(t time.Time, f string) string {
	var b strings.Builder
	for i := 0; i < len(f); i++ {
		if f[i] != '%' || i+1 == len(f) {
			b.WriteByte(f[i])
			continue
		}
		i++
		switch f[i] {
		case 'Y':
			fmt.Fprintf(&b, "%04d", t.Year())
		case 'y':
			fmt.Fprintf(&b, "%02d", t.Year()%100)
		case 'm':
			fmt.Fprintf(&b, "%02d", int(t.Month()))
		case 'd':
			fmt.Fprintf(&b, "%02d", t.Day())
		case 'e':
			fmt.Fprintf(&b, "%2d", t.Day())
		case 'j':
			fmt.Fprintf(&b, "%03d", t.YearDay())
		case 'H':
			fmt.Fprintf(&b, "%02d", t.Hour())
		case 'I':
			fmt.Fprintf(&b, "%02d", (t.Hour()+11)%12+1)
		case 'M':
			fmt.Fprintf(&b, "%02d", t.Minute())
		case 'S':
			fmt.Fprintf(&b, "%02d", t.Second())
		case 'p':
			b.WriteString(t.Format("PM"))
		case 'B':
			b.WriteString(t.Month().String())
		case 'b':
			b.WriteString(t.Month().String()[:3])
		case 'A':
			b.WriteString(t.Weekday().String())
		case 'a':
			b.WriteString(t.Weekday().String()[:3])
		case '%':
			b.WriteByte('%')
		default:
			b.WriteByte('%')
			b.WriteByte(f[i])
		}
	}
	return b.String()
}
