package tokenizer

import (
	"unicode"
	"unicode/utf8"
)

// addedToken is one entry of tokenizer.json's added_tokens: text matched
// before the model sees anything, special (control) or normal.
type addedToken struct {
	ID         int    `json:"id"`
	Content    string `json:"content"`
	Special    bool   `json:"special"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	SingleWord bool   `json:"single_word"`
	Normalized bool   `json:"normalized"`
}

func (t addedToken) flags() byte {
	var f byte
	for i, b := range []bool{t.Special, t.LStrip, t.RStrip, t.SingleWord, t.Normalized} {
		if b {
			f |= 1 << i
		}
	}
	return f
}

func addedFromFlags(id int, f byte, content string) addedToken {
	return addedToken{ID: id, Content: content, Special: f&1 != 0, LStrip: f&2 != 0, RStrip: f&4 != 0,
		SingleWord: f&8 != 0, Normalized: f&16 != 0}
}

// addedMatcher finds added tokens in text leftmost-longest, as the
// tokenizers library's Aho-Corasick split does, by walking a byte trie
// from each candidate position (a first-byte set skips the rest).
type addedMatcher struct {
	toks  []addedToken
	first [256]bool
	edges map[uint64]int32 // node<<8 | byte → child node
	term  []int32          // node → index in toks, −1 when none
}

func newAddedMatcher(toks []addedToken) *addedMatcher {
	m := &addedMatcher{edges: map[uint64]int32{}, term: []int32{-1}}
	for _, t := range toks {
		if t.Content == "" {
			continue
		}
		m.first[t.Content[0]] = true
		node := int32(0)
		for i := 0; i < len(t.Content); i++ {
			k := uint64(node)<<8 | uint64(t.Content[i])
			child, ok := m.edges[k]
			if !ok {
				child = int32(len(m.term))
				m.term = append(m.term, -1)
				m.edges[k] = child
			}
			node = child
		}
		if m.term[node] < 0 {
			m.term[node] = int32(len(m.toks))
			m.toks = append(m.toks, t)
		}
	}
	return m
}

// longestAt returns the index of the longest token that s[i:] starts
// with, −1 for none; skipSpecial leaves special tokens out.
func (m *addedMatcher) longestAt(s string, i int, skipSpecial bool) int {
	if !m.first[s[i]] {
		return -1
	}
	best := -1
	node := int32(0)
	for j := i; j < len(s); j++ {
		child, ok := m.edges[uint64(node)<<8|uint64(s[j])]
		if !ok {
			break
		}
		node = child
		if t := m.term[node]; t >= 0 && (!skipSpecial || !m.toks[t].Special) {
			best = int(t)
		}
	}
	return best
}

// segment is a piece of input: an added token's id, or text (id −1)
// still to be normalized and modelled. start is its byte offset.
type segment struct {
	text  string
	id    int
	start int
}

func isWordRune(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }

// split cuts s into text and added-token segments. Non-overlapping
// leftmost-longest matches; a single_word token whose neighbours are word
// characters stays text; lstrip/rstrip take the whitespace beside the
// token into it.
func (m *addedMatcher) split(s string, base int, skipSpecial bool) []segment {
	if m == nil || len(m.toks) == 0 {
		return []segment{{s, -1, base}}
	}
	var out []segment
	textStart := 0
	for i := 0; i < len(s); {
		k := m.longestAt(s, i, skipSpecial)
		if k < 0 {
			i++
			continue
		}
		t := m.toks[k]
		start, end := i, i+len(t.Content)
		if t.SingleWord {
			before, _ := utf8.DecodeLastRuneInString(s[:start])
			after, _ := utf8.DecodeRuneInString(s[end:])
			if start > 0 && isWordRune(before) || end < len(s) && isWordRune(after) {
				i = end
				continue
			}
		}
		if t.LStrip {
			for start > textStart {
				r, n := utf8.DecodeLastRuneInString(s[:start])
				if !unicode.IsSpace(r) {
					break
				}
				start -= n
			}
		}
		if t.RStrip {
			for end < len(s) {
				r, n := utf8.DecodeRuneInString(s[end:])
				if !unicode.IsSpace(r) {
					break
				}
				end += n
			}
		}
		if start > textStart {
			out = append(out, segment{s[textStart:start], -1, base + textStart})
		}
		out = append(out, segment{"", t.ID, base + start})
		i, textStart = end, end
	}
	if textStart < len(s) {
		out = append(out, segment{s[textStart:], -1, base + textStart})
	}
	return out
}
