package grammar

import (
	"bytes"
	"fmt"
	"math/bits"
	"slices"
	"sync"
	"unicode/utf8"
)

// Vocab is a model's vocabulary as the grammar sees it: each token id's
// bytes, held as a trie so a mask is one walk that drops a whole branch at
// its first refused byte, and the end-of-sequence ids, allowed exactly when
// the document is complete. It caches masks by grammar state; it is safe
// for concurrent use.
type Vocab struct {
	tokens [][]byte
	eos    []int
	isEOS  []bool

	// trie: node i's edges are edgeByte/edgeNode[first[i]:first[i]+count[i]],
	// the tokens spelled by the path to it are toks[tokFirst[i]:tokFirst[i+1]].
	first, tokFirst []int32
	count           []uint16
	edgeByte        []byte
	edgeNode        []int32
	toks            []int32
	// Per node, over its subtree: subEnd is the first node after it;
	// allText says every token is whole string text (complete UTF-8, no
	// quote, backslash or control byte) and maxChars is the most
	// characters such a token has, so inside a string the walk can admit
	// a whole subtree without visiting it.
	subEnd   []int32
	allText  []bool
	maxChars []int32

	mu    sync.Mutex
	cache map[cacheKey][]uint64
}

// cacheKey is a grammar's fingerprint and a state's key: compiling the
// same schema again (the next request with it) gives the same rules in the
// same order, so its states share the masks already computed.
type cacheKey struct {
	g string
	k string
}

// maxCachedMasks bounds the mask cache (a mask of a 150k vocabulary is
// 19 KB); it is emptied when full.
const maxCachedMasks = 1024

// NewVocab builds the trie of tokens (token id i spells tokens[i]). A nil
// or empty entry is a token the grammar never allows (control tokens that
// are not text); eos are the ids that end a document.
func NewVocab(tokens [][]byte, eos []int) (*Vocab, error) {
	v := &Vocab{tokens: tokens, eos: eos, isEOS: make([]bool, len(tokens)), cache: map[cacheKey][]uint64{}}
	for _, e := range eos {
		if e < 0 || e >= len(tokens) {
			return nil, fmt.Errorf("grammar: end-of-sequence id %d outside the vocabulary of %d", e, len(tokens))
		}
		v.isEOS[e] = true
	}
	var ids []int32
	for i, t := range tokens {
		if len(t) > 0 && !v.isEOS[i] {
			ids = append(ids, int32(i))
		}
	}
	slices.SortFunc(ids, func(a, b int32) int { return bytes.Compare(tokens[a], tokens[b]) })
	v.build(ids, 0)
	v.tokFirst = append(v.tokFirst, int32(len(v.toks)))
	return v, nil
}

// Size is the number of token ids, the length in bits of a mask.
func (v *Vocab) Size() int { return len(v.tokens) }

// build adds the node for ids (sorted, sharing their first depth bytes)
// and its subtree, returning its index.
func (v *Vocab) build(ids []int32, depth int) int32 {
	node := int32(len(v.first))
	v.first = append(v.first, 0)
	v.count = append(v.count, 0)
	v.subEnd = append(v.subEnd, 0)
	v.allText = append(v.allText, true)
	v.maxChars = append(v.maxChars, 0)
	v.tokFirst = append(v.tokFirst, int32(len(v.toks)))
	text, chars := true, int32(0)
	i := 0
	for i < len(ids) && len(v.tokens[ids[i]]) == depth {
		v.toks = append(v.toks, ids[i])
		n, ok := stringText(v.tokens[ids[i]])
		text = text && ok
		chars = max(chars, n)
		i++
	}
	var eb []byte
	var en []int32
	for i < len(ids) {
		c := v.tokens[ids[i]][depth]
		j := i
		for j < len(ids) && v.tokens[ids[j]][depth] == c {
			j++
		}
		child := v.build(ids[i:j], depth+1)
		text = text && v.allText[child]
		chars = max(chars, v.maxChars[child])
		eb = append(eb, c)
		en = append(en, child)
		i = j
	}
	v.first[node] = int32(len(v.edgeByte))
	v.count[node] = uint16(len(eb))
	v.edgeByte = append(v.edgeByte, eb...)
	v.edgeNode = append(v.edgeNode, en...)
	v.subEnd[node] = int32(len(v.first))
	v.allText[node] = text
	v.maxChars[node] = chars
	return node
}

