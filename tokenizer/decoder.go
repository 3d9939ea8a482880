package tokenizer

import (
	"encoding/json"
	"fmt"
	"strings"
)

// decodeStep is one tokenizer.json decoder over a token list, as the
// tokenizers library's decode_chain.
type decodeStep func(toks []string, c decodeCtx) []string

// decodeCtx is what a decode step needs beyond its tokens.
type decodeCtx struct {
	// first: toks[0] sits at the start of the output (Strip, Metaspace and
	// the Fuse that precedes them depend on it).
	first bool
	// text: the steps make a whole text, as the reference's decode does:
	// ByteFallback's runs of byte tokens and ByteLevel's runs of ordinary
	// tokens become UTF-8 text with U+FFFD for what is ill-formed
	// (utf8Text). Otherwise (Piece, streaming) bytes stay as they are, so
	// a character split across tokens is joined by the caller.
	text bool
	// added reports a token that is an added token's content: the
	// ByteLevel decoder leaves those as written.
	added func(string) bool
}

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
		return []decodeStep{func(toks []string, _ decodeCtx) []string {
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
		return []decodeStep{byteFallbackDecode}, nil
	case "ByteLevel":
		return []decodeStep{byteLevelDecodeStep}, nil
	case "Fuse":
		return []decodeStep{func(toks []string, _ decodeCtx) []string {
			if len(toks) < 2 {
				return toks
			}
			return []string{strings.Join(toks, "")}
		}}, nil
	case "Strip":
		content, start, stop := j.Content, j.Start, j.Stop
		return []decodeStep{func(toks []string, c decodeCtx) []string {
			for i, t := range toks {
				if i > 0 || c.first {
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
		return []decodeStep{func(toks []string, c decodeCtx) []string {
			for i, t := range toks {
				if i == 0 && c.first && strip {
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

// byteFallbackDecode is the ByteFallback decoder: "<0xXX>" tokens are
// bytes. In a text, each run of them becomes UTF-8 text on its own, a
// leading BOM dropped (the reference decodes each run with a default
// TextDecoder); streaming, each is its raw byte.
func byteFallbackDecode(toks []string, c decodeCtx) []string {
	if !c.text {
		for i, t := range toks {
			if b, ok := byteFallbackPiece(t); ok {
				toks[i] = string([]byte{b})
			}
		}
		return toks
	}
	out := toks[:0:0]
	var run []byte
	for _, t := range toks {
		if b, ok := byteFallbackPiece(t); ok {
			run = append(run, b)
			continue
		}
		if len(run) > 0 {
			out = append(out, utf8Text(run, true))
			run = run[:0]
		}
		out = append(out, t)
	}
	if len(run) > 0 {
		out = append(out, utf8Text(run, true))
	}
	return out
}

// byteLevelDecodeStep is the ByteLevel decoder: ordinary tokens' runes are
// bytes (byteLevelDecode), added tokens stay as written. In a text, each
// run of ordinary tokens becomes UTF-8 text (a BOM kept, as the
// reference's ignoreBOM TextDecoder keeps it); streaming, bytes stay raw.
func byteLevelDecodeStep(toks []string, c decodeCtx) []string {
	added := func(t string) bool { return c.added != nil && c.added(t) }
	if !c.text {
		for i, t := range toks {
			if !added(t) {
				toks[i] = byteLevelDecode(t)
			}
		}
		return toks
	}
	out := toks[:0:0]
	var run []string
	flush := func() {
		if len(run) > 0 {
			out = append(out, utf8Text([]byte(byteLevelDecode(strings.Join(run, ""))), false))
			run = run[:0]
		}
	}
	for _, t := range toks {
		if added(t) {
			flush()
			out = append(out, t)
		} else {
			run = append(run, t)
		}
	}
	flush()
	return out
}

// byteFallbackPiece reads a "<0xXX>" piece (either case of hex digit, as
// both the tokenizers library and the reference parse it).
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
		case c >= 'a' && c <= 'f':
			v = v<<4 | (c - 'a' + 10)
		default:
			return 0, false
		}
	}
	return v, true
}

// cleanUpSpaces is transformers' clean_up_tokenization, applied after
// decoding when tokenizer_config.json sets clean_up_tokenization_spaces:
// the replacements one after another over the whole text, in this order,
// as the reference applies them.
func cleanUpSpaces(s string) string {
	for _, r := range [][2]string{{" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"},
		{" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}} {
		s = strings.ReplaceAll(s, r[0], r[1])
	}
	return s
}
