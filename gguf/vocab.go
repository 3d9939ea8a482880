package gguf

import (
	"errors"
	"strconv"

	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/tokenizer"
)

// llama.cpp token types (llama_token_type, llama-vocab.h).
const (
	tokNormal      = 1
	tokUnknown     = 2
	tokControl     = 3
	tokUserDefined = 4
	tokUnused      = 5
	tokByte        = 6
)

// TokenPiece is the text of placeholder token id: "[id]". Exports carry no
// real vocabulary (cflow files hold token ids, and stories260K ships without
// one), so token ids, not text, are what the two engines can compare.
// Pieces are user-defined tokens, which llama.cpp's tokenizer matches
// verbatim: with BOS added automatically, the prompt "[461][401]" is
// exactly the ids 1 461 401, and generated pieces print as "[id]", so
// llama.cpp's text tools read and write ids. BOS, EOS and <unk> keep their
// usual names; text that is not made of pieces has no byte tokens to fall
// back on, and llama.cpp refuses it.
func TokenPiece(id int) string { return "[" + strconv.Itoa(id) + "]" }

// placeholderVocab writes a SentencePiece-style ("llama") tokenizer of n
// placeholder tokens: bos and eos are control tokens "<s>" and "</s>", id 0
// (when free) is "<unk>", every other id is TokenPiece(id).
func placeholderVocab(l *kvList, n int, bos, eos uint32) {
	tokens := make([]string, n)
	scores := make([]float32, n)
	types := make([]int32, n)
	for i := range tokens {
		tokens[i], types[i] = TokenPiece(i), tokUserDefined
	}
	unk := -1
	if bos != 0 && eos != 0 && n > 0 {
		unk = 0
		tokens[0], types[0] = "<unk>", tokUnknown
	}
	if int(bos) < n {
		tokens[bos], types[bos] = "<s>", tokControl
	}
	if int(eos) < n && eos != bos {
		tokens[eos], types[eos] = "</s>", tokControl
	}
	l.str("tokenizer.ggml.model", "llama")
	l.strs("tokenizer.ggml.tokens", tokens)
	l.f32s("tokenizer.ggml.scores", scores)
	l.i32s("tokenizer.ggml.token_type", types)
	if int(bos) < n {
		l.u32("tokenizer.ggml.bos_token_id", bos)
	}
	if int(eos) < n {
		l.u32("tokenizer.ggml.eos_token_id", eos)
	}
	if unk == 0 {
		l.u32("tokenizer.ggml.unknown_token_id", 0)
	}
	l.boolean("tokenizer.ggml.add_bos_token", int(bos) < n)
	l.boolean("tokenizer.ggml.add_eos_token", false)
	l.boolean("tokenizer.ggml.add_space_prefix", false)
}

// writeVocab writes the file's real tokenizer when it has one llama.cpp can
// run (HF tokenizer.json BPE, llama2.c score table), otherwise the
// placeholder vocabulary of n "[id]" pieces (byte tokenizers, none).
func writeVocab(l *kvList, md *cflowfmt.Metadata, n int) error {
	g, err := vocabForExport(md, n)
	if errors.Is(err, tokenizer.ErrNoTokenizer) || err == nil && g == nil || md.String(cflowfmt.KeyTokenizerKind, "") == "byte" {
		placeholderVocab(l, n, md.U32(cflowfmt.KeyBOS, 1), md.U32(cflowfmt.KeyEOS, 2))
		return nil
	}
	if err != nil {
		return err
	}
	l.str("tokenizer.ggml.model", g.model)
	if g.pre != "" {
		l.str("tokenizer.ggml.pre", g.pre)
	}
	l.strs("tokenizer.ggml.tokens", g.tokens)
	if g.scores != nil {
		l.f32s("tokenizer.ggml.scores", g.scores)
	}
	l.i32s("tokenizer.ggml.token_type", g.types)
	if g.merges != nil {
		l.strs("tokenizer.ggml.merges", g.merges)
	}
	for _, id := range []struct {
		key string
		id  int
	}{{"tokenizer.ggml.bos_token_id", g.bos}, {"tokenizer.ggml.eos_token_id", g.eos}, {"tokenizer.ggml.unknown_token_id", g.unk}} {
		if id.id >= 0 && id.id < n {
			l.u32(id.key, uint32(id.id))
		}
	}
	for _, id := range g.endOfTurn {
		if id != g.eos && id >= 0 && id < n {
			l.u32("tokenizer.ggml.eot_token_id", uint32(id))
			break
		}
	}
	l.boolean("tokenizer.ggml.add_bos_token", g.addBOS)
	l.boolean("tokenizer.ggml.add_eos_token", false)
	if g.model == "llama" {
		l.boolean("tokenizer.ggml.add_space_prefix", g.addSpacePrefix)
	}
	if g.chatTemplate != "" {
		l.str("tokenizer.chat_template", g.chatTemplate)
	}
	return nil
}
