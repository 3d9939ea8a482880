package gguf

import (
	"fmt"
	"strings"

	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/cflowfmt/tokmeta"
	"github.com/cflow-dev/cflow/tokenizer"
)

// exportVocab is a model file's tokenizer in the terms of llama.cpp's GGUF
// keys (tokenizer.ggml.*), so an exported GGUF tokenizes as the model's own
// tokenizer does; writeVocab writes it field by field.
type exportVocab struct {
	// model is "gpt2" (byte-level BPE: Llama 3, Qwen) or "llama"
	// (SentencePiece-style pieces with ▁ and <0xXX> byte fallback:
	// Llama 2, Gemma, llama2.c tables).
	model string
	// pre names llama.cpp's pre-tokenizer for gpt2 models ("llama-bpe",
	// "qwen2", "default"); "" for llama models.
	pre    string
	tokens []string
	// scores rank llama-model pieces for merging (higher merges first);
	// for HF BPE they are −(rank of the merge that makes the piece).
	scores []float32
	// types are llama_token_type values (tokNormal … tokByte).
	types []int32
	// merges are "left right" in rank order (gpt2 models).
	merges         []string
	bos, eos, unk  int // −1 when none
	addBOS         bool
	addSpacePrefix bool
	endOfTurn      []int
	chatTemplate   string
}

// vocabForExport returns the file's tokenizer for GGUF export, padded to
// the model's vocabulary (ids past the tokenizer's are unused "[PAD<id>]"
// pieces, as llama.cpp's converter writes them). tokenizer.ErrNoTokenizer
// when the file has none; byte tokenizers are refused (llama.cpp has no
// such model).
func vocabForExport(md *cflowfmt.Metadata, vocab int) (*exportVocab, error) {
	tk, err := tokmeta.Load(md, vocab)
	if err != nil {
		return nil, err
	}
	g := &exportVocab{bos: tk.BOS(), eos: tk.EOS(), unk: -1, addBOS: tokenizer.AddsBOS(tk),
		chatTemplate: md.String(cflowfmt.KeyChatTemplate, "")}
	for _, id := range md.U32s(cflowfmt.KeyEndOfTurn) {
		g.endOfTurn = append(g.endOfTurn, int(id))
	}
	switch t := tk.(type) {
	case *tokenizer.HF:
		g.fromHF(t.Tables())
	case *tokenizer.Llama2c:
		g.model, g.addSpacePrefix = "llama", true
		for i, p := range t.Pieces() {
			typ := int32(tokNormal)
			switch {
			case i == 0:
				typ, g.unk = tokUnknown, 0
			case i == t.BOS() || i == t.EOS():
				typ = tokControl
			case isBytePiece(p):
				typ = tokByte
			}
			// llama2.c stores " " where SentencePiece has ▁.
			g.tokens = append(g.tokens, strings.ReplaceAll(p, " ", "▁"))
			g.scores = append(g.scores, t.Scores()[i])
			g.types = append(g.types, typ)
		}
	default:
		return nil, fmt.Errorf("tokenizer kind %q has no GGUF equivalent", tk.Kind())
	}
	if len(g.tokens) > vocab { // added tokens past the model's embeddings
		g.tokens, g.types = g.tokens[:vocab], g.types[:vocab]
		if g.scores != nil {
			g.scores = g.scores[:vocab]
		}
	}
	for id := len(g.tokens); id < vocab; id++ {
		g.tokens = append(g.tokens, fmt.Sprintf("[PAD%d]", id))
		g.types = append(g.types, tokUnused)
		if g.scores != nil {
			g.scores = append(g.scores, 0)
		}
	}
	return g, nil
}

// isBytePiece reports a SentencePiece byte-fallback piece, <0xXX>.
func isBytePiece(p string) bool {
	if len(p) != 6 || p[:3] != "<0x" || p[5] != '>' {
		return false
	}
	for _, c := range []byte(p[3:5]) {
		if !(c >= '0' && c <= '9' || c >= 'A' && c <= 'F' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

func (g *exportVocab) fromHF(tb tokenizer.Tables) {
	n := len(tb.Pieces)
	g.tokens = make([]string, n)
	g.types = make([]int32, n)
	for id, p := range tb.Pieces {
		g.tokens[id], g.types[id] = p, tokNormal
		if p == "" {
			g.tokens[id], g.types[id] = fmt.Sprintf("[PAD%d]", id), tokUnused
		}
	}
	for _, a := range tb.Added {
		if a.Special {
			g.types[a.ID] = tokControl
		} else {
			g.types[a.ID] = tokUserDefined
		}
	}
	if tb.Unk >= 0 {
		g.unk = tb.Unk
		g.types[tb.Unk] = tokUnknown
	}
	if tb.ByteLevel {
		g.model = "gpt2"
		g.pre = "default"
		pre := string(tb.PreTokenizer)
		switch {
		case strings.Contains(pre, `\\p{N}{1,3}`):
			g.pre = "llama-bpe"
		case strings.Contains(pre, `[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}|`):
			g.pre = "qwen2"
		}
		for _, m := range tb.Merges {
			g.merges = append(g.merges, tb.Pieces[m[0]]+" "+tb.Pieces[m[1]])
		}
		return
	}
	g.model = "llama"
	norm := string(tb.Normalizer) + string(tb.PreTokenizer)
	g.addSpacePrefix = strings.Contains(norm, `"Prepend"`) || strings.Contains(norm, `"Metaspace"`) && !strings.Contains(norm, `"never"`)
	g.scores = make([]float32, n)
	for id := range g.scores {
		if isBytePiece(g.tokens[id]) {
			g.types[id] = tokByte
		}
	}
	// A piece made by merges scores −(its lowest merge rank); pieces no
	// merge makes (single characters, added tokens) score 0, above every
	// merge, which llama.cpp's SentencePiece merging never compares.
	done := make([]bool, n)
	for rank, m := range tb.Merges {
		if merged := m[2]; !done[merged] {
			done[merged] = true
			g.scores[merged] = -float32(rank)
		}
	}
}
