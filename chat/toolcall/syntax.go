package toolcall

import (
	"strings"
)

// pcall is a call as far as the text shows it: the arguments' text so
// far (all of it once done).
type pcall struct {
	id, name, args string
	done           bool
}

// result is a parse of a reply so far: the text that is surely content
// and the calls begun. With final set, nothing is pending: what did not
// complete as a call is content.
type result struct {
	content strings.Builder
	calls   []pcall
}

// parse reads text in the syntax; final says no more text will come.
// Without final, a marker's beginning at the end is held back, and a
// call being written is returned once its name and the opening of its
// arguments are read.
func parse(s Syntax, text string, final bool) *result {
	r := &result{}
	switch s {
	case Hermes:
		parseTagged(r, text, final, "<tool_call>", "</tool_call>", jsonCall("arguments"))
	case Gemma4:
		parseTagged(r, text, final, "<|tool_call>call:", "<tool_call|>", gemmaCall)
	case Llama3:
		parseLlama(r, text, final)
	case Mistral:
		parseMistral(r, text, final)
	default:
		r.content.WriteString(text)
	}
	return r
}

// callReader reads one call at the start of s: the call so far, the
// scan's state and (complete) how many bytes it took.
type callReader func(s string) (pcall, state, int)

// jsonCall reads a JSON call object whose arguments have one of keys.
func jsonCall(keys ...string) callReader {
	return func(s string) (pcall, state, int) {
		o := scanCallObject(s, keys...)
		c := pcall{id: o.id, name: o.name}
		switch {
		case o.state == complete:
			c.args, c.done = s[o.argStart:o.argEnd], true
		case o.state == incomplete && o.hasName && o.argStart >= 0:
			if o.argEnd >= 0 {
				c.args = s[o.argStart:o.argEnd]
			} else {
				c.args = s[o.argStart:]
			}
		}
		return c, o.state, o.end
	}
}

// content adds text that is content, holding back the end that may begin
// marker unless final.
func (r *result) text(s string, final bool, markers ...string) {
	if !final {
		h := 0
		for _, m := range markers {
			h = max(h, heldBack(s, m))
		}
		s = s[:len(s)-h]
	}
	r.content.WriteString(s)
}

// pending records a call still being written, if it shows a name and
// the start of its arguments.
func (r *result) pending(c pcall) {
	if c.name != "" && (c.args != "" || c.done) {
		c.done = false
		r.calls = append(r.calls, c)
	}
}

// parseTagged reads calls between open and close markers (Hermes, Gemma
// 4). A call whose body is malformed leaves its open marker as content
// and the scan goes on after it; a call complete at the end of the reply
// without its close marker counts (generation stopped on the end token).
func parseTagged(r *result, text string, final bool, open, close string, read callReader) {
	pos := 0
	for {
		i := strings.Index(text[pos:], open)
		if i < 0 {
			r.text(text[pos:], final, open)
			return
		}
		r.content.WriteString(text[pos : pos+i])
		start := pos + i + len(open)
		body := skipSpace(text, start)
		c, st, n := read(text[body:])
		switch st {
		case incomplete:
			if final {
				r.content.WriteString(text[pos+i:])
			} else {
				r.pending(c)
			}
			return
		case complete:
			k := skipSpace(text, body+n)
			switch {
			case strings.HasPrefix(text[k:], close):
				r.calls = append(r.calls, c)
				pos = k + len(close)
				continue
			case final && k == len(text):
				r.calls = append(r.calls, c)
				return
			case !final && strings.HasPrefix(close, text[k:]):
				r.pending(c)
				return
			}
		}
		// Malformed: the marker is content; scan on after it.
		r.content.WriteString(text[pos+i : start])
		pos = start
	}
}

