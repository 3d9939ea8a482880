package grammar

import "encoding/json"

// sub is a terminal's progress; the zero value is "nothing consumed yet".
// It is comparable, so threads compare and key with ==.
type sub struct {
	n      int32  // literal: bytes matched; string: characters; space: indent
	a      uint8  // phase (per kind)
	b      uint8  // string: UTF-8 continuation bytes still due; space: newlines
	lo, hi uint8  // string: the range the next continuation byte must lie in
	s      string // string with exclusions: raw body; number: the text so far
}

// string phases
const (
	strStart = iota
	strBody
	strEscape
	strHex1 // \u, first hex digit due; strHex1+k: k digits read
	strHex4 = strHex1 + 3
	strDone = strHex1 + 4
)

// step feeds byte c to terminal t in progress s.
func (t *terminal) step(s sub, c byte) (sub, bool) {
	switch t.kind {
	case termLiteral:
		if int(s.n) < len(t.lit) && t.lit[s.n] == c {
			s.n++
			return s, true
		}
		return s, false
	case termSpace:
		return stepSpace(s, c)
	case termString:
		return t.stepString(s, c)
	default:
		return t.stepNumber(s, c)
	}
}

// final says whether t may end after s.
func (t *terminal) final(s sub) bool {
	switch t.kind {
	case termLiteral:
		return int(s.n) == len(t.lit)
	case termSpace:
		return s.a != 0
	case termString:
		return s.a == strDone
	default:
		return t.numberFinal(s)
	}
}

// space phases: 1 one space (ends it), 2 newlines then indentation.
const maxIndent = 20

func stepSpace(s sub, c byte) (sub, bool) {
	switch s.a {
	case 0:
		if c == ' ' {
			return sub{a: 1}, true
		}
		if c == '\n' {
			return sub{a: 2, b: 1}, true
		}
	case 2:
		if c == '\n' && s.b == 1 && s.n == 0 {
			s.b = 2
			return s, true
		}
		if (c == ' ' || c == '\t') && s.n < maxIndent {
			s.n++
			return s, true
		}
	}
	return s, false
}

func (t *terminal) stepString(s sub, c byte) (sub, bool) {
	keep := t.str.exclude != nil
	switch {
	case s.a == strStart:
		if c == '"' {
			s.a = strBody
			return s, true
		}
		return s, false
	case s.a == strBody && s.b > 0: // UTF-8 continuation
		if c < s.lo || c > s.hi {
			return s, false
		}
		s.b--
		s.lo, s.hi = 0x80, 0xBF
		if s.b == 0 {
			s.lo, s.hi = 0, 0
		}
	case s.a == strBody:
		if c == '"' {
			if int(s.n) < t.str.minLen {
				return s, false
			}
			if keep {
				var v string
				if json.Unmarshal([]byte(`"`+s.s+`"`), &v) != nil || t.str.exclude[v] {
					return s, false
				}
			}
			s.a = strDone
			s.s = ""
			return s, true
		}
		if c < 0x20 {
			return s, false
		}
		if !t.str.room(s) {
			return s, false
		}
		switch {
		case c == '\\':
			s.a = strEscape
		case c < 0x80:
		case c >= 0xC2 && c <= 0xDF:
			s.b, s.lo, s.hi = 1, 0x80, 0xBF
		case c == 0xE0:
			s.b, s.lo, s.hi = 2, 0xA0, 0xBF
		case c == 0xED:
			s.b, s.lo, s.hi = 2, 0x80, 0x9F
		case c >= 0xE1 && c <= 0xEF:
			s.b, s.lo, s.hi = 2, 0x80, 0xBF
		case c == 0xF0:
			s.b, s.lo, s.hi = 3, 0x90, 0xBF
		case c >= 0xF1 && c <= 0xF3:
			s.b, s.lo, s.hi = 3, 0x80, 0xBF
		case c == 0xF4:
			s.b, s.lo, s.hi = 3, 0x80, 0x8F
		default:
			return s, false
		}
		s.n = t.str.count(s.n)
	case s.a == strEscape:
		switch c {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			s.a = strBody
		case 'u':
			s.a = strHex1
		default:
			return s, false
		}
	case s.a >= strHex1 && s.a <= strHex4:
		if !isHex(c) {
			return s, false
		}
		// \uD800–\uDFFF are surrogates: never escaped alone, so never at all.
		if s.a == strHex1+1 && s.lo == 1 && !(c >= '0' && c <= '7') {
			return s, false
		}
		if s.a == strHex1 && (c == 'd' || c == 'D') {
			s.lo = 1 // remember a leading D for the next digit
		} else if s.a == strHex1 {
			s.lo = 0
		}
		s.a++
		if s.a == strDone {
			s.a = strBody
			s.lo = 0
		}
	default:
		return s, false
	}
	if keep {
		s.s += string(c)
	}
	return s, true
}

// room says whether another character fits under maxLength.
func (sp stringSpec) room(s sub) bool {
	return sp.maxLen < 0 || int(s.n) < sp.maxLen
}

// count adds one character; without a maximum, counts past the minimum are
// all alike, so they are clamped (equal states then share a mask).
func (sp stringSpec) count(n int32) int32 {
	n++
	if sp.maxLen < 0 && int(n) > sp.minLen {
		n = int32(sp.minLen)
	}
	return n
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}
