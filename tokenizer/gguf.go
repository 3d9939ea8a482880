package tokenizer

import (
	"fmt"
	"sort"
	"strings"

	"github.com/cflow-dev/cflow/cflowfmt"
)

// GGUFVocab is a model file's tokenizer in the terms of llama.cpp's GGUF
// keys (tokenizer.ggml.*), so an exported GGUF tokenizes as the model's own
// tokenizer does. The gguf writer copies it field by field.
type GGUFVocab struct {
	// Model is "gpt2" (byte-level BPE: Llama 3, Qwen) or "llama"
	// (SentencePiece-style pieces with ▁ and <0xXX> byte fallback:
	// Llama 2, Gemma, llama2.c tables).
	Model string
	// Pre names llama.cpp's pre-tokenizer for gpt2 models ("llama-bpe",
	// "qwen2", "default"); "" for llama models.
	Pre    string
	Tokens []string
	// Scores rank llama-model pieces for merging (higher merges first);
	// for HF BPE they are −(rank of the merge that makes the piece).
	Scores []float32
	// Types are llama_token_type values: 1 normal, 2 unknown, 3 control,
	// 4 user-defined, 5 unused (padding ids), 6 byte.
	Types []int32
	// Merges are "left right" in rank order (gpt2 models).
	Merges         []string
	BOS, EOS, UNK  int // −1 when none
	AddBOS         bool
	AddSpacePrefix bool
	EndOfTurn      []int
	ChatTemplate   string
}

// The llama_token_type values GGUFVocab uses.
const (
	ggufNormal      = 1
	ggufUnknown     = 2
	ggufControl     = 3
	ggufUserDefined = 4
	ggufUnused      = 5
	ggufByte        = 6
)

// VocabForGGUF returns the file's tokenizer for GGUF export, padded to the
// model's vocabulary (ids past the tokenizer's are unused "[PAD<id>]"
// pieces, as llama.cpp's converter writes them). ErrNoTokenizer when the
// file has none; byte tokenizers are refused (llama.cpp has no such model).
func VocabForGGUF(md *cflowfmt.Metadata, vocab int) (*GGUFVocab, error) {
	tk, err := FromMetadata(md, vocab)
	if err != nil {
		return nil, err
	}
	g := &GGUFVocab{BOS: tk.BOS(), EOS: tk.EOS(), UNK: -1, AddBOS: AddsBOS(tk),
		ChatTemplate: md.String(cflowfmt.KeyChatTemplate, "")}
	for _, id := range md.U32s(cflowfmt.KeyEndOfTurn) {
		g.EndOfTurn = append(g.EndOfTurn, int(id))
	}
	switch t := tk.(type) {
	case *HF:
		t.ggufVocab(g)
	case *Llama2c:
		g.Model, g.AddSpacePrefix = "llama", true
		for i, p := range t.pieces {
			typ := int32(ggufNormal)
			switch {
			case i == 0:
				typ, g.UNK = ggufUnknown, 0
			case i == t.bos || i == t.eos:
				typ = ggufControl
			case isBytePiece(p):
				typ = ggufByte
			}
			// llama2.c stores " " where SentencePiece has ▁.
			g.Tokens = append(g.Tokens, strings.ReplaceAll(p, " ", "▁"))
			g.Scores = append(g.Scores, t.scores[i])
			g.Types = append(g.Types, typ)
		}
	default:
		return nil, fmt.Errorf("tokenizer kind %q has no GGUF equivalent", tk.Kind())
	}
	if len(g.Tokens) > vocab { // added tokens past the model's embeddings
		g.Tokens, g.Types = g.Tokens[:vocab], g.Types[:vocab]
		if g.Scores != nil {
			g.Scores = g.Scores[:vocab]
		}
	}
	for id := len(g.Tokens); id < vocab; id++ {
		g.Tokens = append(g.Tokens, fmt.Sprintf("[PAD%d]", id))
		g.Types = append(g.Types, ggufUnused)
		if g.Scores != nil {
			g.Scores = append(g.Scores, 0)
		}
	}
	return g, nil
}

func isBytePiece(p string) bool {
	_, ok := byteFallbackPiece(p)
	return ok
}

func (t *HF) ggufVocab(g *GGUFVocab) {
	n := t.v.size()
	g.Tokens = make([]string, n)
	g.Types = make([]int32, n)
	for id := 0; id < n; id++ {
		g.Tokens[id] = t.v.piece(id)
		g.Types[id] = ggufNormal
		if g.Tokens[id] == "" {
			g.Tokens[id], g.Types[id] = fmt.Sprintf("[PAD%d]", id), ggufUnused
		}
	}
	for _, a := range t.pipe.AddedTokens {
		if a.Special {
			g.Types[a.ID] = ggufControl
		} else {
			g.Types[a.ID] = ggufUserDefined
		}
	}
	if t.pipe.Unk >= 0 {
		g.UNK = t.pipe.Unk
		g.Types[t.pipe.Unk] = ggufUnknown
	}
	m := t.model.m
	order := make([]int, len(m.keys))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return m.vals[order[a]]>>32 < m.vals[order[b]]>>32 })
	if t.byteLevel {
		g.Model = "gpt2"
		g.Pre = "default"
		pre := string(t.pipe.PreTokenizer)
		switch {
		case strings.Contains(pre, `\\p{N}{1,3}`):
			g.Pre = "llama-bpe"
		case strings.Contains(pre, `[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}|`):
			g.Pre = "qwen2"
		}
		for _, i := range order {
			k := m.keys[i]
			g.Merges = append(g.Merges, t.v.piece(int(k>>32))+" "+t.v.piece(int(uint32(k))))
		}
		return
	}
	g.Model = "llama"
	norm := string(t.pipe.Normalizer) + string(t.pipe.PreTokenizer)
	g.AddSpacePrefix = strings.Contains(norm, `"Prepend"`) || strings.Contains(norm, `"Metaspace"`) && !strings.Contains(norm, `"never"`)
	g.Scores = make([]float32, n)
	for id := range g.Scores {
		if isBytePiece(g.Tokens[id]) {
			g.Types[id] = ggufByte
		}
	}
	// A piece made by merges scores −(its lowest merge rank); pieces no
	// merge makes (single characters, added tokens) score 0, above every
	// merge, which llama.cpp's SentencePiece merging never compares.
	done := make([]bool, n)
	for _, i := range order {
		merged := int(uint32(m.vals[i]))
		if !done[merged] {
			done[merged] = true
			g.Scores[merged] = -float32(m.vals[i] >> 32)
		}
	}
}
