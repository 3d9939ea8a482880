package tokenizer

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
)

// pattern is a tokenizer.json pattern, {"String": s} or {"Regex": r}:
// what Split and Replace look for. Regexes go through regexp2 because the
// Llama-3 and Qwen split patterns use look-ahead (\s+(?!\S)), which Go's
// regexp cannot express; regexp2's backtracking gives the same
// leftmost-first matches as the Rust regex crate on these patterns.
type pattern struct {
	lit string
	re  *regexp2.Regexp
}

type patternJSON struct {
	String *string `json:"String"`
	Regex  *string `json:"Regex"`
}

func parsePattern(raw json.RawMessage) (*pattern, error) {
	var p patternJSON
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, fmt.Errorf("pattern: %w", err)
	}
	switch {
	case p.String != nil:
		if *p.String == "" {
			return nil, fmt.Errorf("pattern: empty String")
		}
		return &pattern{lit: *p.String}, nil
	case p.Regex != nil:
		return compileRegex(*p.Regex)
	}
	return nil, fmt.Errorf("pattern %s: neither String nor Regex", raw)
}

func compileRegex(expr string) (*pattern, error) {
	re, err := regexp2.Compile(expr, regexp2.Unicode)
	if err != nil {
		return nil, fmt.Errorf("pattern %q: %w", expr, err)
	}
	return &pattern{re: re}, nil
}

// span is a byte range [start, end) of a string.
type span struct{ start, end int }

// find returns the non-overlapping matches of p in s, left to right.
func (p *pattern) find(s string) []span {
	var out []span
	if p.re == nil {
		for off := 0; ; {
			i := strings.Index(s[off:], p.lit)
			if i < 0 {
				return out
			}
			out = append(out, span{off + i, off + i + len(p.lit)})
			off += i + len(p.lit)
		}
	}
	// regexp2 reports rune indexes; convert them to byte offsets once.
	runeOff := make([]int, 0, len(s)+1)
	for i := range s {
		runeOff = append(runeOff, i)
	}
	runeOff = append(runeOff, len(s))
	m, err := p.re.FindStringMatch(s)
	for err == nil && m != nil {
		if m.Length > 0 {
			out = append(out, span{runeOff[m.Index], runeOff[m.Index+m.Length]})
		}
		m, err = p.re.FindNextMatch(m)
	}
	return out
}

// replaceAll replaces every match of p in s with with.
func (p *pattern) replaceAll(s, with string) string {
	if p.re == nil {
		return strings.ReplaceAll(s, p.lit, with)
	}
	var b strings.Builder
	last := 0
	for _, sp := range p.find(s) {
		b.WriteString(s[last:sp.start])
		b.WriteString(with)
		last = sp.end
	}
	b.WriteString(s[last:])
	return b.String()
}

// splitBehavior is how Split keeps the pieces around a match.
type splitBehavior int

const (
	splitRemoved splitBehavior = iota
	splitIsolated
	splitMergedWithPrevious
	splitMergedWithNext
	splitContiguous
)

func parseBehavior(s string) (splitBehavior, error) {
	switch s {
	case "Removed":
		return splitRemoved, nil
	case "Isolated", "":
		return splitIsolated, nil
	case "MergedWithPrevious":
		return splitMergedWithPrevious, nil
	case "MergedWithNext":
		return splitMergedWithNext, nil
	case "Contiguous":
		return splitContiguous, nil
	}
	return 0, fmt.Errorf("split behavior %q is not one tokenizers defines", s)
}

// splitBy cuts s at matches following the tokenizers library's
// SplitDelimiterBehavior; invert swaps what counts as the delimiter.
// Empty pieces are dropped.
func splitBy(s string, matches []span, b splitBehavior, invert bool) []string {
	type piece struct {
		span
		match bool
	}
	var ps []piece
	last := 0
	for _, m := range matches {
		if m.start > last {
			ps = append(ps, piece{span{last, m.start}, invert})
		}
		ps = append(ps, piece{m, !invert})
		last = m.end
	}
	if last < len(s) {
		ps = append(ps, piece{span{last, len(s)}, invert})
	}
	var out []span
	switch b {
	case splitIsolated:
		for _, p := range ps {
			out = append(out, p.span)
		}
	case splitRemoved:
		for _, p := range ps {
			if !p.match {
				out = append(out, p.span)
			}
		}
	case splitMergedWithPrevious:
		prevText := false
		for _, p := range ps {
			if p.match && prevText && len(out) > 0 {
				out[len(out)-1].end = p.end
			} else {
				out = append(out, p.span)
			}
			prevText = !p.match
		}
	case splitMergedWithNext:
		pending := -1
		for _, p := range ps {
			switch {
			case p.match:
				if pending < 0 {
					pending = p.start
				} else {
					// Two delimiters in a row: the first stands alone.
					out = append(out, span{pending, p.start})
					pending = p.start
				}
			case pending >= 0:
				out = append(out, span{pending, p.end})
				pending = -1
			default:
				out = append(out, p.span)
			}
		}
		if pending >= 0 {
			out = append(out, span{pending, len(s)})
		}
	case splitContiguous:
		prevMatch := false
		for _, p := range ps {
			if p.match && prevMatch && len(out) > 0 {
				out[len(out)-1].end = p.end
			} else {
				out = append(out, p.span)
			}
			prevMatch = p.match
		}
	}
	strs := make([]string, 0, len(out))
	for _, sp := range out {
		if sp.end > sp.start {
			strs = append(strs, s[sp.start:sp.end])
		}
	}
	return strs
}

// runeStarts is a helper for per-character predicates: the spans of runes
// of s for which keep is true, merged when contiguous is set.
func runeSpans(s string, keep func(rune) bool, contiguous bool) []span {
	var out []span
	for i, r := range s {
		if !keep(r) {
			continue
		}
		n := utf8.RuneLen(r)
		if n < 0 {
			n = 1
		}
		if contiguous && len(out) > 0 && out[len(out)-1].end == i {
			out[len(out)-1].end = i + n
			continue
		}
		out = append(out, span{i, i + n})
	}
	return out
}
