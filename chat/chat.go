// Package chat renders a model's chat template (the Jinja chat_template
// of tokenizer_config.json) the way transformers' apply_chat_template
// does: jinja2's sandbox with trim_blocks and lstrip_blocks, loop
// controls, raise_exception, a tojson that keeps non-ASCII, strftime_now,
// and the variables messages, add_generation_prompt, bos_token and
// eos_token.
//
// The Jinja engine is chat/internal/jinja: github.com/ardanlabs/jinja
// (pure Go, written for LLM chat templates, applying trim_blocks and
// lstrip_blocks as transformers configures jinja2), copied and changed
// where it rendered something jinja2 does not (NOTICE.md there: % string
// formatting, None and float printing, undefined values in arithmetic,
// which jinja2 raises on). It renders the real templates of Llama 3, 3.1,
// 3.2, Qwen 2.5, Qwen3 and Gemma 3 byte-identical to Debian's
// python3-jinja2 (testdata/golden) and agrees with it on held-out probes
// (testdata/probes.json): the same text, or an error where jinja2 raises.
// gonja/v2 was evaluated too: it fails to parse Gemma 3's template (a
// string literal spanning lines).
package chat

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cflow-dev/cflow/chat/internal/jinja"
)

// Message is one turn of a conversation. Content is text; templates that
// take richer content (lists of parts) get it as given in Extra.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

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
}

// Render applies the template to messages.
func (t *Template) Render(messages []Message, o Options) (string, error) {
	msgs := make([]jinja.Value, len(messages))
	for i, m := range messages {
		msgs[i] = jinja.FromGoValue(map[string]any{"role": m.Role, "content": m.Content})
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
