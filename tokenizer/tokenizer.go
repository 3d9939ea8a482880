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

	"github.com/cflow-dev/cflow/cflowfmt"
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

// FromMetadata builds the file's tokenizer. vocab is the model's vocabulary
// size; ids the tokenizer produces must fit it.
func FromMetadata(md *cflowfmt.Metadata, vocab int) (Tokenizer, error) {
	kind := md.String(cflowfmt.KeyTokenizerKind, "")
	data := md.Bytes(cflowfmt.KeyTokenizerData)
	bos := specialID(md, cflowfmt.KeyBOS, vocab)
	eos := specialID(md, cflowfmt.KeyEOS, vocab)
	switch kind {
	case "":
		return nil, ErrNoTokenizer
	case "byte":
		if vocab < 256 {
			return nil, fmt.Errorf("byte tokenizer needs a vocabulary of at least 256, model has %d", vocab)
		}
		return &Byte{bos: bos, eos: eos}, nil
	case "llama2c":
		return NewLlama2c(data, vocab, bos, eos)
	case KindHF, KindHFJSON, "gpt2":
		if len(data) == 0 {
			return nil, fmt.Errorf("tokenizer %q has no data in the file (this build embeds no GPT-2 vocabulary); use --prompt-ids", kind)
		}
		var t *HF
		var err error
		if kind == KindHF {
			t, err = OpenFlat(data, bos, eos)
		} else {
			t, err = ParseJSON(data, nil, bos, eos)
		}
		if err != nil {
			return nil, err
		}
		if err := t.fitTo(vocab); err != nil {
			return nil, err
		}
		if _, ok := md.Type(cflowfmt.KeyAddBOS); ok {
			t.addBOS = md.U32(cflowfmt.KeyAddBOS, 0) != 0
		}
		for _, id := range md.U32s(cflowfmt.KeyEndOfTurn) {
			if int64(id) >= int64(t.VocabSize()) {
				return nil, fmt.Errorf("metadata %s: id %d outside the tokenizer's %d ids", cflowfmt.KeyEndOfTurn, id, t.VocabSize())
			}
			t.eot = append(t.eot, int(id))
		}
		return t, nil
	}
	return nil, fmt.Errorf("unknown tokenizer kind %q", kind)
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

func specialID(md *cflowfmt.Metadata, key string, vocab int) int {
	const none = ^uint32(0)
	v := md.U32(key, none)
	if v == none || int64(v) >= int64(vocab) {
		return -1
	}
	return int(v)
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
