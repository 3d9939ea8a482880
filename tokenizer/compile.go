package tokenizer

import (
	"encoding/json"
	"fmt"
	"strings"
)

// KindHF is tokenizer.kind for a tokenizer.json compiled to the flat form
// (tokenizer.data holds Flat bytes). KindHFJSON is the older kind whose
// data is tokenizer.json verbatim; it still opens, only slower.
const (
	KindHF     = "hf"
	KindHFJSON = "hf-bpe"
)

type tokenizerJSON struct {
	Normalizer    json.RawMessage `json:"normalizer"`
	PreTokenizer  json.RawMessage `json:"pre_tokenizer"`
	PostProcessor json.RawMessage `json:"post_processor"`
	Decoder       json.RawMessage `json:"decoder"`
	AddedTokens   []addedToken    `json:"added_tokens"`
	Model         struct {
		Type                    string          `json:"type"`
		Vocab                   json.RawMessage `json:"vocab"`
		Merges                  json.RawMessage `json:"merges"`
		UnkToken                *string         `json:"unk_token"`
		FuseUnk                 bool            `json:"fuse_unk"`
		ByteFallback            bool            `json:"byte_fallback"`
		IgnoreMerges            bool            `json:"ignore_merges"`
		Dropout                 *float64        `json:"dropout"`
		ContinuingSubwordPrefix *string         `json:"continuing_subword_prefix"`
		EndOfWordSuffix         *string         `json:"end_of_word_suffix"`
	} `json:"model"`
}

// parsed is a tokenizer.json read into the runtime's parts.
type parsed struct {
	pipe   pipeline
	pieces []string
	v      *vocab
	m      *merges
}

// parseTokenizerJSON reads tokenizer.json. cfg (tokenizer_config.json, may
// be nil) overrides the post-processor's BOS/EOS with add_bos_token/
// add_eos_token, as transformers' Llama and Gemma tokenizers do.
func parseTokenizerJSON(data []byte, cfg *Config) (*parsed, error) {
	var j tokenizerJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return nil, fmt.Errorf("tokenizer.json: %w", err)
	}
	switch j.Model.Type {
	case "BPE", "":
	case "Unigram", "WordPiece", "WordLevel":
		return nil, fmt.Errorf("tokenizer.json: model type %s is not implemented (cflow implements BPE: Llama, Mistral, Qwen, Gemma 3)", j.Model.Type)
	default:
		return nil, fmt.Errorf("tokenizer.json: unknown model type %q", j.Model.Type)
	}
	if j.Model.Dropout != nil && *j.Model.Dropout > 0 {
		return nil, fmt.Errorf("tokenizer.json: BPE dropout %g is not implemented", *j.Model.Dropout)
	}
	if p := j.Model.ContinuingSubwordPrefix; p != nil && *p != "" {
		return nil, fmt.Errorf("tokenizer.json: continuing_subword_prefix %q is not implemented", *p)
	}
	if p := j.Model.EndOfWordSuffix; p != nil && *p != "" {
		return nil, fmt.Errorf("tokenizer.json: end_of_word_suffix %q is not implemented", *p)
	}
	var vocabMap map[string]int
	if err := json.Unmarshal(j.Model.Vocab, &vocabMap); err != nil {
		return nil, fmt.Errorf("tokenizer.json: model.vocab: %w", err)
	}
	n := 0
	for _, id := range vocabMap {
		if id < 0 {
			return nil, fmt.Errorf("tokenizer.json: negative id %d", id)
		}
		n = max(n, id+1)
	}
	for _, a := range j.AddedTokens {
		if a.ID < 0 {
			return nil, fmt.Errorf("tokenizer.json: added token %q has negative id", a.Content)
		}
		n = max(n, a.ID+1)
	}
	if n > 1<<24 {
		return nil, fmt.Errorf("tokenizer.json: vocabulary of %d ids", n)
	}
	pieces := make([]string, n)
	for p, id := range vocabMap {
		pieces[id] = p
	}
	for _, a := range j.AddedTokens {
		if pieces[a.ID] == "" {
			pieces[a.ID] = a.Content
		}
	}
	p := &parsed{pieces: pieces, v: newVocab(pieces)}
	pairs, err := parseMerges(j.Model.Merges)
	if err != nil {
		return nil, err
	}
	keys := make([]uint64, 0, len(pairs))
	vals := make([]uint64, 0, len(pairs))
	for rank, pr := range pairs {
		a, b, m := vocabMap[pr[0]], vocabMap[pr[1]], -1
		if id, ok := vocabMap[pr[0]+pr[1]]; ok {
			m = id
		}
		_, okA := vocabMap[pr[0]]
		_, okB := vocabMap[pr[1]]
		if !okA || !okB || m < 0 {
			return nil, fmt.Errorf("tokenizer.json: merge %d (%q %q) names a piece outside the vocabulary", rank, pr[0], pr[1])
		}
		keys = append(keys, pairKey(a, b))
		vals = append(vals, uint64(rank)<<32|uint64(m))
	}
	p.m = newMerges(keys, vals)
	p.pipe = pipeline{
		Normalizer: j.Normalizer, PreTokenizer: j.PreTokenizer, Decoder: j.Decoder,
		AddedTokens: j.AddedTokens, Unk: -1,
		FuseUnk: j.Model.FuseUnk, ByteFallback: j.Model.ByteFallback, IgnoreMerges: j.Model.IgnoreMerges,
	}
	if u := j.Model.UnkToken; u != nil {
		if id, ok := vocabMap[*u]; ok {
			p.pipe.Unk = id
		}
	}
	if p.pipe.Prefix, p.pipe.Suffix, err = parsePostProcessor(j.PostProcessor); err != nil {
		return nil, err
	}
	if cfg != nil {
		p.pipe.CleanUpSpaces = cfg.CleanUpSpaces
		if cfg.AddBOS != nil {
			p.pipe.Prefix = nil
			if id := p.v.find(cfg.BOSToken); *cfg.AddBOS && cfg.BOSToken != "" && id >= 0 {
				p.pipe.Prefix = []int{id}
			}
		}
		if cfg.AddEOS != nil {
			p.pipe.Suffix = nil
			if id := p.v.find(cfg.EOSToken); *cfg.AddEOS && cfg.EOSToken != "" && id >= 0 {
				p.pipe.Suffix = []int{id}
			}
		}
	}
	return p, nil
}

