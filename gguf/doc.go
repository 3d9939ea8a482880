// Package gguf reads and writes GGUF (llama.cpp's model format).
//
// The reader (Open, Parse, NewFile; reader.go, cursor.go, value.go) takes
// v2 and v3 files as llama.cpp's ggml/src/gguf.cpp does: every count,
// length, dimension and offset is checked against the file's size before it
// is used, every metadata value keeps its type (typed accessors refuse a
// value of another type by key), general.alignment is honoured, and a
// malformed, truncated or hostile file is a *FormatError naming the offset,
// never a panic. It is what import (convert, the tokenizer from a GGUF)
// builds on.
//
// A GGUF's tokenizer (vocab_import.go) is translated into the
// tokenizer.json, tokenizer_config.json and generation_config.json cflow's
// tokenizer runs, reproducing llama.cpp's tokenizer (src/llama-vocab.cpp):
// its pre-tokenizer regexes by tokenizer.ggml.pre name, SentencePiece as
// score-ranked merges, token types as added tokens. llama.cpp's own test
// vectors (models/ggml-vocab-*.gguf with .inp/.out) hold it exact.
//
// The writer exports a *cflowfmt.Model as GGUF v3, so llama.cpp can run
// exactly the weights cflow runs and the two engines can be compared on one
// model: the llama.cpp architecture of each family (arch.go), the ggml
// types F32, Q4_0 and Q8_0, and the file's tokenizer (HF tokenizer.json BPE
// as llama.cpp's gpt2 or llama vocabulary, llama2.c score tables; a
// placeholder of "[id]" pieces for files with none; vocab.go).
//
// Q4_0 and Q8_0 blocks are byte-identical in both formats (an f16 scale then
// 16 nibble bytes, low nibble element j, high nibble element j+16; or 32
// int8), so quantized tensors are copied block by block, never requantized.
// The format's byte layout is documented in llama.cpp's ggml/include/gguf.h.
package gguf
