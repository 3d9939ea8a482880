package tokenizer

import (
	"encoding/json"
	"fmt"
	"strings"
)

// HF is a tokenizer.json tokenizer run as the tokenizers library's
// pipeline: added tokens split out first, then per text segment
// normalizer → pre-tokenizer → BPE model, then the post-processor's
// special ids; decoding runs the decoder chain. Its vocabulary and
// merges live in the flat tables the converter stores (see flat.go).
type HF struct {
	pipe      pipeline
	v         *vocab
	model     bpe
	norm      normalizer
	pre       preTokenizer
	byteLevel bool
	added     *addedMatcher
	addedNorm *addedMatcher // normalized=true added tokens (only without a normalizer), matched second
	addedByID map[int]addedToken
	addedText map[string]bool // added tokens' contents (ByteLevel decoding keeps them as written)
	dec       []decodeStep
	bos, eos  int
	addBOS    bool
	eot       []int
	limit     int // the model's vocabulary; 0 = the tokenizer's own
}

// pipeline is the small, JSON-described part of the tokenizer (all but
// the vocabulary and merges): it travels in the flat form as JSON and is
// rebuilt at open, which takes microseconds.
type pipeline struct {
	Normalizer   json.RawMessage `json:"normalizer"`
	PreTokenizer json.RawMessage `json:"pre_tokenizer"`
	Decoder      json.RawMessage `json:"decoder"`
	AddedTokens  []addedToken    `json:"added_tokens"`
	// Prefix and Suffix are the post-processor's special ids around a
	// single sequence (TemplateProcessing, with add_bos_token/
	// add_eos_token from tokenizer_config.json applied).
	Prefix       []int `json:"prefix"`
	Suffix       []int `json:"suffix"`
	Unk          int   `json:"unk"`
	FuseUnk      bool  `json:"fuse_unk"`
	ByteFallback bool  `json:"byte_fallback"`
	IgnoreMerges bool  `json:"ignore_merges"`
	// CleanUpSpaces is tokenizer_config.json's clean_up_tokenization_spaces:
	// Decode then applies transformers' clean_up_tokenization.
	CleanUpSpaces bool `json:"clean_up_spaces,omitempty"`
}

// newHF builds the runtime tokenizer from its pipeline and tables.
func newHF(p pipeline, v *vocab, m *merges, bos, eos int) (*HF, error) {
	t := &HF{pipe: p, v: v, bos: bos, eos: eos, addedByID: map[int]addedToken{}, addedText: map[string]bool{}, addBOS: len(p.Prefix) > 0}
	t.model = bpe{v: v, m: m, unk: p.Unk, fuseUnk: p.FuseUnk, byteFallback: p.ByteFallback, ignoreMerges: p.IgnoreMerges}
	t.model.init()
	var err error
	if t.norm, err = parseNormalizer(p.Normalizer); err != nil {
		return nil, err
	}
	if t.pre, t.byteLevel, err = parsePreTokenizer(p.PreTokenizer); err != nil {
		return nil, err
	}
	if t.dec, err = parseDecoder(p.Decoder); err != nil {
		return nil, err
	}
	for _, a := range p.AddedTokens {
		if a.ID < 0 || a.ID >= v.size() {
			return nil, fmt.Errorf("tokenizer: added token %q has id %d outside the vocabulary of %d", a.Content, a.ID, v.size())
		}
		t.addedByID[a.ID] = a
		t.addedText[a.Content] = true
	}
	var raw, normed []addedToken
	for _, a := range p.AddedTokens {
		if a.Normalized {
			normed = append(normed, a)
		} else {
			raw = append(raw, a)
		}
	}
	t.added = newAddedMatcher(raw)
	if len(normed) > 0 {
		// The tokenizers library matches normalized=true tokens in the
		// normalized text of what the other added tokens left. Without a
		// normalizer that text is the input itself (GPT-2's
		// <|endoftext|>); with one, cflow does not implement it.
		if t.norm != nil {
			return nil, fmt.Errorf("tokenizer: %d added tokens are normalized=true (e.g. %q) and the tokenizer has a normalizer, "+
				"which cflow does not implement for them", len(normed), normed[0].Content)
		}
		t.addedNorm = newAddedMatcher(normed)
	}
	return t, nil
}

// Kind implements Tokenizer.
func (t *HF) Kind() string { return KindHF }

// BOS implements Tokenizer.
func (t *HF) BOS() int { return t.bos }

// EOS implements Tokenizer.
func (t *HF) EOS() int { return t.eos }

// AddBOS reports whether a prompt starts with BOS, as the model's own
// tokenizer encodes (add_bos_token / the post-processor): Llama and Gemma
// yes, Qwen no.
func (t *HF) AddBOS() bool { return t.addBOS && t.bos >= 0 }

// EndOfTurn lists the ids generation stops at besides EOS (<|eot_id|>,
// <|im_end|>, <end_of_turn>, generation_config.json's eos_token_id).
func (t *HF) EndOfTurn() []int { return t.eot }

// fitTo bounds the tokenizer to a model vocabulary of n ids. Only added
// tokens may lie beyond it (Gemma 3 1B's tokenizer has <image_soft_token>
// at 262144, one past its 262,144 embeddings): encoding such a token is an
// error naming it, never an out-of-range id.
func (t *HF) fitTo(n int) error {
	for id := n; id < t.v.size(); id++ {
		if _, added := t.addedByID[id]; !added && len(t.v.bytes(id)) > 0 {
			return fmt.Errorf("tokenizer piece %q has id %d, outside the model's vocabulary of %d", t.v.piece(id), id, n)
		}
	}
	if t.v.size() > n {
		t.limit = n
	}
	return nil
}

