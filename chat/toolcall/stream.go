package toolcall

import (
	"fmt"
	"strings"
)

// Delta is one piece of a streamed reply, as one OpenAI chunk carries
// it: content text, or a piece of one tool call.
type Delta struct {
	Content string
	Call    *CallDelta
}

// CallDelta is a piece of the call at Index: the first piece of a call
// carries its ID and Name (and the arguments so far), later pieces carry
// only more Arguments text, as OpenAI's delta.tool_calls do. The
// concatenated Arguments of one Index are the call's JSON arguments.
type CallDelta struct {
	Index     int
	ID, Name  string
	Arguments string
}

// Stream parses a reply as it is generated. Text that may still become
// a call (a marker's first bytes, a call being written) is held back
// until it is decided; content is streamed trimmed as Parse trims it.
// Each Feed re-reads the reply so far (replies are short; the cost is
// microseconds per token), so the stream ends with exactly what Parse
// returns for the whole reply, but for ids: a call keeps the id it was
// given when it first showed (an id Mistral Nemo writes after the
// arguments is not used).
type Stream struct {
	p       Parser
	buf     strings.Builder
	content string
	calls   []Call
	closed  bool
}

// Stream starts an incremental parse.
func (p Parser) Stream() *Stream { return &Stream{p: p} }

// ErrRetracted means a call already streamed turned out not to be one
// (its text went on malformed, or the reply ended inside it, as at a
// max_tokens cut): the pieces sent cannot be taken back, so the stream
// must end with an error rather than contradict them.
var ErrRetracted = fmt.Errorf("toolcall: a streamed tool call turned out malformed")

// Feed adds the next piece of generated text and returns what it
// decides.
func (s *Stream) Feed(piece string) ([]Delta, error) {
	if s.closed {
		return nil, fmt.Errorf("toolcall: Feed after Close")
	}
	s.buf.WriteString(piece)
	if s.p.Syntax == None {
		if piece == "" {
			return nil, nil
		}
		return []Delta{{Content: piece}}, nil
	}
	return s.diff(parse(s.p.Syntax, s.buf.String(), false))
}

// Close ends the reply: what was held back is decided (an unfinished
// call becomes content), and the last deltas are returned.
func (s *Stream) Close() ([]Delta, error) {
	if s.closed {
		return nil, nil
	}
	s.closed = true
	if s.p.Syntax == None {
		s.content = s.buf.String()
		return nil, nil
	}
	return s.diff(parse(s.p.Syntax, s.buf.String(), true))
}

// Result is the reply as streamed so far: its content and calls (after
// Close, the whole reply's).
func (s *Stream) Result() (content string, calls []Call) {
	return s.content, append([]Call(nil), s.calls...)
}

func (s *Stream) diff(r *result) ([]Delta, error) {
	var out []Delta
	target := strings.TrimSpace(r.content.String())
	if !strings.HasPrefix(target, s.content) {
		return nil, ErrRetracted
	}
	if len(target) > len(s.content) {
		out = append(out, Delta{Content: target[len(s.content):]})
		s.content = target
	}
	if len(r.calls) < len(s.calls) {
		return out, ErrRetracted
	}
	for i, c := range r.calls {
		if i < len(s.calls) {
			prev := &s.calls[i]
			if c.name != prev.Name || !strings.HasPrefix(c.args, prev.Arguments) {
				return out, ErrRetracted
			}
			if len(c.args) > len(prev.Arguments) {
				out = append(out, Delta{Call: &CallDelta{Index: i, Arguments: c.args[len(prev.Arguments):]}})
				prev.Arguments = c.args
			}
			continue
		}
		id := c.id
		if id == "" {
			id = s.p.newID()
		}
		s.calls = append(s.calls, Call{ID: id, Name: c.name, Arguments: c.args})
		out = append(out, Delta{Call: &CallDelta{Index: i, ID: id, Name: c.name, Arguments: c.args}})
	}
	return out, nil
}
