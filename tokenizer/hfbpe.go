package tokenizer

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// HFBPE is a HuggingFace tokenizer.json BPE model in one of its two common
// dressings: GPT-2 byte-level (bytes mapped to printable runes, text split
// by GPT-2's pattern) or SentencePiece-style (spaces as ▁, a ▁ prefix,
// <0xXX> byte fallback).
type HFBPE struct {
	vocab     map[string]int
	pieces    []string
	ranks     map[[2]string]int
	byteLevel bool
	prefix    bool
	special   map[int]bool
	unk       int
	bos, eos  int
}

type hfJSON struct {
	Model struct {
		Type         string          `json:"type"`
		Vocab        map[string]int  `json:"vocab"`
		Merges       json.RawMessage `json:"merges"`
		UnkToken     *string         `json:"unk_token"`
		ByteFallback bool            `json:"byte_fallback"`
	} `json:"model"`
	AddedTokens []struct {
		ID      int    `json:"id"`
		Content string `json:"content"`
		Special bool   `json:"special"`
	} `json:"added_tokens"`
	PreTokenizer json.RawMessage `json:"pre_tokenizer"`
	Normalizer   json.RawMessage `json:"normalizer"`
	Decoder      json.RawMessage `json:"decoder"`
}

// NewHFBPE parses tokenizer.json bytes.
func NewHFBPE(data []byte, vocab, bos, eos int) (*HFBPE, error) {
	var j hfJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return nil, fmt.Errorf("tokenizer.json: %w", err)
	}
	if j.Model.Type != "" && j.Model.Type != "BPE" {
		return nil, fmt.Errorf("tokenizer.json: model type %q, only BPE is supported", j.Model.Type)
	}
	t := &HFBPE{vocab: j.Model.Vocab, ranks: map[[2]string]int{}, special: map[int]bool{}, unk: -1, bos: bos, eos: eos}
	for _, a := range j.AddedTokens {
		t.vocab[a.Content] = a.ID
		if a.Special {
			t.special[a.ID] = true
		}
	}
	t.pieces = make([]string, vocab)
	for p, id := range t.vocab {
		if id >= 0 && id < vocab {
			t.pieces[id] = p
		}
	}
	var strs []string
	var pairs [][2]string
	if err := json.Unmarshal(j.Model.Merges, &strs); err == nil {
		for _, s := range strs {
			a, b, ok := strings.Cut(s, " ")
			if !ok {
				return nil, fmt.Errorf("tokenizer.json: merge %q has no space", s)
			}
			pairs = append(pairs, [2]string{a, b})
		}
	} else if err := json.Unmarshal(j.Model.Merges, &pairs); err != nil && len(j.Model.Merges) > 0 {
		return nil, fmt.Errorf("tokenizer.json: merges: %w", err)
	}
	for i, p := range pairs {
		if _, dup := t.ranks[p]; !dup {
			t.ranks[p] = i
		}
	}
	pre := string(j.PreTokenizer) + string(j.Decoder)
	t.byteLevel = strings.Contains(pre, `"ByteLevel"`)
	if !t.byteLevel {
		norm := string(j.Normalizer) + string(j.PreTokenizer)
		t.prefix = strings.Contains(norm, `"Prepend"`) || strings.Contains(norm, `"Metaspace"`)
	}
	if j.Model.UnkToken != nil {
		if id, ok := t.vocab[*j.Model.UnkToken]; ok {
			t.unk = id
		}
	}
	return t, nil
}

// Kind implements Tokenizer.
func (t *HFBPE) Kind() string { return "hf-bpe" }

// BOS implements Tokenizer.
func (t *HFBPE) BOS() int { return t.bos }

// EOS implements Tokenizer.
func (t *HFBPE) EOS() int { return t.eos }