// parseLlama reads Llama 3.x calls: a JSON call object opening the reply,
// or one after <|python_tag|> anywhere; several may follow one another,
// separated by whitespace or ";".
func parseLlama(r *result, text string, final bool) {
	const tag = "<|python_tag|>"
	read := jsonCall("parameters", "arguments")
	pos := skipSpace(text, 0)
	if pos == len(text) {
		r.text(text, final)
		return
	}
	if text[pos] != '{' {
		i := strings.Index(text, tag)
		if i < 0 {
			r.text(text, final, tag)
			return
		}
		r.content.WriteString(text[:i])
		pos = skipSpace(text, i+len(tag))
		if pos < len(text) && text[pos] != '{' {
			c, st, n := builtinCall(text[pos:])
			switch {
			case st == complete:
				r.calls = append(r.calls, c)
				r.text(text[pos+n:], final)
			case st == incomplete && !final:
			default:
				r.content.WriteString(text[i:])
			}
			return
		}
		if pos == len(text) {
			if final {
				r.content.WriteString(text[i:])
			}
			return
		}
	}
	for {
		c, st, n := read(text[pos:])
		switch st {
		case incomplete:
			if final {
				r.content.WriteString(text[pos:])
			} else {
				r.pending(c)
			}
			return
		case malformed:
			r.content.WriteString(text[pos:])
			return
		}
		r.calls = append(r.calls, c)
		pos += n
		k := skipSpace(text, pos)
		if k < len(text) && text[k] == ';' {
			k = skipSpace(text, k+1)
		}
		if k == len(text) && !final {
			return // a separator, perhaps before another call
		}
		if k == len(text) || text[k] != '{' {
			r.text(text[pos:], final)
			return
		}
		pos = k
	}
}

// builtinCall reads Llama 3.1's built-in tool form name.call(key="v", n=1)
// into arguments {"key": "v", "n": 1}.
func builtinCall(s string) (pcall, state, int) {
	dot := strings.Index(s, ".call(")
	if dot < 0 {
		if strings.HasPrefix(".call(", s[identEnd(s, 0):]) {
			return pcall{}, incomplete, 0
		}
		return pcall{}, malformed, 0
	}
	name := s[:dot]
	if identEnd(name, 0) != len(name) || name == "" {
		return pcall{}, malformed, 0
	}
	i := dot + len(".call(")
	var b strings.Builder
	b.WriteByte('{')
	for n := 0; ; n++ {
		i = skipSpace(s, i)
		if i == len(s) {
			return pcall{}, incomplete, 0
		}
		if s[i] == ')' {
			b.WriteByte('}')
			return pcall{name: name, args: b.String(), done: true}, complete, i + 1
		}
		if n > 0 {
			if s[i] != ',' {
				return pcall{}, malformed, 0
			}
			i = skipSpace(s, i+1)
		}
		k := identEnd(s, i)
		if k == i || k == len(s) {
			return pcall{}, st(k == len(s)), 0
		}
		key := s[i:k]
		i = skipSpace(s, k)
		if i == len(s) {
			return pcall{}, incomplete, 0
		}
		if s[i] != '=' {
			return pcall{}, malformed, 0
		}
		i = skipSpace(s, i+1)
		v, m, vst := pyLiteral(s[i:])
		if vst != complete {
			return pcall{}, vst, 0
		}
		if n > 0 {
			b.WriteString(", ")
		}
		b.WriteString(quoteJSON(key) + ": " + v)
		i += m
	}
}

func st(atEnd bool) state {
	if atEnd {
		return incomplete
	}
	return malformed
}

func identEnd(s string, i int) int {
	for i < len(s) && (s[i] == '_' || s[i] >= 'a' && s[i] <= 'z' || s[i] >= 'A' && s[i] <= 'Z' || s[i] >= '0' && s[i] <= '9') {
		i++
	}
	return i
}

// pyLiteral reads a Python string ('…' or "…"), number, True, False or
// None and gives it as JSON.
func pyLiteral(s string) (string, int, state) {
	if s == "" {
		return "", 0, incomplete
	}
	if q := s[0]; q == '"' || q == '\'' {
		var b strings.Builder
		for i := 1; i < len(s); i++ {
			switch s[i] {
			case '\\':
				if i+1 == len(s) {
					return "", 0, incomplete
				}
				i++
				switch s[i] {
				case 'n':
					b.WriteByte('\n')
				case 't':
					b.WriteByte('\t')
				default:
					b.WriteByte(s[i])
				}
			case q:
				return quoteJSON(b.String()), i + 1, complete
			default:
				b.WriteByte(s[i])
			}
		}
		return "", 0, incomplete
	}
	for lit, js := range map[string]string{"True": "true", "False": "false", "None": "null"} {
		if strings.HasPrefix(s, lit) {
			return js, len(lit), complete
		}
	}
	n := 0
	for n < len(s) && strings.IndexByte("+-.eE0123456789", s[n]) >= 0 {
		n++
	}
	if n == 0 {
		return "", 0, malformed
	}
	if n == len(s) {
		return "", 0, incomplete
	}
	if !validJSONNumber(s[:n]) {
		return "", 0, malformed
	}
	return s[:n], n, complete
}
