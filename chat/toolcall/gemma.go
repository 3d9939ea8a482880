package toolcall

import (
	"strings"
)

// gemmaQuote is Gemma 4's string delimiter in a call's arguments.
const gemmaQuote = `<|"|>`

// gemmaCall reads name{key:value,…} (after "<|tool_call>call:") and
// converts the arguments to JSON: keys are bare, strings are quoted by
// <|"|>, numbers, booleans and null are JSON's, and values nest as JSON's
// do (llama.cpp's gemma4 grammar).
func gemmaCall(s string) (pcall, state, int) {
	k := strings.IndexByte(s, '{')
	if k < 0 {
		if strings.ContainsAny(s, " \t\r\n}<\"") {
			return pcall{}, malformed, 0
		}
		return pcall{}, incomplete, 0
	}
	name := s[:k]
	if name == "" || strings.ContainsAny(name, " \t\r\n}<\"") {
		return pcall{}, malformed, 0
	}
	var b strings.Builder
	n, st := gemmaValue(&b, s, k)
	if st != complete {
		return pcall{name: name}, st, 0
	}
	return pcall{name: name, args: b.String(), done: true}, complete, n
}

// gemmaValue converts the value at s[i] into b, returning where it ends.
func gemmaValue(b *strings.Builder, s string, i int) (int, state) {
	i = skipSpace(s, i)
	if i == len(s) {
		return 0, incomplete
	}
	switch {
	case strings.HasPrefix(s[i:], gemmaQuote):
		e := strings.Index(s[i+len(gemmaQuote):], gemmaQuote)
		if e < 0 {
			return 0, incomplete
		}
		b.WriteString(quoteJSON(s[i+len(gemmaQuote) : i+len(gemmaQuote)+e]))
		return i + 2*len(gemmaQuote) + e, complete
	case strings.HasPrefix(gemmaQuote, s[i:]):
		return 0, incomplete
	case s[i] == '{' || s[i] == '[':
		open, close := s[i], byte('}')
		if open == '[' {
			close = ']'
		}
		b.WriteByte(open)
		i = skipSpace(s, i+1)
		for n := 0; ; n++ {
			if i == len(s) {
				return 0, incomplete
			}
			if s[i] == close {
				b.WriteByte(close)
				return i + 1, complete
			}
			if n > 0 {
				if s[i] != ',' {
					return 0, malformed
				}
				b.WriteByte(',')
				i = skipSpace(s, i+1)
			}
			if open == '{' {
				c := strings.IndexByte(s[i:], ':')
				if c < 0 {
					if strings.ContainsAny(s[i:], "}") {
						return 0, malformed
					}
					return 0, incomplete
				}
				key := s[i : i+c]
				if key == "" || strings.ContainsAny(key, "}") {
					return 0, malformed
				}
				b.WriteString(quoteJSON(key) + ":")
				i += c + 1
			}
			e, st := gemmaValue(b, s, i)
			if st != complete {
				return 0, st
			}
			i = skipSpace(s, e)
		}
	}
	for _, lit := range []string{"true", "false", "null"} {
		if strings.HasPrefix(s[i:], lit) {
			b.WriteString(lit)
			return i + len(lit), complete
		}
		if strings.HasPrefix(lit, s[i:]) {
			return 0, incomplete
		}
	}
	n := i
	for n < len(s) && strings.IndexByte("+-.eE0123456789", s[n]) >= 0 {
		n++
	}
	if n == len(s) {
		return 0, incomplete
	}
	if n == i || !validJSONNumber(s[i:n]) {
		return 0, malformed
	}
	b.WriteString(s[i:n])
	return n, complete
}