// Encode splits, maps and merges text into ids.
func (t *HFBPE) Encode(text string) ([]int, error) {
	var ids []int
	if t.byteLevel {
		for _, w := range gpt2Split(text) {
			var syms []string
			for i := 0; i < len(w); i++ {
				syms = append(syms, string(byteRune[w[i]]))
			}
			for _, s := range t.merge(syms) {
				id, ok := t.vocab[s]
				if !ok {
					return nil, fmt.Errorf("tokenizer.json: no id for piece %q", s)
				}
				ids = append(ids, id)
			}
		}
		return ids, nil
	}
	s := strings.ReplaceAll(text, " ", "▁")
	if t.prefix && s != "" {
		s = "▁" + s
	}
	var syms []string
	for _, r := range s {
		syms = append(syms, string(r))
	}
	for _, p := range t.merge(syms) {
		if id, ok := t.vocab[p]; ok {
			ids = append(ids, id)
			continue
		}
		for i := 0; i < len(p); i++ {
			id, ok := t.vocab[fmt.Sprintf("<0x%02X>", p[i])]
			if !ok {
				if t.unk < 0 {
					return nil, fmt.Errorf("tokenizer.json: %q has no id and no byte fallback", p)
				}
				id = t.unk
			}
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// merge applies BPE: repeatedly merge the adjacent pair of lowest rank.
func (t *HFBPE) merge(syms []string) []string {
	for len(syms) > 1 {
		best, at := -1, -1
		for i := 0; i+1 < len(syms); i++ {
			if r, ok := t.ranks[[2]string{syms[i], syms[i+1]}]; ok && (best < 0 || r < best) {
				best, at = r, i
			}
		}
		if at < 0 {
			break
		}
		a, b := syms[at], syms[at+1]
		out := syms[:0:0]
		for i := 0; i < len(syms); i++ {
			if i+1 < len(syms) && syms[i] == a && syms[i+1] == b {
				out = append(out, a+b)
				i++
				continue
			}
			out = append(out, syms[i])
		}
		syms = out
	}
	return syms
}

// Piece maps an id back to bytes.
func (t *HFBPE) Piece(prev, id int) []byte {
	if id < 0 || id >= len(t.pieces) || t.special[id] {
		return nil
	}
	p := t.pieces[id]
	if t.byteLevel {
		var out []byte
		for _, r := range p {
			if b, ok := runeByte[r]; ok {
				out = append(out, b)
			} else {
				out = utf8.AppendRune(out, r)
			}
		}
		return out
	}
	var b byte
	if len(p) == 6 && strings.HasPrefix(p, "<0x") && p[5] == '>' {
		if _, err := fmt.Sscanf(p, "<0x%02X>", &b); err == nil {
			return []byte{b}
		}
	}
	p = strings.ReplaceAll(p, "▁", " ")
	if prev < 0 || prev == t.bos {
		p = strings.TrimPrefix(p, " ")
	}
	return []byte(p)
}

// byteRune is GPT-2's bytes_to_unicode: printable bytes map to themselves,
// the rest to runes from U+0100 on.
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

// gpt2Split is GPT-2's pre-tokenization pattern
// 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// written out by hand (Go's regexp has no look-ahead).
func gpt2Split(s string) []string {
	var out []string
	rs := []rune(s)
	class := func(r rune) int {
		switch {
		case unicode.IsLetter(r):
			return 1
		case unicode.IsNumber(r):
			return 2
		case unicode.IsSpace(r):
			return 3
		}
		return 4
	}
	for i := 0; i < len(rs); {
		if rs[i] == '\'' {
			matched := false
			for _, c := range []string{"s", "t", "re", "ve", "m", "ll", "d"} {
				if strings.HasPrefix(string(rs[i+1:min(len(rs), i+3)]), c) {
					out = append(out, "'"+c)
					i += 1 + len(c)
					matched = true
					break
				}
			}
			if matched {
				continue
			}
		}
		j := i
		if rs[j] == ' ' && j+1 < len(rs) && class(rs[j+1]) != 3 {
			j++
		}
		if c := class(rs[j]); c != 3 {
			k := j + 1
			for k < len(rs) && class(rs[k]) == c {
				k++
			}
			out = append(out, string(rs[i:k]))
			i = k
			continue
		}
		// Whitespace run: all but the last rune if a non-space follows.
		k := j
		for k < len(rs) && class(rs[k]) == 3 {
			k++
		}
		if k < len(rs) && k-i > 1 {
			k--
		}
		out = append(out, string(rs[i:k]))
		i = k
	}
	return out
}
