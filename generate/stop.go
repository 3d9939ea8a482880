package generate

import (
	"bytes"
	"unicode/utf8"
)

// stopText matches stop strings on the generated text across token
// boundaries. It releases text only once no stop string can start in it,
// so a stop string is never emitted, not even its first half; and it holds
// back an incomplete UTF-8 sequence until its last byte arrives, so
// streamed text is whole characters (byte-level tokens split them).
type stopText struct {
	stops   [][]byte
	pending []byte
}

// add appends a token's bytes and returns the text that can be released.
// hit reports a stop string: out is the text before it, and everything
// from the stop string on is dropped.
func (t *stopText) add(piece []byte) (out []byte, hit bool) {
	t.pending = append(t.pending, piece...)
	first := -1
	for _, s := range t.stops {
		if i := bytes.Index(t.pending, s); i >= 0 && (first < 0 || i < first) {
			first = i
		}
	}
	if first >= 0 {
		out = bytes.Clone(t.pending[:first])
		t.pending = t.pending[:0]
		return out, true
	}
	hold := incompleteUTF8(t.pending)
	for _, s := range t.stops {
		hold = max(hold, prefixSuffix(t.pending, s))
	}
	n := len(t.pending) - hold
	out = bytes.Clone(t.pending[:n])
	t.pending = append(t.pending[:0], t.pending[n:]...)
	return out, false
}

// flush releases whatever is held back (the sequence ended otherwise).
func (t *stopText) flush() []byte {
	out := bytes.Clone(t.pending)
	t.pending = t.pending[:0]
	return out
}

// prefixSuffix is the length of the longest suffix of b that is a proper
// prefix of s: text that a later token could complete into s.
func prefixSuffix(b, s []byte) int {
	for n := min(len(b), len(s)-1); n > 0; n-- {
		if bytes.Equal(b[len(b)-n:], s[:n]) {
			return n
		}
	}
	return 0
}

// incompleteUTF8 is the number of trailing bytes of b that start a UTF-8
// sequence still missing bytes (0 when b ends on a whole character or on
// bytes that can never become one).
func incompleteUTF8(b []byte) int {
	for n := 1; n <= min(len(b), utf8.UTFMax-1); n++ {
		c := b[len(b)-n]
		if c < 0x80 {
			return 0
		}
		if !utf8.RuneStart(c) {
			continue
		}
		need := 0
		switch {
		case c&0xE0 == 0xC0:
			need = 2
		case c&0xF0 == 0xE0:
			need = 3
		case c&0xF8 == 0xF0:
			need = 4
		}
		if need > n {
			return n
		}
		return 0
	}
	return 0
}
