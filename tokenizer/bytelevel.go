package tokenizer

// byteRune is GPT-2's bytes_to_unicode, which the ByteLevel pre-tokenizer
// and decoder share: printable bytes map to themselves, the rest to runes
// from U+0100 on, so every byte sequence becomes printable text a BPE
// vocabulary can hold.
var byteRune, runeByte = func() ([256]rune, map[rune]byte) {
	var br [256]rune
	rb := map[rune]byte{}
	n := 0
	for b := 0; b < 256; b++ {
		if b >= '!' && b <= '~' || b >= 0xA1 && b <= 0xAC || b >= 0xAE {
			br[b] = rune(b)
		} else {
			br[b] = rune(256 + n)
			n++
		}
		rb[br[b]] = byte(b)
	}
	return br, rb
}()

// byteLevelEncode maps s's bytes to their printable runes.
func byteLevelEncode(s string) string {
	out := make([]rune, len(s))
	for i := 0; i < len(s); i++ {
		out[i] = byteRune[s[i]]
	}
	return string(out)
}

// byteLevelDecode maps printable runes back to bytes; runes outside the
// table (added tokens' text) pass through as UTF-8.
func byteLevelDecode(s string) string {
	out := make([]byte, 0, len(s))
	for _, r := range s {
		if b, ok := runeByte[r]; ok {
			out = append(out, b)
		} else {
			out = append(out, string(r)...)
		}
	}
	return string(out)
}
