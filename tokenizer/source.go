package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/cflow-dev/cflow/internal/fileio"
)

// Source is a tokenizer as the converter finds it: tokenizer.json with
// tokenizer_config.json and generation_config.json beside it, or a
// llama2.c score table (tokenizer.bin, tok512.bin).
type Source struct {
	JSON             []byte // tokenizer.json
	Config           []byte // tokenizer_config.json, nil when absent
	GenerationConfig []byte // generation_config.json, nil when absent
	Llama2c          []byte // llama2.c score table
	Path             string // for messages
}

// ReadDir reads the tokenizer files of an HF checkpoint directory; nil
// when it has no tokenizer.json.
func ReadDir(dir string) (*Source, error) {
	p := filepath.Join(dir, "tokenizer.json")
	b, err := readBounded(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	s := &Source{JSON: b, Path: p}
	if s.Config, err = readOptional(filepath.Join(dir, "tokenizer_config.json")); err != nil {
		return nil, err
	}
	if s.GenerationConfig, err = readOptional(filepath.Join(dir, "generation_config.json")); err != nil {
		return nil, err
	}
	return s, nil
}

// ReadFile reads a tokenizer named on the command line: a tokenizer.json
// (its directory's tokenizer_config.json and generation_config.json come
// along), or a llama2.c score table (anything else that is not JSON).
func ReadFile(path string) (*Source, error) {
	b, err := readBounded(path)
	if err != nil {
		return nil, err
	}
	if trimmed := strings.TrimSpace(string(b[:min(len(b), 64)])); strings.HasPrefix(trimmed, "{") {
		s, err := ReadDir(filepath.Dir(path))
		if err != nil {
			return nil, err
		}
		if s == nil || filepath.Base(path) != "tokenizer.json" {
			s = &Source{}
			if s.Config, err = readOptional(filepath.Join(filepath.Dir(path), "tokenizer_config.json")); err != nil {
				return nil, err
			}
		}
		s.JSON, s.Path = b, path
		return s, nil
	}
	return &Source{Llama2c: b, Path: path}, nil
}

// readBounded reads a tokenizer file whole, at most
// fileio.MaxArgFileBytes (the largest real tokenizer.json is tens of
// MB): a device such as /dev/zero named by --tokenizer is an error at once
// instead of a read that grows until the kernel kills the process.
func readBounded(p string) ([]byte, error) {
	return fileio.ReadFileLimit(p, fileio.MaxArgFileBytes)
}

func readOptional(p string) ([]byte, error) {
	b, err := readBounded(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return b, err
}

// endOfTurnTokens are the texts of tokens that end an assistant turn in
// the chat formats cflow knows (Llama 3, ChatML/Qwen, Gemma, Llama 2,
// Phi); those present as special tokens join the stop ids.
var endOfTurnTokens = []string{"<|eot_id|>", "<|eom_id|>", "<|end_of_text|>", "<|im_end|>", "<|endoftext|>", "<end_of_turn>", "<eos>", "</s>", "<|end|>"}

// Prepare compiles src into what a model file stores about its tokenizer
// (Stored; the format's writer maps it onto its keys): the kind and data,
// the BOS/EOS ids, whether prompts start with BOS, the stop ids, the BOS/EOS
// texts and the chat template. vocab is the model's vocabulary, and a
// tokenizer with more ids is refused; modelEOS is the EOS id the model's
// config gave (-1: none), the first stop id.
func Prepare(src *Source, vocab, modelEOS int) (*Stored, error) {
	yes := true
	if src.Llama2c != nil {
		t, err := NewLlama2c(src.Llama2c, vocab, -1, -1)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", src.Path, err)
		}
		if t.size != len(src.Llama2c) {
			return nil, fmt.Errorf("%s: score table has %d bytes after the model's %d pieces (a table for another vocabulary?)", src.Path, len(src.Llama2c)-t.size, vocab)
		}
		return &Stored{Kind: "llama2c", Data: src.Llama2c, BOS: t.BOS(), EOS: t.EOS(), AddBOS: &yes, EndOfTurn: []int{t.EOS()}}, nil
	}
	flat, err := Compile(src.JSON, src.Config)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", src.Path, err)
	}
	t, err := OpenFlat(flat, -1, -1)
	if err != nil {
		return nil, err
	}
	if err := t.fitTo(vocab); err != nil {
		return nil, fmt.Errorf("%s: %w", src.Path, err)
	}
	cfg := &Config{}
	if src.Config != nil {
		if cfg, err = ParseConfig(src.Config); err != nil {
			return nil, err
		}
	}
	addBOS := len(t.pipe.Prefix) > 0
	st := &Stored{Kind: KindHF, Data: flat, BOS: -1, EOS: -1, AddBOS: &addBOS, ChatTemplate: cfg.ChatTemplate}
	// Stop ids: config.json's EOS, tokenizer_config.json's,
	// generation_config.json's eos_token_id (one or a list), and the known
	// end-of-turn tokens the vocabulary has.
	seen := map[int]bool{}
	add := func(id int) {
		if id >= 0 && id < min(t.VocabSize(), vocab) && !seen[id] {
			seen[id] = true
			st.EndOfTurn = append(st.EndOfTurn, id)
		}
	}
	add(modelEOS)
	// tokenizer_config.json names the tokenizer's own BOS/EOS; they win
	// over config.json's ids (equal in published checkpoints; a tokenizer
	// attached with --tokenizer brings its own).
	if id := t.TokenID(cfg.BOSToken); cfg.BOSToken != "" && id >= 0 {
		st.BOS, st.BOSToken = id, cfg.BOSToken
	} else if len(t.pipe.Prefix) > 0 {
		st.BOS = t.pipe.Prefix[0]
	}
	if id := t.TokenID(cfg.EOSToken); cfg.EOSToken != "" && id >= 0 {
		st.EOS, st.EOSToken = id, cfg.EOSToken
		add(id)
	}
	if src.GenerationConfig != nil {
		var g struct {
			EOS json.RawMessage `json:"eos_token_id"`
		}
		if err := json.Unmarshal(src.GenerationConfig, &g); err != nil {
			return nil, fmt.Errorf("generation_config.json: %w", err)
		}
		var one int
		var many []int
		if json.Unmarshal(g.EOS, &one) == nil {
			add(one)
		} else if json.Unmarshal(g.EOS, &many) == nil {
			for _, id := range many {
				add(id)
			}
		}
	}
	for _, s := range endOfTurnTokens {
		if id := t.TokenID(s); id >= 0 && t.IsSpecial(id) {
			add(id)
		}
	}
	return st, nil
}
