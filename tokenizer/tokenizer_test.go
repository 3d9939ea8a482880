package tokenizer

import (
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"
)

func TestNoTokenizer(t *testing.T) {
	if _, err := Load(&Stored{BOS: -1, EOS: -1}, 100); !errors.Is(err, ErrNoTokenizer) {
		t.Fatalf("err = %v, want ErrNoTokenizer", err)
	}
}

func TestByte(t *testing.T) {
	tk, err := Load(&Stored{Kind: "byte", BOS: 256, EOS: 257}, 258)
	if err != nil {
		t.Fatal(err)
	}
	ids, _ := tk.Encode("hé")
	if want := []int{'h', 0xC3, 0xA9}; !eq(ids, want) {
		t.Fatalf("Encode = %v, want %v", ids, want)
	}
	var out []byte
	for _, id := range append([]int{256}, ids...) {
		out = append(out, tk.Piece(-1, id)...)
	}
	if string(out) != "hé" || tk.BOS() != 256 || tk.EOS() != 257 {
		t.Fatalf("decode %q bos %d eos %d", out, tk.BOS(), tk.EOS())
	}
}

// llama2cTable builds a tokenizer.bin image from pieces and scores.
func llama2cTable(pieces []string, scores []float32) []byte {
	b := binary.LittleEndian.AppendUint32(nil, 16)
	for i, p := range pieces {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(scores[i]))
		b = binary.LittleEndian.AppendUint32(b, uint32(len(p)))
		b = append(b, p...)
	}
	return b
}

// TestLlama2c: with pieces " ", "a", "b", " a", " ab" (scores rising), the
// text "ab" is " " "a" "b" → merge " a" (score 1) → merge " ab" (score 2),
// by hand: one id, 3+256+4 = 263. A byte with no piece falls back to id
// byte+3.
func TestLlama2c(t *testing.T) {
	pieces := []string{"<unk>", "<s>", "</s>"}
	scores := []float32{0, 0, 0}
	for b := 0; b < 256; b++ {
		pieces = append(pieces, "<0x"+strings.ToUpper(hex2(b))+">")
		scores = append(scores, 0)
	}
	pieces = append(pieces, " ", "a", "b", " a", " ab")
	scores = append(scores, -5, -4, -3, 1, 2)
	tk, err := NewLlama2c(llama2cTable(pieces, scores), len(pieces), -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	ids, _ := tk.Encode("ab")
	if !eq(ids, []int{263}) {
		t.Fatalf("Encode(ab) = %v, want [263]", ids)
	}
	ids, _ = tk.Encode("b!")
	if !eq(ids, []int{259, 261, '!' + 3}) {
		t.Fatalf("Encode(b!) = %v", ids)
	}
	if got := string(tk.Piece(1, 263)) + string(tk.Piece(263, '!'+3)); got != "ab!" {
		t.Fatalf("decode = %q", got)
	}
}

func hex2(b int) string {
	const h = "0123456789abcdef"
	return string([]byte{h[b>>4], h[b&15]})
}

// smallByteLevelJSON is a GPT-2-style tokenizer.json of 13 ids.
const smallByteLevelJSON = `{"model":{"type":"BPE","vocab":{"h":0,"e":1,"l":2,"o":3,"Ġ":4,"w":5,"r":6,"d":7,"he":8,"ll":9,"hell":10,"Ġw":11,"<|endoftext|>":12},
	"merges":["h e","l l","he ll","Ġ w"]},"added_tokens":[{"id":12,"content":"<|endoftext|>","special":true}],
	"pre_tokenizer":{"type":"ByteLevel","add_prefix_space":false},"decoder":{"type":"ByteLevel"}}`

// TestHFByteLevel: GPT-2-style tokenizer.json with merges "h e", "l l",
// "he ll", "Ġ w"; "hello world" pre-splits to "hello" and "Ġworld"
// (Ġ = the space's byte-level rune), giving hell+o and Ġw+o+r+l+d.
func TestHFByteLevel(t *testing.T) {
	tk, err := ParseJSON([]byte(smallByteLevelJSON), nil, -1, 12)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := tk.Encode("hello world")
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{10, 3, 11, 3, 6, 2, 7}; !eq(ids, want) {
		t.Fatalf("Encode = %v, want %v", ids, want)
	}
	var out []byte
	for _, id := range append(ids, 12) {
		out = append(out, tk.Piece(-1, id)...)
	}
	if string(out) != "hello world" {
		t.Fatalf("decode = %q", out)
	}
	re, _ := compileRegex(gpt2Pattern)
	if got := splitBy("it's  ok!!", re.find("it's  ok!!"), splitIsolated, false); strings.Join(got, "|") != "it|'s| | ok|!!" {
		t.Fatalf("split = %q", got)
	}
}

func eq(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
