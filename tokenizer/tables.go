package tokenizer

import (
	"encoding/json"
	"sort"
)

// Tables is an HF tokenizer's contents as plain data, so a writer of
// another storage format (gguf's export, which writes llama.cpp's
// tokenizer.ggml.* keys) needs none of this package's internals.
type Tables struct {
	// Pieces are by id; "" where an id has no piece.
	Pieces []string
	// Merges are in rank order: the left and right ids and the id they
	// merge into.
	Merges [][3]int
	// Added are tokenizer.json's added tokens (matched before the model).
	Added []AddedToken
	// Unk is the unknown token's id, −1 when none.
	Unk int
	// ByteLevel says pieces are GPT-2 byte-level text (Llama 3, Qwen);
	// otherwise they are SentencePiece-style (▁, <0xXX> byte fallback).
	ByteLevel bool
	// Normalizer and PreTokenizer are tokenizer.json's sections, for a
	// writer that must name the split they implement.
	Normalizer, PreTokenizer json.RawMessage
}

// AddedToken is one added token: its id, text and whether it is special
// (a control token) rather than user-defined.
type AddedToken struct {
	ID      int
	Content string
	Special bool
}

// Tables returns t's contents (see Tables).
func (t *HF) Tables() Tables {
	n := t.v.size()
	tb := Tables{Pieces: make([]string, n), Unk: t.pipe.Unk, ByteLevel: t.byteLevel,
		Normalizer: t.pipe.Normalizer, PreTokenizer: t.pipe.PreTokenizer}
	for id := range tb.Pieces {
		tb.Pieces[id] = t.v.piece(id)
	}
	for _, a := range t.pipe.AddedTokens {
		tb.Added = append(tb.Added, AddedToken{ID: a.ID, Content: a.Content, Special: a.Special})
	}
	m := t.model.m
	order := make([]int, len(m.keys))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return m.vals[order[a]]>>32 < m.vals[order[b]]>>32 })
	tb.Merges = make([][3]int, len(order))
	for r, i := range order {
		k := m.keys[i]
		tb.Merges[r] = [3]int{int(k >> 32), int(uint32(k)), int(uint32(m.vals[i]))}
	}
	return tb
}

// Pieces returns the score table's pieces by id (llama2.c writes " "
// where SentencePiece has ▁).
func (t *Llama2c) Pieces() []string { return t.pieces }

// Scores returns the score table's merge scores by id.
func (t *Llama2c) Scores() []float32 { return t.scores }
