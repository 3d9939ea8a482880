// Package tokmeta maps a model's tokenizer onto the metadata keys of the
// cflow formats (.cflow and .vflow share the section) and back: Put is
// what the converter and GGUF import write, Load what every reader runs.
// It sits on the format side so that tokenizer knows no storage format
// and cflowfmt does not depend on the tokenizer.
package tokmeta

import (
	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/tokenizer"
)

const noID = ^uint32(0)

// Write compiles src (tokenizer.Prepare) and stores it in md: vocab is the
// model's vocabulary, and the EOS id md already holds (the model config's)
// is the first stop id.
func Write(md *cflowfmt.Metadata, src *tokenizer.Source, vocab int) error {
	modelEOS := -1
	if v := md.U32(cflowfmt.KeyEOS, noID); v != noID {
		modelEOS = int(v)
	}
	s, err := tokenizer.Prepare(src, vocab, modelEOS)
	if err != nil {
		return err
	}
	Put(md, s)
	return nil
}

// Put stores s in md. A BOS or EOS named by its text (BOSToken, EOSToken)
// replaces the id md holds; an unnamed one only fills in an absent key.
func Put(md *cflowfmt.Metadata, s *tokenizer.Stored) {
	md.SetString(cflowfmt.KeyTokenizerKind, s.Kind)
	md.SetBytes(cflowfmt.KeyTokenizerData, s.Data)
	special := func(key, textKey string, id int, text string) {
		_, present := md.Type(key)
		switch {
		case id < 0:
		case text != "":
			md.SetU32(key, uint32(id))
			md.SetString(textKey, text)
		case !present:
			md.SetU32(key, uint32(id))
		}
	}
	special(cflowfmt.KeyBOS, cflowfmt.KeyBOSToken, s.BOS, s.BOSToken)
	special(cflowfmt.KeyEOS, cflowfmt.KeyEOSToken, s.EOS, s.EOSToken)
	if s.AddBOS != nil {
		md.SetU32(cflowfmt.KeyAddBOS, b2u(*s.AddBOS))
	}
	if s.ChatTemplate != "" {
		md.SetString(cflowfmt.KeyChatTemplate, s.ChatTemplate)
	}
	ids := make([]uint32, len(s.EndOfTurn))
	for i, id := range s.EndOfTurn {
		ids[i] = uint32(id)
	}
	md.SetU32s(cflowfmt.KeyEndOfTurn, ids)
}

// Stored reads the tokenizer entries of md (Kind "" when the file has
// none). Ids at or past 2³² − 1 are absent.
func Stored(md *cflowfmt.Metadata) *tokenizer.Stored {
	id := func(key string) int {
		if v := md.U32(key, noID); v != noID {
			return int(v)
		}
		return -1
	}
	s := &tokenizer.Stored{
		Kind:         md.String(cflowfmt.KeyTokenizerKind, ""),
		Data:         md.Bytes(cflowfmt.KeyTokenizerData),
		BOS:          id(cflowfmt.KeyBOS),
		EOS:          id(cflowfmt.KeyEOS),
		BOSToken:     md.String(cflowfmt.KeyBOSToken, ""),
		EOSToken:     md.String(cflowfmt.KeyEOSToken, ""),
		ChatTemplate: md.String(cflowfmt.KeyChatTemplate, ""),
	}
	if _, ok := md.Type(cflowfmt.KeyAddBOS); ok {
		b := md.U32(cflowfmt.KeyAddBOS, 0) != 0
		s.AddBOS = &b
	}
	for _, v := range md.U32s(cflowfmt.KeyEndOfTurn) {
		s.EndOfTurn = append(s.EndOfTurn, int(v))
	}
	return s
}

// Load builds the file's tokenizer (tokenizer.ErrNoTokenizer when it has
// none). vocab is the model's vocabulary size; ids the tokenizer produces
// must fit it.
func Load(md *cflowfmt.Metadata, vocab int) (tokenizer.Tokenizer, error) {
	return tokenizer.Load(Stored(md), vocab)
}

func b2u(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}
