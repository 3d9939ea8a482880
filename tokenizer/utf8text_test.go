package tokenizer

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestUTF8TextByTheStandard: the Encoding Standard's UTF-8 decoder on the
// cases that tell it apart from Go's conversions, worked out by hand from
// its algorithm (node's TextDecoder, the reference's, is compared on
// random bytes in TestUTF8TextAgainstNode).
func TestUTF8TextByTheStandard(t *testing.T) {
	const R = "\uFFFD"
	cases := []struct {
		in       []byte
		stripBOM bool
		want     string
	}{
		{[]byte("héllo"), false, "héllo"},
		{[]byte{0xF0, 0x9F, 0x98}, false, R},                   // a 4-byte lead cut after 3: one
		{[]byte{0xF0, 0x9F, 0x98, 'a'}, false, R + "a"},        // … followed by text
		{[]byte{0xE4, 0xBD, 0xE5, 0xA5, 0xBD}, false, R + "好"}, // cut, then a whole one
		{[]byte{0xC0, 0x80}, false, R + R},                     // C0 starts nothing; 80 alone
		{[]byte{0xE0, 0x80, 0x80}, false, R + R + R},           // overlong: E0 needs A0..BF next
		{[]byte{0xED, 0xA0, 0x80}, false, R + R + R},           // a surrogate: ED needs 80..9F
		{[]byte{0xF4, 0x90, 0x80, 0x80}, false, R + R + R + R},
		{[]byte{0xF5, 0x80}, false, R + R},
		{[]byte{0x80, 0xBF}, false, R + R},
		{[]byte{0xE2, 0x82}, false, R},
		{[]byte{0xEF, 0xBB, 0xBF, 'A'}, true, "A"},
		{[]byte{0xEF, 0xBB, 0xBF, 'A'}, false, "\uFEFFA"},
		{[]byte{'A', 0xEF, 0xBB, 0xBF}, true, "A\uFEFF"}, // only a leading BOM goes
	}
	for _, c := range cases {
		if got := utf8Text(c.in, c.stripBOM); got != c.want {
			t.Errorf("utf8Text(% x, %v) = %+q, want %+q", c.in, c.stripBOM, got, c.want)
		}
	}
}

// TestUTF8TextValid: whatever the bytes, the text is valid UTF-8, valid
// input comes back unchanged, and a U+FFFD appears only where the input
// was ill-formed (never more of them than bytes removed could explain).
func TestUTF8TextValid(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	for k := 0; k < 20000; k++ {
		b := make([]byte, rng.IntN(16))
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		got := utf8Text(b, false)
		if !utf8.ValidString(got) {
			t.Fatalf("% x → %+q is not valid UTF-8", b, got)
		}
		if utf8.Valid(b) && got != string(b) {
			t.Fatalf("valid % x → %+q", b, got)
		}
		if n := strings.Count(got, "\uFFFD") - strings.Count(string(b), "\uFFFD"); n > len(b) {
			t.Fatalf("% x → %d replacements", b, n)
		}
	}
}
