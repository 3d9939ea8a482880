package tokenizer

import "unicode/utf8"

// utf8Text turns decoded bytes into text the way the reference decodes
// them (transformers.js, whose decoders call the WHATWG TextDecoder): each
// maximal ill-formed subsequence becomes one U+FFFD — a lead byte and the
// continuation bytes that could still complete it, cut short, count once;
// a byte that can start nothing counts alone. Go's own conversions differ
// (range over a string gives one U+FFFD per bad byte, strings.ToValidUTF8
// one per run), so neither can stand in. stripBOM drops a leading U+FEFF,
// as TextDecoder does unless ignoreBOM is set (its ByteFallback decoder
// leaves it unset, its ByteLevel decoder sets it).
func utf8Text(b []byte, stripBOM bool) string {
	if stripBOM && len(b) >= 3 && b[0] == 0xEF && b[1] == 0xBB && b[2] == 0xBF {
		b = b[3:]
	}
	if utf8.Valid(b) {
		return string(b)
	}
	out := make([]byte, 0, len(b)+8)
	for i := 0; i < len(b); {
		c := b[i]
		if c < 0x80 {
			out = append(out, c)
			i++
			continue
		}
		// The Encoding Standard's UTF-8 decoder: how many continuation
		// bytes the lead needs and the range the first one must fall in
		// (which rules out overlong forms, surrogates and > U+10FFFF).
		need, lo, hi := 0, byte(0x80), byte(0xBF)
		switch {
		case c >= 0xC2 && c <= 0xDF:
			need = 1
		case c >= 0xE0 && c <= 0xEF:
			need = 2
			if c == 0xE0 {
				lo = 0xA0
			} else if c == 0xED {
				hi = 0x9F
			}
		case c >= 0xF0 && c <= 0xF4:
			need = 3
			if c == 0xF0 {
				lo = 0x90
			} else if c == 0xF4 {
				hi = 0x8F
			}
		default:
			out = append(out, "\uFFFD"...)
			i++
			continue
		}
		j := i + 1
		for seen := 0; seen < need; seen++ {
			if j >= len(b) || b[j] < lo || b[j] > hi {
				break
			}
			lo, hi = 0x80, 0xBF
			j++
		}
		if j-i == need+1 {
			out = append(out, b[i:j]...)
		} else {
			out = append(out, "\uFFFD"...) // the byte at j, if any, starts afresh
		}
		i = j
	}
	return string(out)
}
