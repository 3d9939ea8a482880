package tokenizer

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// normalizer is a tokenizer.json normalizer: text in, text out. The
// tokenizers library also tracks offsets through normalization; cflow
// needs only the ids, so the string is all that flows.
type normalizer func(string) string

type normalizerJSON struct {
	Type        string            `json:"type"`
	Normalizers []json.RawMessage `json:"normalizers"`
	Prepend     string            `json:"prepend"`
	Pattern     json.RawMessage   `json:"pattern"`
	Content     string            `json:"content"`
	Left        *bool             `json:"left"`
	Right       *bool             `json:"right"`
}

// parseNormalizer builds the normalizer; null gives nil (identity).
func parseNormalizer(raw json.RawMessage) (normalizer, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var j normalizerJSON
	if err := json.Unmarshal(raw, &j); err != nil {
		return nil, fmt.Errorf("normalizer: %w", err)
	}
	switch j.Type {
	case "Sequence":
		var seq []normalizer
		for _, r := range j.Normalizers {
			n, err := parseNormalizer(r)
			if err != nil {
				return nil, err
			}
			if n != nil {
				seq = append(seq, n)
			}
		}
		return func(s string) string {
			for _, n := range seq {
				s = n(s)
			}
			return s
		}, nil
	case "NFC":
		return norm.NFC.String, nil
	case "NFD":
		return norm.NFD.String, nil
	case "NFKC":
		return norm.NFKC.String, nil
	case "NFKD":
		return norm.NFKD.String, nil
	case "Lowercase":
		return strings.ToLower, nil
	case "Prepend":
		p := j.Prepend
		return func(s string) string {
			if s == "" {
				return s
			}
			return p + s
		}, nil
	case "Replace":
		pat, err := parsePattern(j.Pattern)
		if err != nil {
			return nil, fmt.Errorf("normalizer Replace: %w", err)
		}
		content := j.Content
		return func(s string) string { return pat.replaceAll(s, content) }, nil
	case "Strip":
		left, right := j.Left == nil || *j.Left, j.Right == nil || *j.Right
		return func(s string) string {
			if left {
				s = strings.TrimLeftFunc(s, unicode.IsSpace)
			}
			if right {
				s = strings.TrimRightFunc(s, unicode.IsSpace)
			}
			return s
		}, nil
	}
	return nil, fmt.Errorf("normalizer %q is not implemented (cflow implements NFC, NFD, NFKC, NFKD, Lowercase, Prepend, Replace, Strip, Sequence)", j.Type)
}