// parseMerges reads merges as "a b" strings or [a, b] pairs (both forms
// are in published files).
func parseMerges(raw json.RawMessage) ([][2]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var strs []string
	if err := json.Unmarshal(raw, &strs); err == nil {
		pairs := make([][2]string, len(strs))
		for i, s := range strs {
			a, b, ok := strings.Cut(s, " ")
			if !ok {
				return nil, fmt.Errorf("tokenizer.json: merge %d %q has no space", i, s)
			}
			pairs[i] = [2]string{a, b}
		}
		return pairs, nil
	}
	var pairs [][2]string
	if err := json.Unmarshal(raw, &pairs); err != nil {
		return nil, fmt.Errorf("tokenizer.json: model.merges: %w", err)
	}
	return pairs, nil
}

type postJSON struct {
	Type       string            `json:"type"`
	Processors []json.RawMessage `json:"processors"`
	Single     []struct {
		SpecialToken *struct {
			ID string `json:"id"`
		} `json:"SpecialToken"`
		Sequence *struct {
			ID string `json:"id"`
		} `json:"Sequence"`
	} `json:"single"`
	SpecialTokens map[string]struct {
		IDs []int `json:"ids"`
	} `json:"special_tokens"`
}

// parsePostProcessor returns the ids a single sequence gets before and
// after it.
func parsePostProcessor(raw json.RawMessage) (prefix, suffix []int, err error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil, nil
	}
	var j postJSON
	if err := json.Unmarshal(raw, &j); err != nil {
		return nil, nil, fmt.Errorf("post_processor: %w", err)
	}
	switch j.Type {
	case "ByteLevel":
		return nil, nil, nil // offsets only
	case "Sequence":
		for _, r := range j.Processors {
			p, s, err := parsePostProcessor(r)
			if err != nil {
				return nil, nil, err
			}
			prefix, suffix = append(prefix, p...), append(suffix, s...)
		}
		return prefix, suffix, nil
	case "TemplateProcessing":
		seen := false
		for _, it := range j.Single {
			switch {
			case it.Sequence != nil:
				seen = true
			case it.SpecialToken != nil:
				st, ok := j.SpecialTokens[it.SpecialToken.ID]
				if !ok {
					return nil, nil, fmt.Errorf("post_processor: template names special token %q it does not define", it.SpecialToken.ID)
				}
				if seen {
					suffix = append(suffix, st.IDs...)
				} else {
					prefix = append(prefix, st.IDs...)
				}
			}
		}
		return prefix, suffix, nil
	}
	return nil, nil, fmt.Errorf("post_processor %q is not implemented (cflow implements TemplateProcessing, ByteLevel, Sequence)", j.Type)
}