// VocabSize is the number of ids the tokenizer knows.
func (t *HF) VocabSize() int { return t.v.size() }

// Encode tokenizes text with special tokens in it matched as single
// tokens and without the post-processor's BOS: what a prompt continues.
func (t *HF) Encode(text string) ([]int, error) {
	return t.EncodeWith(text, EncodeOptions{})
}

// EncodeOptions choose what the tokenizers library's encode() flags do.
type EncodeOptions struct {
	// AddSpecial adds the post-processor's ids (BOS) around the text, as
	// encode(add_special_tokens=True) does.
	AddSpecial bool
	// SplitSpecial spells special tokens written in the text out as
	// ordinary text instead of matching them (split_special_tokens).
	SplitSpecial bool
	// Limit, when > 0, stops encoding once more than Limit ids are out:
	// the result is then a prefix of more than Limit ids, enough for a
	// caller (the server's admission: ctx + 1) to know the text does not
	// fit without paying to tokenize the rest of it.
	Limit int
}

// EncodeWith tokenizes text as the options say.
func (t *HF) EncodeWith(text string, o EncodeOptions) ([]int, error) {
	var ids []int
	if o.AddSpecial {
		ids = append(ids, t.pipe.Prefix...)
	}
	for _, seg := range t.segments(text, o.SplitSpecial) {
		if seg.id >= 0 {
			ids = append(ids, seg.id)
			continue
		}
		s := seg.text
		if t.norm != nil {
			s = t.norm(s)
		}
		words := []string{s}
		if t.pre != nil {
			words = t.pre(words, seg.start == 0)
		} else if t.byteLevel {
			words[0] = byteLevelEncode(s)
		}
		var err error
		for _, w := range words {
			if w == "" {
				continue
			}
			if ids, err = t.model.word(w, ids); err != nil {
				return nil, err
			}
			if o.Limit > 0 && len(ids) > o.Limit {
				return ids, nil
			}
		}
	}
	if o.AddSpecial {
		ids = append(ids, t.pipe.Suffix...)
	}
	if t.limit > 0 {
		for _, id := range ids {
			if id >= t.limit {
				return nil, fmt.Errorf("tokenizer: %q (id %d) is outside the model's vocabulary of %d", t.v.piece(id), id, t.limit)
			}
		}
	}
	return ids, nil
}

// segments splits text at added tokens as the tokenizers library does:
// the normalized=false ones in the raw text first, then the
// normalized=true ones in the text segments left between them.
func (t *HF) segments(text string, splitSpecial bool) []segment {
	segs := t.added.split(text, 0, splitSpecial)
	if t.addedNorm == nil {
		return segs
	}
	var out []segment
	for _, s := range segs {
		if s.id >= 0 {
			out = append(out, s)
			continue
		}
		out = append(out, t.addedNorm.split(s.text, s.start, splitSpecial)...)
	}
	return out
}

// IsSpecial reports whether id is a special added token (control tokens
// that decoding with skip_special_tokens leaves out).
func (t *HF) IsSpecial(id int) bool { return t.addedByID[id].Special && t.addedByID[id].Content != "" }

// TokenID returns the id of a piece or added token's text, −1 when none.
func (t *HF) TokenID(s string) int { return t.v.find(s) }

// Decode turns ids into text with the decoder chain, as the reference
// (transformers.js) decodes: bytes from byte pieces become UTF-8 text, an
// ill-formed stretch one U+FFFD (utf8Text; so a character cut between
// tokens shows as U+FFFD, as it does there), and transformers'
// clean_up_tokenization follows when tokenizer_config.json asks for it.
// Streaming goes through Piece, which keeps the raw bytes.
func (t *HF) Decode(ids []int, skipSpecial bool) (string, error) {
	toks := make([]string, 0, len(ids))
	for _, id := range ids {
		if id < 0 || id >= t.v.size() {
			return "", fmt.Errorf("tokenizer: id %d outside the vocabulary of %d", id, t.v.size())
		}
		if skipSpecial && t.IsSpecial(id) {
			continue
		}
		toks = append(toks, t.v.piece(id))
	}
	c := decodeCtx{first: true, text: true, added: t.isAddedText}
	for _, d := range t.dec {
		toks = d(toks, c)
	}
	s := strings.Join(toks, "")
	if t.pipe.CleanUpSpaces {
		s = cleanUpSpaces(s)
	}
	return s, nil
}

func (t *HF) isAddedText(s string) bool { return t.addedText[s] }

// Piece implements Tokenizer for streaming: id's bytes when it follows
// prev (−1 or a special token: id starts the output, so a leading space
// the decoder strips is stripped), possibly part of a UTF-8 character.
// Special tokens give nothing.
func (t *HF) Piece(prev, id int) []byte {
	if id < 0 || id >= t.v.size() || t.IsSpecial(id) {
		return nil
	}
	c := decodeCtx{first: prev < 0 || prev >= t.v.size() || t.IsSpecial(prev), added: t.isAddedText}
	toks := []string{t.v.piece(id)}
	for _, d := range t.dec {
		toks = d(toks, c)
	}
	return []byte(strings.Join(toks, ""))
}
