package gguf

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/cflowfmt/tokmeta"
	"github.com/cflow-dev/cflow/tokenizer"
)

// The tokenizer.ggml keys llama.cpp reads (gguf-py constants.py Keys.Tokenizer).
const (
	keyTokModel    = "tokenizer.ggml.model"
	keyTokPre      = "tokenizer.ggml.pre"
	keyTokens      = "tokenizer.ggml.tokens"
	keyTokScores   = "tokenizer.ggml.scores"
	keyTokTypes    = "tokenizer.ggml.token_type"
	keyTokMerges   = "tokenizer.ggml.merges"
	keyTokBOS      = "tokenizer.ggml.bos_token_id"
	keyTokEOS      = "tokenizer.ggml.eos_token_id"
	keyTokUNK      = "tokenizer.ggml.unknown_token_id"
	keyTokEOT      = "tokenizer.ggml.eot_token_id"
	keyTokEOM      = "tokenizer.ggml.eom_token_id"
	keyTokAddBOS   = "tokenizer.ggml.add_bos_token"
	keyTokAddEOS   = "tokenizer.ggml.add_eos_token"
	keyTokAddSpace = "tokenizer.ggml.add_space_prefix"
	keyTokRemoveWS = "tokenizer.ggml.remove_extra_whitespaces"
	keyTokCharsmap = "tokenizer.ggml.precompiled_charsmap"
	keyChatTmpl    = "tokenizer.chat_template"
)

// ErrNoVocab means the file has no tokenizer.ggml.tokens: only token ids
// can be fed to a model converted from it.
var ErrNoVocab = errors.New("gguf: the file has no tokenizer (tokenizer.ggml.tokens)")