// stringText says whether p may stand as is inside a JSON string (whole
// UTF-8 characters, none of them a quote, backslash or control), and how
// many characters it is.
func stringText(p []byte) (int32, bool) {
	if !utf8.Valid(p) {
		return 0, false
	}
	n := int32(0)
	for _, r := range string(p) {
		if r < 0x20 || r == '"' || r == '\\' {
			return 0, false
		}
		n++
	}
	return n, true
}

// absorbs says whether some thread of ts is inside a string with room for
// chars more characters, so it takes any whole-text token of that length.
func absorbs(ts []thread, chars int32) bool {
	for _, th := range ts {
		if th.t.kind == termString && th.s.a == strBody && th.s.b == 0 &&
			(th.t.str.maxLen < 0 || int(th.s.n+chars) <= th.t.str.maxLen) {
			return true
		}
	}
	return false
}

// MaskWords is the length in uint64 words of a mask over v.
func (v *Vocab) MaskWords() int { return (len(v.tokens) + 63) / 64 }

// Allowed sets mask (MaskWords words; bit i of word i/64 is token i) to
// the tokens that may come next: those whose bytes keep the document a
// valid prefix, and the end-of-sequence ids when it is complete. It
// returns how many are allowed; a mask of the wrong length is an error.
func (s *State) Allowed(v *Vocab, mask []uint64) (int, error) {
	if len(mask) != v.MaskWords() {
		return 0, fmt.Errorf("grammar: mask of %d words for a vocabulary of %d tokens (want %d)", len(mask), len(v.tokens), v.MaskWords())
	}
	clear(mask)
	if s.done {
		return 0, nil
	}
	k := cacheKey{s.g.fingerprint, s.key()}
	v.mu.Lock()
	m, ok := v.cache[k]
	v.mu.Unlock()
	if !ok {
		m = make([]uint64, len(mask))
		w := walker{g: s.g, v: v, mask: m}
		w.walk(0, s.threads, 0)
		if s.Complete() {
			for _, e := range v.eos {
				m[e/64] |= 1 << (e % 64)
			}
		}
		v.mu.Lock()
		if len(v.cache) >= maxCachedMasks {
			clear(v.cache)
		}
		v.cache[k] = m
		v.mu.Unlock()
	}
	copy(mask, m)
	n := 0
	for _, w := range mask {
		n += bits.OnesCount64(w)
	}
	return n, nil
}

// walker is one mask computation: the trie walk's per-depth thread buffers.
type walker struct {
	g    *Grammar
	v    *Vocab
	mask []uint64
	bufs [][]thread
}

func (w *walker) walk(node int32, ts []thread, depth int) {
	v := w.v
	for _, t := range v.toks[v.tokFirst[node]:v.tokFirst[node+1]] {
		w.mask[t/64] |= 1 << (t % 64)
	}
	if depth == len(w.bufs) {
		w.bufs = append(w.bufs, nil)
	}
	f := v.first[node]
	for e := f; e < f+int32(v.count[node]); e++ {
		child := v.edgeNode[e]
		if v.allText[child] && absorbs(ts, v.maxChars[child]) {
			for _, t := range v.toks[v.tokFirst[child]:v.tokFirst[v.subEnd[child]]] {
				w.mask[t/64] |= 1 << (t % 64)
			}
			continue
		}
		next := w.g.advance(ts, v.edgeByte[e], w.bufs[depth][:0])
		w.bufs[depth] = next
		if len(next) > 0 {
			w.walk(v.edgeNode[e], next, depth+1)
		}
	}
}

// Accept returns the state after token tok: its bytes, or, for an
// end-of-sequence id, the end of the document (an error unless complete).
func (s *State) Accept(v *Vocab, tok int) (*State, error) {
	if tok < 0 || tok >= len(v.tokens) {
		return s, fmt.Errorf("grammar: token %d outside the vocabulary of %d", tok, len(v.tokens))
	}
	if s.done {
		return s, fmt.Errorf("grammar: token %d after the end of the document", tok)
	}
	if v.isEOS[tok] {
		if !s.Complete() {
			return s, fmt.Errorf("grammar: end of sequence (token %d) before the document is complete", tok)
		}
		return &State{g: s.g, threads: s.threads, done: true}, nil
	}
	if len(v.tokens[tok]) == 0 {
		return s, fmt.Errorf("grammar: token %d has no text and is never allowed", tok)
	}
	next, ok := s.AcceptBytes(v.tokens[tok])
	if !ok {
		return s, fmt.Errorf("grammar: token %d (%q) does not continue the document", tok, v.tokens[tok])
	}
	return next, nil
}
