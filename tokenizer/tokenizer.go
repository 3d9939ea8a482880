// Package tokenizer turns text into token ids and back for the tokenizers
// that travel inside a model file (metadata tokenizer.kind/tokenizer.data):
// byte-level, llama2.c/SentencePiece score tables, and HF tokenizer.json
// BPE run as the tokenizers library's pipeline (hf.go), stored by the
// converter in a flat form that opens without parsing JSON (flat.go). A file
// without a tokenizer has none, and callers must take token ids instead.
package tokenizer

import (
	"errors"
	"fmt"
)

// Tokenizer encodes a prompt and decodes generated ids piece by piece.
type Tokenizer interface {
	// Kind is the tokenizer.kind this was built from.
	Kind() string
	// Encode tokenizes text without adding BOS.
	Encode(text string) ([]int, error)
	// Piece returns the bytes id stands for when it follows prev (−1 at
	// the start); special tokens give none. Bytes may be partial UTF-8.
	Piece(prev, id int) []byte
	// BOS and EOS are the special ids, −1 when the tokenizer has none.
	BOS() int
	EOS() int
}

// ErrNoTokenizer means the file carries no tokenizer: only token ids can
// be fed.
var ErrNoTokenizer = errors.New("the model file has no tokenizer")

// Stored is a tokenizer as a model file records it, apart from the
// format's keys: Prepare makes it for a writer, a reader hands it to Load.
// The formats map the fields onto their metadata (cflowfmt/tokmeta), so
// this package knows no storage format.
type Stored struct {
	Kind string // KindHF, KindHFJSON, "gpt2", "llama2c" or "byte"; "" = no tokenizer
	Data []byte // the kind's payload (flat form, tokenizer.json, score table)
	// BOS and EOS are the special ids, −1 when absent.
	BOS, EOS int
	// BOSToken and EOSToken are the texts tokenizer_config.json names.
	// A writer lets a named id replace the model config's; an unnamed one
	// only fills in what the model config left out.
	BOSToken, EOSToken string
	// AddBOS says whether prompts start with BOS; nil when the file does
	// not say (the tokenizer's own rule applies).
	AddBOS *bool
	// EndOfTurn are the ids generation stops at (EOS, end-of-turn tokens).
	EndOfTurn    []int
	ChatTemplate string
}

// Load builds a stored tokenizer. vocab is the model's vocabulary size;
// ids the tokenizer produces must fit it, and BOS/EOS ids outside it
// count as absent.
func Load(s *Stored, vocab int) (Tokenizer, error) {
	special := func(id int) int {
		if id < 0 || id >= vocab {
			return -1
		}
		return id
	}
	bos, eos := special(s.BOS), special(s.EOS)
	switch s.Kind {
	case "":
		return nil, ErrNoTokenizer
	case "byte":
		if vocab < 256 {
			return nil, fmt.Errorf("byte tokenizer needs a vocabulary of at least 256, model has %d", vocab)
		}
		return &Byte{bos: bos, eos: eos}, nil
	case "llama2c":
		return NewLlama2c(s.Data, vocab, bos, eos)
	case KindHF, KindHFJSON, "gpt2":
		if len(s.Data) == 0 {
			return nil, fmt.Errorf("tokenizer %q has no data in the file (this build embeds no GPT-2 vocabulary); use --prompt-ids", s.Kind)
		}
		var t *HF
		var err error
		if s.Kind == KindHF {
			t, err = OpenFlat(s.Data, bos, eos)
		} else {
			t, err = ParseJSON(s.Data, nil, bos, eos)
		}
		if err != nil {
			return nil, err
		}
		if err := t.fitTo(vocab); err != nil {
			return nil, err
		}
		if s.AddBOS != nil {
			t.addBOS = *s.AddBOS
		}
		for _, id := range s.EndOfTurn {
			if id < 0 || id >= t.VocabSize() {
				return nil, fmt.Errorf("end-of-turn id %d outside the tokenizer's %d ids", id, t.VocabSize())
			}
			t.eot = append(t.eot, id)
		}
		return t, nil
	}
	return nil, fmt.Errorf("unknown tokenizer kind %q", s.Kind)
}

// AddsBOS reports whether prompts encoded with tk start with its BOS: what
// the model's tokenizer does (HF: add_bos_token or the post-processor;
// llama2.c and byte tokenizers: whenever they have a BOS).
func AddsBOS(tk Tokenizer) bool {
	if a, ok := tk.(interface{ AddBOS() bool }); ok {
		return a.AddBOS()
	}
	return tk.BOS() >= 0
}

// Byte is the byte-level tokenizer: ids 0–255 are the bytes themselves;
// BOS and EOS (from metadata) sit above them.
type Byte struct{ bos, eos int }

// Kind implements Tokenizer.
func (b *Byte) Kind() string { return "byte" }

// Encode returns the UTF-8 bytes of text as ids.
func (b *Byte) Encode(text string) ([]int, error) {
	ids := make([]int, len(text))
	for i := 0; i < len(text); i++ {
		ids[i] = int(text[i])
	}
	return ids, nil
}

// Piece returns the byte of a byte id and nothing for special ids.
func (b *Byte) Piece(_, id int) []byte {
	if id >= 0 && id < 256 {
		return []byte{byte(id)}
	}
	return nil
}

// BOS implements Tokenizer.
func (b *Byte) BOS() int { return b.bos }

// EOS implements Tokenizer.
func (b *Byte) EOS() int { return b.eos }

// EncodeLimited is EncodeText that stops once more than limit ids are out
// (limit ≤ 0: no limit): a text that cannot fit in limit tokens costs at
// most limit + 1 tokens' work for tokenizers that encode word by word (HF)
// or byte by byte; llama2.c's tokenizer still encodes it whole.
func EncodeLimited(tk Tokenizer, text string, splitSpecial bool, limit int) ([]int, error) {
	switch t := tk.(type) {
	case *HF:
		return t.EncodeWith(text, EncodeOptions{SplitSpecial: splitSpecial, Limit: limit})
	case *Byte:
		if limit > 0 && len(text) > limit+1 {
			text = text[:limit+1]
		}
	}
	return EncodeText(tk, text, splitSpecial)
}

// EncodeText encodes text without BOS; splitSpecial spells special tokens
// in the text out as ordinary text (only HF tokenizers have any to match).
func EncodeText(tk Tokenizer, text string, splitSpecial bool) ([]int, error) {
	if h, ok := tk.(*HF); ok {
		return h.EncodeWith(text, EncodeOptions{SplitSpecial: splitSpecial})
	}
	return tk.Encode(text)
}

// Decode is the text of ids with special tokens written out (HF: the
// decoder chain, as decode(ids, skip_special_tokens=False)); bytes are as
// the pieces give them.
func Decode(tk Tokenizer, ids []int) string {
	if h, ok := tk.(*HF); ok {
		if s, err := h.Decode(ids, false); err == nil {
			return s
		}
	}
	var out []byte
	prev := -1
	for _, id := range ids {
		out = append(out, tk.Piece(prev, id)...)
		prev = id
	}
	return string(out)
}
