package tokenizer

import (
	"encoding/json"
	"fmt"
	"strings"
)

// decodeStep is one tokenizer.json decoder over a token list, as the
// tokenizers library's decode_chain: toks[0] sits at the start of the
// output when first is set (Strip, Metaspace and the Fuse that precedes
// them depend on it).
type decodeStep func(toks []string, first bool) []string

type decoderJSON struct {
	Type          string            `json:"type"`
	Decoders      []json.RawMessage `json:"decoders"`
	Pattern       json.RawMessage   `json:"pattern"`
	Content       string            `json:"content"`
	Start         int               `json:"start"`
	Stop          int               `json:"stop"`
	Replacement   string            `json:"replacement"`
	PrependScheme string            `json:"prepend_scheme"`
	AddPrefix     *bool             `json:"add_prefix_space"`
}

// parseDecoder builds the decoder chain; null gives none (pieces verbatim).
func parseDecoder(raw json.RawMessage) ([]decodeStep, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var j decoderJSON
	if err := json.Unmarshal(raw, &j); err != nil {
		return nil, fmt.Errorf("decoder: %w", err)
	}
	perToken := func(f func(string) string) []decodeStep {
		return []decodeStep{func(toks []string, _ bool) []string {
			for i, t := range toks {
				toks[i] = f(t)
			}
			return toks
		}}
	}
	switch j.Type {
	case "Sequence":
		var seq []decodeStep
		for _, r := range j.Decoders {
			s, err := parseDecoder(r)
			if err != nil {
				return nil, err
			}
			seq = append(seq, s...)
		}
		return seq, nil
	case "Replace":
		pat, err := parsePattern(j.Pattern)
		if err != nil {
			return nil, fmt.Errorf("decoder Replace: %w", err)
		}
		content := j.Content
		return perToken(func(s string) string { return pat.replaceAll(s, content) }), nil
	case "ByteFallback":
		return perToken(func(s string) string {
			if b, ok := byteFallbackPiece(s); ok {
				return string([]byte{b})
			}
			return s
		}), nil
	case "ByteLevel":
		return perToken(byteLevelDecode), nil
	case "Fuse":
		return []decodeStep{func(toks []string, _ bool) []string {
			if len(toks) < 2 {
				return toks
			}
			return []string{strings.Join(toks, "")}
		}}, nil
	case "Strip":
		content, start, stop := j.Content, j.Start, j.Stop
		return []decodeStep{func(toks []string, first bool) []string {
			for i, t := range toks {
				if i > 0 || first {
					for k := 0; k < start && strings.HasPrefix(t, content); k++ {
						t = t[len(content):]
					}
				}
				for k := 0; k < stop && strings.HasSuffix(t, content); k++ {
					t = t[:len(t)-len(content)]
				}
				toks[i] = t
			}
			return toks
		}}, nil
	case "Metaspace":
		repl := j.Replacement
		if repl == "" {
			repl = "▁"
		}
		scheme := j.PrependScheme
		if scheme == "" && j.AddPrefix != nil && !*j.AddPrefix {
			scheme = "never"
		}
		strip := scheme != "never"
		return []decodeStep{func(toks []string, first bool) []string {
			for i, t := range toks {
				if i == 0 && first && strip {
					toks[i] = strings.ReplaceAll(t, repl, "")
				} else {
					toks[i] = strings.ReplaceAll(t, repl, " ")
				}
			}
			return toks
		}}, nil
	}
	return nil, fmt.Errorf("decoder %q is not implemented (cflow implements ByteLevel, Metaspace, ByteFallback, Fuse, Strip, Replace, Sequence)", j.Type)
}

// byteFallbackPiece reads a "<0xXX>" piece.
func byteFallbackPiece(p string) (byte, bool) {
	if len(p) != 6 || p[:3] != "<0x" || p[5] != '>' {
		return 0, false
	}
	var v byte
	for _, c := range []byte(p[3:5]) {
		switch {
		case c >= '0' && c <= '9':
			v = v<<4 | (c - '0')
		case c >= 'A' && c <= 'F':
			v = v<<4 | (c - 'A' + 10)
		default:
			return 0, false
		}
	}
	return v, true
}
