package tokenizer

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
)

// preTokenizer cuts normalized text into the words the model encodes one
// by one. atStart says the first piece begins at the start of the input
// (Metaspace's "first" prepend scheme depends on it).
type preTokenizer func(pieces []string, atStart bool) []string

type preTokenizerJSON struct {
	Type           string            `json:"type"`
	Pretokenizers  []json.RawMessage `json:"pretokenizers"`
	Pattern        json.RawMessage   `json:"pattern"`
	Behavior       string            `json:"behavior"`
	Invert         bool              `json:"invert"`
	AddPrefixSpace *bool             `json:"add_prefix_space"`
	UseRegex       *bool             `json:"use_regex"`
	Replacement    string            `json:"replacement"`
	PrependScheme  string            `json:"prepend_scheme"`
	Split          *bool             `json:"split"`
	Individual     bool              `json:"individual_digits"`
}

// gpt2Pattern is GPT-2's split, which ByteLevel applies when use_regex is
// set.
const gpt2Pattern = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`

// parsePreTokenizer builds the pre-tokenizer; null gives nil (the whole
// segment is one word). byteLevel reports whether a ByteLevel step maps
// bytes to runes (the model then looks up byte runes).
func parsePreTokenizer(raw json.RawMessage) (p preTokenizer, byteLevel bool, err error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, false, nil
	}
	var j preTokenizerJSON
	if err := json.Unmarshal(raw, &j); err != nil {
		return nil, false, fmt.Errorf("pre_tokenizer: %w", err)
	}
	each := func(f func(string, bool) []string) preTokenizer {
		return func(pieces []string, atStart bool) []string {
			out := pieces[:0:0]
			for i, s := range pieces {
				out = append(out, f(s, atStart && i == 0)...)
			}
			return out
		}
	}
	switch j.Type {
	case "Sequence":
		var seq []preTokenizer
		for _, r := range j.Pretokenizers {
			p, bl, err := parsePreTokenizer(r)
			if err != nil {
				return nil, false, err
			}
			byteLevel = byteLevel || bl
			if p != nil {
				seq = append(seq, p)
			}
		}
		return func(pieces []string, atStart bool) []string {
			for _, p := range seq {
				pieces = p(pieces, atStart)
			}
			return pieces
		}, byteLevel, nil
	case "Split":
		pat, err := parsePattern(j.Pattern)
		if err != nil {
			return nil, false, fmt.Errorf("pre_tokenizer Split: %w", err)
		}
		b, err := parseBehavior(j.Behavior)
		if err != nil {
			return nil, false, fmt.Errorf("pre_tokenizer Split: %w", err)
		}
		return each(func(s string, _ bool) []string { return splitBy(s, pat.find(s), b, j.Invert) }), false, nil
	case "ByteLevel":
		prefix := j.AddPrefixSpace != nil && *j.AddPrefixSpace
		var re *pattern
		if j.UseRegex == nil || *j.UseRegex {
			if re, err = compileRegex(gpt2Pattern); err != nil {
				return nil, false, err
			}
		}
		return each(func(s string, _ bool) []string {
			if prefix && !strings.HasPrefix(s, " ") {
				s = " " + s
			}
			parts := []string{s}
			if re != nil {
				parts = splitBy(s, re.find(s), splitIsolated, false)
			}
			for i, p := range parts {
				parts[i] = byteLevelEncode(p)
			}
			return parts
		}), true, nil
	case "Metaspace":
		repl := j.Replacement
		if repl == "" {
			repl = "▁"
		}
		scheme := j.PrependScheme
		if scheme == "" {
			scheme = "always"
			if j.AddPrefixSpace != nil && !*j.AddPrefixSpace {
				scheme = "never"
			}
		}
		if scheme != "always" && scheme != "first" && scheme != "never" {
			return nil, false, fmt.Errorf("pre_tokenizer Metaspace: prepend_scheme %q", scheme)
		}
		split := j.Split == nil || *j.Split
		rpat := &pattern{lit: repl}
		return each(func(s string, atStart bool) []string {
			s = strings.ReplaceAll(s, " ", repl)
			if (scheme == "always" || scheme == "first" && atStart) && !strings.HasPrefix(s, repl) {
				s = repl + s
			}
			if !split {
				return []string{s}
			}
			return splitBy(s, rpat.find(s), splitMergedWithNext, false)
		}), false, nil
	case "Digits":
		ind := j.Individual
		return each(func(s string, _ bool) []string {
			isDigit := func(r rune) bool { return r >= '0' && r <= '9' }
			if ind {
				return splitBy(s, runeSpans(s, isDigit, false), splitIsolated, false)
			}
			return splitBy(s, runeSpans(s, isDigit, true), splitIsolated, false)
		}), false, nil
	case "Punctuation":
		b, err := parseBehavior(j.Behavior)
		if err != nil {
			return nil, false, fmt.Errorf("pre_tokenizer Punctuation: %w", err)
		}
		isPunct := func(r rune) bool {
			return r < 128 && unicode.IsPunct(r) || r < 128 && unicode.IsSymbol(r) || unicode.IsPunct(r)
		}
		return each(func(s string, _ bool) []string { return splitBy(s, runeSpans(s, isPunct, false), b, false) }), false, nil
	case "Whitespace":
		re, err := compileRegex(`\w+|[^\w\s]+`)
		if err != nil {
			return nil, false, err
		}
		return each(func(s string, _ bool) []string { return splitBy(s, re.find(s), splitRemoved, true) }), false, nil
	case "WhitespaceSplit":
		return each(func(s string, _ bool) []string { return strings.Fields(s) }), false, nil
	}
	return nil, false, fmt.Errorf("pre_tokenizer %q is not implemented (cflow implements Split, ByteLevel, Metaspace, Digits, Punctuation, Whitespace, WhitespaceSplit, Sequence)", j.Type)
}
