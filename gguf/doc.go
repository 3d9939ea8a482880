// Package gguf writes GGUF v3 files (llama.cpp's model format) from a
// *cflowfmt.Model, so llama.cpp can run exactly the weights cflow runs and
// the two engines can be compared on one model. Only what that comparison
// needs is here: the llama architecture (dense or Mixtral-style MoE), the
// ggml types F32, Q4_0 and Q8_0, and the file's tokenizer (HF tokenizer.json
// BPE as llama.cpp's gpt2 or llama vocabulary, llama2.c score tables; a
// placeholder of "[id]" pieces for files with none; vocab.go).
//
// Q4_0 and Q8_0 blocks are byte-identical in both formats (an f16 scale then
// 16 nibble bytes, low nibble element j, high nibble element j+16; or 32
// int8), so quantized tensors are copied block by block, never requantized.
// The format's byte layout is documented in llama.cpp's ggml/include/gguf.h.
package gguf