// llama.cpp's split regexes, as src/llama-vocab.cpp gives them per
// pre-tokenizer type (llm_tokenizer_bpe). Each list is applied in turn, a
// later regex splitting the pieces of the earlier ones, text no regex
// matches kept as pieces of its own: tokenizers' Split with "Isolated".
const (
	reGPT2   = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)`
	reLlama3 = `(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	reQwen2  = `(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	reQwen35 = `(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

// bpePre is one llama.cpp pre-tokenizer type: its regexes and whether a
// word that is itself a token skips the merges (ignore_merges).
type bpePre struct {
	regexes      []string
	ignoreMerges bool
}

// bpePres maps each tokenizer.ggml.pre name cflow takes to llama.cpp's
// pre-tokenizer for it; a name not here is refused by name.
var bpePres = map[string]bpePre{
	"default":          {regexes: []string{`[\p{P}\$\+<=>\^~\|]+`, reGPT2, `\p{N}+`, `[0-9][0-9][0-9]`}},
	"llama3":           {[]string{reLlama3}, true},
	"llama-v3":         {[]string{reLlama3}, true},
	"llama-bpe":        {[]string{reLlama3}, true},
	"falcon3":          {[]string{reLlama3}, true},
	"pixtral":          {[]string{reLlama3}, true},
	"smaug-bpe":        {regexes: []string{reLlama3}},
	"dbrx":             {regexes: []string{reLlama3}},
	"qwen2":            {regexes: []string{reQwen2}},
	"qwen35":           {regexes: []string{reQwen35}},
	"stablelm2":        {regexes: []string{reQwen2}},
	"megrez":           {regexes: []string{reQwen2}},
	"deepseek-r1-qwen": {regexes: []string{reQwen2}},
	"gpt-2":            {regexes: []string{reGPT2}},
	"phi-2":            {regexes: []string{reGPT2}},
	"mpt":              {regexes: []string{reGPT2}},
	"olmo":             {regexes: []string{reGPT2}},
	"starcoder":        {regexes: []string{`\p{N}`, reGPT2}},
	"refact":           {regexes: []string{`\p{N}`, reGPT2}},
	"command-r":        {regexes: []string{`\p{N}`, reGPT2}},
	"smollm":           {regexes: []string{`\p{N}`, reGPT2}},
	"falcon":           {regexes: []string{`[\p{P}\$\+<=>\^~\|` + "`" + `]+`, reGPT2, `[0-9][0-9][0-9]`}},
}

const (
	noTokenID  = -1
	newlineSet = `[^\n]+|[\n]+`
)

// ggufVocab is the tokenizer.ggml.* keys read and checked.
type ggufVocab struct {
	model, pre string
	tokens     []string
	scores     []float32
	types      []int64
	merges     []string
	bos, eos   int
	unk        int
	eog        []int
	addBOS     bool
	addEOS     bool
	addSpace   bool
	template   string
}

// TokenizerSource translates the file's tokenizer (tokenizer.ggml.*,
// tokenizer.chat_template) into the tokenizer.json, tokenizer_config.json
// and generation_config.json that cflow's tokenizer runs and the converter
// stores, so a GGUF's text tokenizes as llama.cpp tokenizes it: model gpt2
// (byte-level BPE with the named pre-tokenizer's split regexes), llama
// (SentencePiece: score-ranked merges, ▁ for spaces, byte fallback) and
// gemma4 (BPE on ▁-escaped UTF-8). Control and unknown tokens become
// special added tokens, user-defined ones added tokens matched in any text,
// as llama.cpp's tokenizer_st_partition does. ErrNoVocab when the file has
// no token list; any other model or pre-tokenizer is refused by name.
func (f *File) TokenizerSource() (*tokenizer.Source, error) {
	v, err := f.readVocab()
	if err != nil {
		return nil, err
	}
	var tj map[string]any
	switch v.model {
	case "gpt2":
		tj, err = v.gpt2JSON()
	case "llama":
		tj, err = v.spmJSON()
	case "gemma4":
		tj, err = v.gemma4JSON()
	default:
		return nil, fmt.Errorf("gguf: tokenizer model %q is not implemented (cflow reads gpt2, llama and gemma4)", v.model)
	}
	if err != nil {
		return nil, err
	}
	tj["added_tokens"] = v.addedTokens()
	js, err := json.Marshal(tj)
	if err != nil {
		return nil, err
	}
	cfg := map[string]any{"add_bos_token": v.addBOS, "add_eos_token": v.addEOS, "clean_up_tokenization_spaces": false}
	if v.bos >= 0 {
		cfg["bos_token"] = v.tokens[v.bos]
	}
	if v.eos >= 0 {
		cfg["eos_token"] = v.tokens[v.eos]
	}
	if v.template != "" {
		cfg["chat_template"] = v.template
	}
	cj, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	gj, err := json.Marshal(map[string]any{"eos_token_id": v.eog})
	if err != nil {
		return nil, err
	}
	return &tokenizer.Source{JSON: js, Config: cj, GenerationConfig: gj, Path: "tokenizer.ggml"}, nil
}

func (f *File) readVocab() (*ggufVocab, error) {
	kv := f.Lookup(keyTokens)
	if kv == nil {
		return nil, ErrNoVocab
	}
	v := &ggufVocab{}
	var err error
	if v.tokens, err = kv.Strings(); err != nil {
		return nil, err
	}
	n := len(v.tokens)
	if v.model, err = f.StringOr(keyTokModel, ""); err != nil {
		return nil, err
	}
	if v.pre, err = f.StringOr(keyTokPre, ""); err != nil {
		return nil, err
	}
	if kv := f.Lookup(keyTokScores); kv != nil {
		if v.scores, err = kv.Float32s(); err != nil {
			return nil, err
		}
		if len(v.scores) != n {
			return nil, &FormatError{kv.Off, fmt.Sprintf("%s has %d entries for %d tokens", keyTokScores, len(v.scores), n)}
		}
	}
	if kv := f.Lookup(keyTokTypes); kv != nil {
		if v.types, err = kv.Ints(); err != nil {
			return nil, err
		}
		if len(v.types) != n {
			return nil, &FormatError{kv.Off, fmt.Sprintf("%s has %d entries for %d tokens", keyTokTypes, len(v.types), n)}
		}
	} else {
		v.types = make([]int64, n)
		for i := range v.types {
			v.types[i] = tokNormal
		}
	}
	if kv := f.Lookup(keyTokMerges); kv != nil {
		if v.merges, err = kv.Strings(); err != nil {
			return nil, err
		}
	}
	id := func(key string) (int, error) {
		kv := f.Lookup(key)
		if kv == nil {
			return noTokenID, nil
		}
		x, err := kv.Int()
		if err != nil {
			return 0, err
		}
		if x < 0 || x >= int64(n) {
			return 0, &FormatError{kv.Off, fmt.Sprintf("%s %d is outside the %d tokens", key, x, n)}
		}
		return int(x), nil
	}
	if v.bos, err = id(keyTokBOS); err != nil {
		return nil, err
	}
	if v.eos, err = id(keyTokEOS); err != nil {
		return nil, err
	}
	if v.unk, err = id(keyTokUNK); err != nil {
		return nil, err
	}
	for _, k := range []string{keyTokEOS, keyTokEOT, keyTokEOM} {
		e, err := id(k)
		if err != nil {
			return nil, err
		}
		if e >= 0 {
			v.eog = append(v.eog, e)
		}
	}
	// llama.cpp's defaults per model (llama_vocab::impl::load): SPM adds
	// BOS and a space prefix, BPE neither unless the pre-tokenizer or the
	// keys say so.
	pre, _ := bpePres[v.pre]
	defBOS := v.model == "llama" || pre.ignoreMerges
	if v.addBOS, err = f.BoolOr(keyTokAddBOS, defBOS); err != nil {
		return nil, err
	}
	if v.addEOS, err = f.BoolOr(keyTokAddEOS, false); err != nil {
		return nil, err
	}
	if v.addSpace, err = f.BoolOr(keyTokAddSpace, v.model == "llama"); err != nil {
		return nil, err
	}
	if rm, err := f.BoolOr(keyTokRemoveWS, false); err != nil {
		return nil, err
	} else if rm {
		return nil, fmt.Errorf("gguf: %s = true is not implemented", keyTokRemoveWS)
	}
	if f.Lookup(keyTokCharsmap) != nil {
		return nil, fmt.Errorf("gguf: %s (a SentencePiece normalizer) is not implemented", keyTokCharsmap)
	}
	if v.template, err = f.StringOr(keyChatTmpl, ""); err != nil {
		return nil, err
	}
	return v, nil
}

// vocabMap is tokenizer.json's model.vocab: piece → id, the last id of a
// repeated piece winning as in llama.cpp's token_to_id.
func (v *ggufVocab) vocabMap() map[string]int {
	m := make(map[string]int, len(v.tokens))
	for i, t := range v.tokens {
		m[t] = i
	}
	return m
}

// splitMerges reads "left right" merges as llama.cpp does (the first
// space after the first byte separates them) and keeps those whose pieces
// and result are tokens.
func (v *ggufVocab) splitMerges(vm map[string]int) ([][2]string, error) {
	out := make([][2]string, 0, len(v.merges))
	for i, m := range v.merges {
		p := strings.IndexByte(m[min(1, len(m)):], ' ')
		if p < 0 {
			return nil, fmt.Errorf("gguf: %s[%d] %q has no space", keyTokMerges, i, m)
		}
		p += min(1, len(m))
		a, b := m[:p], m[p+1:]
		_, okA := vm[a]
		_, okB := vm[b]
		_, okM := vm[a+b]
		if okA && okB && okM {
			out = append(out, [2]string{a, b})
		}
	}
	return out, nil
}

func splitSeq(regexes []string) []any {
	var seq []any
	for _, re := range regexes {
		seq = append(seq, map[string]any{"type": "Split", "pattern": map[string]string{"Regex": re}, "behavior": "Isolated", "invert": false})
	}
	return seq
}

func (v *ggufVocab) gpt2JSON() (map[string]any, error) {
	pre, ok := bpePres[v.pre]
	if !ok {
		name := v.pre
		if name == "" {
			name = "(none)"
		}
		return nil, fmt.Errorf("gguf: tokenizer.ggml.pre %q is not implemented (cflow implements %s)", name, strings.Join(preNames(), ", "))
	}
	vm := v.vocabMap()
	merges, err := v.splitMerges(vm)
	if err != nil {
		return nil, err
	}
	seq := append(splitSeq(pre.regexes), map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false})
	return map[string]any{
		"normalizer":    nil,
		"pre_tokenizer": map[string]any{"type": "Sequence", "pretokenizers": seq},
		"decoder":       map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
		"model": map[string]any{"type": "BPE", "vocab": vm, "merges": merges, "ignore_merges": pre.ignoreMerges,
			"byte_fallback": false, "fuse_unk": false},
	}, nil
}

func preNames() []string {
	var names []string
	for k := range bpePres {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// spmJSON is SentencePiece as llama.cpp's llm_tokenizer_spm runs it: the
// adjacent pair whose concatenation is the highest-scoring token merges
// first. As BPE merges ranked by that score (transformers'
// SentencePieceExtractor) it is the same algorithm; unknown characters
// fall back to <0xXX> byte tokens.
func (v *ggufVocab) spmJSON() (map[string]any, error) {
	if v.scores == nil {
		return nil, fmt.Errorf("gguf: a llama (SentencePiece) tokenizer without %s", keyTokScores)
	}
	vm := v.vocabMap()
	type cand struct {
		l, r  string
		score float32
		id    int
		li    int
		ri    int
	}
	var cs []cand
	for id, p := range v.tokens {
		if vm[p] != id || v.types[id] == tokByte || v.types[id] == tokUnused {
			continue
		}
		for k := 1; k < len(p); k++ {
			if !utf8.RuneStart(p[k]) {
				continue
			}
			li, okL := vm[p[:k]]
			ri, okR := vm[p[k:]]
			if okL && okR {
				cs = append(cs, cand{p[:k], p[k:], v.scores[id], id, li, ri})
			}
		}
	}
	sort.SliceStable(cs, func(a, b int) bool {
		if cs[a].score != cs[b].score {
			return cs[a].score > cs[b].score
		}
		if cs[a].id != cs[b].id {
			return cs[a].id < cs[b].id
		}
		if cs[a].li != cs[b].li {
			return cs[a].li < cs[b].li
		}
		return cs[a].ri < cs[b].ri
	})
	merges := make([][2]string, len(cs))
	for i, c := range cs {
		merges[i] = [2]string{c.l, c.r}
	}
	var norm []any
	if v.addSpace {
		norm = append(norm, map[string]any{"type": "Prepend", "prepend": "▁"})
	}
	norm = append(norm, map[string]any{"type": "Replace", "pattern": map[string]string{"String": " "}, "content": "▁"})
	dec := []any{
		map[string]any{"type": "Replace", "pattern": map[string]string{"String": "▁"}, "content": " "},
		map[string]any{"type": "ByteFallback"},
		map[string]any{"type": "Fuse"},
	}
	if v.addSpace {
		dec = append(dec, map[string]any{"type": "Strip", "content": " ", "start": 1, "stop": 0})
	}
	m := map[string]any{"type": "BPE", "vocab": vm, "merges": merges, "byte_fallback": true, "fuse_unk": true}
	if v.unk >= 0 {
		m["unk_token"] = v.tokens[v.unk]
	}
	return map[string]any{
		"normalizer":    map[string]any{"type": "Sequence", "normalizers": norm},
		"pre_tokenizer": nil,
		"decoder":       map[string]any{"type": "Sequence", "decoders": dec},
		"model":         m,
	}, nil
}

// gemma4JSON is llama.cpp's gemma4 tokenizer: spaces become ▁, the text
// is cut at newline runs, and BPE merges run on raw UTF-8 with <0xXX>
// byte fallback.
func (v *ggufVocab) gemma4JSON() (map[string]any, error) {
	vm := v.vocabMap()
	merges, err := v.splitMerges(vm)
	if err != nil {
		return nil, err
	}
	m := map[string]any{"type": "BPE", "vocab": vm, "merges": merges, "byte_fallback": true, "fuse_unk": true}
	if v.unk >= 0 {
		m["unk_token"] = v.tokens[v.unk]
	}
	return map[string]any{
		"normalizer":    map[string]any{"type": "Replace", "pattern": map[string]string{"String": " "}, "content": "▁"},
		"pre_tokenizer": map[string]any{"type": "Sequence", "pretokenizers": splitSeq([]string{newlineSet})},
		"decoder": map[string]any{"type": "Sequence", "decoders": []any{
			map[string]any{"type": "Replace", "pattern": map[string]string{"String": "▁"}, "content": " "},
			map[string]any{"type": "ByteFallback"},
			map[string]any{"type": "Fuse"},
		}},
		"model": m,
	}, nil
}

// addedTokens are the tokens llama.cpp matches in text before the model
// sees it: control and unknown ones as special (skipped when special
// tokens are not parsed), user-defined ones always.
func (v *ggufVocab) addedTokens() []map[string]any {
	var out []map[string]any
	for id, t := range v.types {
		var special bool
		switch t {
		case tokControl, tokUnknown:
			special = true
		case tokUserDefined:
		default:
			continue
		}
		if v.tokens[id] == "" {
			continue
		}
		out = append(out, map[string]any{"id": id, "content": v.tokens[id], "special": special,
			"lstrip": false, "rstrip": false, "single_word": false, "normalized": false})
	}
	return out
}

// TokenizerMetadata stores the file's tokenizer in fresh .cflow metadata
// as the converter would (tokmeta.Write), so everything that
// reads a model file's tokenizer and chat template reads a GGUF's the same
// way; vocab is the token count.
func (f *File) TokenizerMetadata() (md *cflowfmt.Metadata, vocab int, err error) {
	src, err := f.TokenizerSource()
	if err != nil {
		return nil, 0, err
	}
	toks, _ := f.Lookup(keyTokens).Strings()
	md = cflowfmt.NewMetadata()
	if err := tokmeta.Write(md, src, len(toks)); err != nil {
		return nil, 0, fmt.Errorf("gguf: %w", err)
	}
	return md, len(toks), nil
}
