package gguf_test

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/cflow-dev/cflow/cflowfmt/tokmeta"
	"github.com/cflow-dev/cflow/gguf"
	"github.com/cflow-dev/cflow/tokenizer"
)

// byteLevelTokenizer is a small GPT-2-style tokenizer.json: the 256 byte
// runes as ids 0–255, merges "h e" (256) and "he llo"… and two special
// tokens at 298 and 299.
func byteLevelTokenizer() []byte {
	var br [256]rune
	n := 0
	for b := 0; b < 256; b++ {
		if b >= '!' && b <= '~' || b >= 0xA1 && b <= 0xAC || b >= 0xAE {
			br[b] = rune(b)
		} else {
			br[b] = rune(256 + n)
			n++
		}
	}
	vocab := map[string]int{}
	for b := 0; b < 256; b++ {
		vocab[string(br[b])] = b
	}
	merges := []string{"h e", "l l", "he ll", "Ġ w"}
	for i, m := range merges {
		vocab[strings.ReplaceAll(m, " ", "")] = 256 + i
	}
	j, _ := json.Marshal(map[string]any{
		"model": map[string]any{"type": "BPE", "vocab": vocab, "merges": merges},
		"added_tokens": []map[string]any{{"id": 298, "content": "<|im_end|>", "special": true},
			{"id": 299, "content": "<tool>", "special": false}},
		"pre_tokenizer": map[string]any{"type": "ByteLevel", "add_prefix_space": false},
		"decoder":       map[string]any{"type": "ByteLevel"},
	})
	return j
}

// TestRealVocabGPT2: a file with an HF byte-level tokenizer exports it as
// llama.cpp's gpt2 vocabulary: the pieces by id, merges in rank order,
// control / user-defined types for the added tokens, unused padding ids,
// the stop token as EOS/EOT and the chat template.
func TestRealVocabGPT2(t *testing.T) {
	g := dense
	g.vocab = 302
	f := build(t, g)
	cfg := []byte(`{"eos_token": "<|im_end|>", "add_bos_token": false, "chat_template": "{{ messages }}"}`)
	if err := tokmeta.Write(f.m.Meta, &tokenizer.Source{JSON: byteLevelTokenizer(), Config: cfg, Path: "t"}, 302); err != nil {
		t.Fatal(err)
	}
	x := export(t, f, gguf.Options{})
	if x.kv["tokenizer.ggml.model"].value != "gpt2" || x.kv["tokenizer.ggml.pre"].value != "default" {
		t.Fatalf("model %v pre %v", x.kv["tokenizer.ggml.model"], x.kv["tokenizer.ggml.pre"])
	}
	toks := x.kv["tokenizer.ggml.tokens"].value.([]any)
	types := x.kv["tokenizer.ggml.token_type"].value.([]any)
	merges := x.kv["tokenizer.ggml.merges"].value.([]any)
	if len(toks) != 302 || toks['h'] != "h" || toks[' '] != "Ġ" || toks[258] != "hell" || toks[298] != "<|im_end|>" || toks[300] != "[PAD300]" {
		t.Fatalf("tokens: %d, %v %v %v %v", len(toks), toks['h'], toks[' '], toks[258], toks[300])
	}
	if types[0] != int32(1) || types[298] != int32(3) || types[299] != int32(4) || types[301] != int32(5) {
		t.Fatalf("types %v %v %v %v", types[0], types[298], types[299], types[301])
	}
	if fmt.Sprint(merges) != "[h e l l he ll Ġ w]" {
		t.Fatalf("merges %v", merges)
	}
	if kvU32(t, x, "tokenizer.ggml.eos_token_id") != 298 || x.kv["tokenizer.chat_template"].value != "{{ messages }}" || x.kv["tokenizer.ggml.add_bos_token"].value != false {
		t.Fatalf("eos/template/add_bos: %v %v %v", x.kv["tokenizer.ggml.eos_token_id"], x.kv["tokenizer.chat_template"], x.kv["tokenizer.ggml.add_bos_token"])
	}
	if _, ok := x.kv["tokenizer.ggml.scores"]; ok {
		t.Fatal("gpt2 vocabulary with scores")
	}
}

// TestRealVocabLlama2c: a llama2.c score table exports as a llama
// (SentencePiece) vocabulary: ▁ for spaces, its scores, byte and control
// types, add_space_prefix.
func TestRealVocabLlama2c(t *testing.T) {
	pieces := []string{"<unk>", "<s>", "</s>"}
	for b := 0; b < 256; b++ {
		pieces = append(pieces, fmt.Sprintf("<0x%02X>", b))
	}
	pieces = append(pieces, " ", "a", " a")
	table := binary.LittleEndian.AppendUint32(nil, 8)
	for i, p := range pieces {
		table = binary.LittleEndian.AppendUint32(table, math.Float32bits(float32(i)/2))
		table = binary.LittleEndian.AppendUint32(table, uint32(len(p)))
		table = append(table, p...)
	}
	g := dense
	g.vocab = len(pieces)
	f := build(t, g)
	if err := tokmeta.Write(f.m.Meta, &tokenizer.Source{Llama2c: table, Path: "t"}, len(pieces)); err != nil {
		t.Fatal(err)
	}
	x := export(t, f, gguf.Options{})
	toks := x.kv["tokenizer.ggml.tokens"].value.([]any)
	types := x.kv["tokenizer.ggml.token_type"].value.([]any)
	scores := x.kv["tokenizer.ggml.scores"].value.([]any)
	last := len(pieces) - 1
	if x.kv["tokenizer.ggml.model"].value != "llama" || toks[last] != "▁a" || toks[259] != "▁" || scores[last] != float32(last)/2 ||
		types[0] != int32(2) || types[1] != int32(3) || types[3] != int32(6) || types[last] != int32(1) || x.kv["tokenizer.ggml.add_space_prefix"].value != true {
		t.Fatalf("llama2c vocabulary: %v %v %v %v %v", x.kv["tokenizer.ggml.model"], toks[last], scores[last], types[:4], types[last])
	}
}
