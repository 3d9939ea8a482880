package toolcall

import (
	"encoding/json"
	"strings"
)

const mistralMarker = "[TOOL_CALLS]"

// parseMistral reads [TOOL_CALLS] followed by a JSON list of call objects
// (Mistral Nemo) or by name[CALL_ID]id[ARGS]{…} / name[ARGS]{…} (Mistral
// Small 3.2, Devstral, Ministral 3), a marker per call. What does not
// read as calls is content, the marker with it.
func parseMistral(r *result, text string, final bool) {
	pos := 0
	for {
		i := strings.Index(text[pos:], mistralMarker)
		if i < 0 {
			r.text(text[pos:], final, mistralMarker)
			return
		}
		r.content.WriteString(text[pos : pos+i])
		start := pos + i + len(mistralMarker)
		b := skipSpace(text, start)
		if b == len(text) {
			if final {
				r.content.WriteString(text[pos+i:])
			}
			return
		}
		var st state
		var n int
		before := len(r.calls)
		if text[b] == '[' {
			st, n = mistralList(r, text[b:], final)
		} else {
			var c pcall
			c, st, n = mistralNamed(text[b:])
			switch {
			case st == complete:
				r.calls = append(r.calls, c)
			case st == incomplete && !final:
				r.pending(c)
			}
		}
		switch {
		case st == complete:
			pos = b + n
			continue
		case st == incomplete && !final:
			return
		case st == incomplete:
			r.calls = r.calls[:before]
			r.content.WriteString(text[pos+i:])
			return
		}
		r.calls = r.calls[:before]
		r.content.WriteString(text[pos+i : start])
		pos = start
	}
}

// mistralList reads [call, call, …] at the start of s, appending the
// calls to r (a call being written as pending when not final).
func mistralList(r *result, s string, final bool) (state, int) {
	read := jsonCall("arguments")
	i := skipSpace(s, 1)
	for n := 0; ; n++ {
		if i == len(s) {
			return incomplete, 0
		}
		if n > 0 {
			if s[i] == ']' {
				return complete, i + 1
			}
			if s[i] != ',' {
				return malformed, 0
			}
			i = skipSpace(s, i+1)
		}
		c, st, m := read(s[i:])
		switch st {
		case incomplete:
			if !final {
				r.pending(c)
			}
			return incomplete, 0
		case malformed:
			return malformed, 0
		}
		r.calls = append(r.calls, c)
		i = skipSpace(s, i+m)
	}
}

// mistralNamed reads name[CALL_ID]id[ARGS]{…} or name[ARGS]{…}.
func mistralNamed(s string) (pcall, state, int) {
	const callID, args = "[CALL_ID]", "[ARGS]"
	k := strings.IndexByte(s, '[')
	if k < 0 {
		if strings.ContainsAny(s, " \t\r\n{}\"") {
			return pcall{}, malformed, 0
		}
		return pcall{}, incomplete, 0
	}
	c := pcall{name: s[:k]}
	if c.name == "" || strings.ContainsAny(c.name, " \t\r\n{}\"") {
		return pcall{}, malformed, 0
	}
	rest := s[k:]
	if strings.HasPrefix(rest, callID) {
		e := strings.IndexByte(rest[len(callID):], '[')
		if e < 0 {
			return pcall{}, incomplete, 0
		}
		c.id = rest[len(callID) : len(callID)+e]
		rest = rest[len(callID)+e:]
	} else if strings.HasPrefix(callID, rest) {
		return pcall{}, incomplete, 0
	}
	if !strings.HasPrefix(rest, args) {
		if strings.HasPrefix(args, rest) {
			return pcall{}, incomplete, 0
		}
		return pcall{}, malformed, 0
	}
	at := len(s) - len(rest) + len(args)
	a := skipSpace(s, at)
	if a == len(s) {
		return pcall{}, incomplete, 0
	}
	if s[a] != '{' {
		return pcall{}, malformed, 0
	}
	dec := json.NewDecoder(strings.NewReader(s[a:]))
	if err := skipValue(dec); err != nil {
		if isEOF(err) {
			c.args = s[a:]
			return c, incomplete, 0
		}
		return pcall{}, malformed, 0
	}
	end := a + int(dec.InputOffset())
	c.args, c.done = s[a:end], true
	return c, complete, end
}
