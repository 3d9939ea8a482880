// Package toolcall reads the tool calls out of a model's reply: each
// model family writes them in its own syntax (Llama 3.x's JSON object or
// <|python_tag|>, Hermes/Qwen's <tool_call>…</tool_call>, Mistral's
// [TOOL_CALLS], Gemma 4's <|tool_call>call:…<tool_call|>), and an OpenAI
// client wants them as message.tool_calls with the rest of the text as
// content. The syntax is chosen from the chat template's source, as
// llama.cpp's common/chat.cpp does (Detect), so a model file needs no
// extra metadata.
//
// Parse reads a whole reply; Stream reads it as it is generated and emits
// content deltas and tool-call deltas (index, id, name, argument pieces)
// in the order OpenAI streams them. Both keep what is not a well-formed
// call as content: a reply without a call, malformed JSON, an unclosed
// call at the end of a reply. Arguments are the JSON text of an object,
// as the model wrote it (Gemma 4's own notation converted to JSON).
package toolcall

import (
	"crypto/rand"
	"strings"
)

// Syntax is a model family's way of writing tool calls.
type Syntax int

const (
	// None: the template shows no tool-call syntax this package reads.
	None Syntax = iota
	// Llama3: a bare {"name": …, "parameters": {…}} reply (Llama 3.1,
	// 3.2, 3.3), or <|python_tag|> followed by such an object or a
	// built-in call name.call(key="value").
	Llama3
	// Hermes: <tool_call>{"name": …, "arguments": {…}}</tool_call>, one
	// block per call (Hermes 2 Pro / 3, Qwen 2.5, Qwen3).
	Hermes
	// Mistral: [TOOL_CALLS] followed by a JSON list of {"name",
	// "arguments", "id"} (Mistral Nemo), or by name[ARGS]{…} per call,
	// with [CALL_ID]id before [ARGS] in Mistral Small 3.2.
	Mistral
	// Gemma4: <|tool_call>call:name{key:value,…}<tool_call|>, strings
	// quoted by <|"|>.
	Gemma4
)

// String names the syntax as the docs and errors do.
func (s Syntax) String() string {
	switch s {
	case Llama3:
		return "llama3"
	case Hermes:
		return "hermes"
	case Mistral:
		return "mistral"
	case Gemma4:
		return "gemma4"
	}
	return "none"
}

// Detect picks the syntax from the chat template's source by the markers
// it writes, in llama.cpp's order of checks; None when it has none this
// package reads (a server then refuses a tools request rather than
// ignore the calls).
func Detect(template string) Syntax {
	has := func(s string) bool { return strings.Contains(template, s) }
	switch {
	case has("'<|tool_call>call:'"):
		return Gemma4
	case has("[TOOL_CALLS]"):
		return Mistral
	case has("<function="):
		// Qwen3-Coder's and functionary's XML calls: not read here.
		return None
	case has("<tool_call>"):
		return Hermes
	case has("<|start_header_id|>") && has("ipython"):
		return Llama3
	}
	return None
}

// Call is one tool call read from a reply: OpenAI's id, function.name
// and function.arguments (JSON text of an object).
type Call struct {
	ID        string
	Name      string
	Arguments string
}

// Parser reads one syntax. NewID makes the id of a call the model did
// not name (nil: NewCallID for the syntax); tests pin it.
type Parser struct {
	Syntax Syntax
	NewID  func() string
}

// Parse splits a whole reply into content and calls. Content is the text
// outside the calls, trimmed of surrounding whitespace; with Syntax None
// the reply is returned unchanged and without calls.
func (p Parser) Parse(text string) (content string, calls []Call) {
	if p.Syntax == None {
		return text, nil
	}
	r := parse(p.Syntax, text, true)
	for _, c := range r.calls {
		id := c.id
		if id == "" {
			id = p.newID()
		}
		calls = append(calls, Call{ID: id, Name: c.name, Arguments: c.args})
	}
	return strings.TrimSpace(r.content.String()), calls
}

func (p Parser) newID() string {
	if p.NewID != nil {
		return p.NewID()
	}
	return NewCallID(p.Syntax)
}

// NewCallID makes a fresh call id in the form the family's template
// accepts: Mistral's templates demand 9 alphanumerics, others get
// OpenAI's "call_" and 24 alphanumerics.
func NewCallID(s Syntax) string {
	if s == Mistral {
		return randomAlnum(9)
	}
	return "call_" + randomAlnum(24)
}

func randomAlnum(n int) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b := make([]byte, n)
	rand.Read(b) // never fails (crypto/rand's documented contract)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}
