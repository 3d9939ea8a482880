package tokenizer

import (
	"fmt"
	"sync"
	"unicode/utf8"
)

// bpe is the tokenizers library's BPE model: a word's characters become
// ids (byte fallback to <0xXX> pieces, else unk), then the adjacent pair
// of lowest merge rank merges, leftmost first, until no pair merges.
type bpe struct {
	v            *vocab
	m            *merges
	unk          int // −1: none
	fuseUnk      bool
	byteFallback bool
	ignoreMerges bool
	byteID       [256]int32 // id of "<0xXX>", −1 when absent
	// char maps each single-character piece to its id, so a word's
	// characters become ids without a binary search each.
	char map[rune]int32
	// cache holds recent words' ids, as the tokenizers library's BPE
	// cache does: prose repeats its words.
	mu    sync.RWMutex
	cache map[string][]int32
}

// Cache bounds: words longer than maxCachedWord bytes are not cached, and
// the cache is dropped when it reaches maxCacheWords entries.
const (
	maxCachedWord = 256
	maxCacheWords = 10000
)

func (b *bpe) init() {
	for i := range b.byteID {
		b.byteID[i] = int32(b.v.find(fmt.Sprintf("<0x%02X>", i)))
	}
	b.char = map[rune]int32{}
	for id := b.v.size() - 1; id >= 0; id-- { // lowest id wins, as find
		p := b.v.bytes(id)
		if r, n := utf8.DecodeRune(p); n == len(p) && n > 0 && (r != utf8.RuneError || n == 3) {
			b.char[r] = int32(id)
		}
	}
	b.cache = map[string][]int32{}
}

// mergeCand is a pending merge of the symbol at pos with its right
// neighbour.
type mergeCand struct {
	rank, pos, merged int32
}

// word appends word's ids to out.
func (b *bpe) word(w string, out []int) ([]int, error) {
	if b.ignoreMerges {
		if id := b.v.find(w); id >= 0 {
			return append(out, id), nil
		}
	}
	if len(w) <= maxCachedWord {
		b.mu.RLock()
		c, ok := b.cache[w]
		b.mu.RUnlock()
		if ok {
			for _, id := range c {
				out = append(out, int(id))
			}
			return out, nil
		}
	}
	ids := make([]int32, 0, len(w))
	lastUnk := false
	for i := 0; i < len(w); {
		r, n := utf8.DecodeRuneInString(w[i:])
		ch := w[i : i+n]
		i += n
		if r != utf8.RuneError || n == 3 {
			if id, ok := b.char[r]; ok {
				ids, lastUnk = append(ids, id), false
				continue
			}
		} else if id := b.v.find(ch); id >= 0 {
			ids, lastUnk = append(ids, int32(id)), false
			continue
		}
		if b.byteFallback {
			all := true
			for k := 0; k < len(ch); k++ {
				all = all && b.byteID[ch[k]] >= 0
			}
			if all {
				for k := 0; k < len(ch); k++ {
					ids = append(ids, b.byteID[ch[k]])
				}
				lastUnk = false
				continue
			}
		}
		if b.unk < 0 {
			return out, fmt.Errorf("tokenizer: %q has no token, no byte fallback and no unk token", ch)
		}
		if !(b.fuseUnk && lastUnk) {
			ids = append(ids, int32(b.unk))
		}
		lastUnk = true
	}
	ids = b.merge(ids)
	for _, id := range ids {
		out = append(out, int(id))
	}
	if len(w) <= maxCachedWord {
		b.mu.Lock()
		if len(b.cache) >= maxCacheWords {
			clear(b.cache)
		}
		b.cache[w] = ids
		b.mu.Unlock()
	}
	return out, nil
}

// merge runs the merges on ids with a doubly linked symbol list and a
// binary heap ordered by (rank, position), as the tokenizers library does,
// so long words (a line of CJK without spaces) stay O(n log n).
func (b *bpe) merge(ids []int32) []int32 {
	n := len(ids)
	if n < 2 {
		return ids
	}
	prev := make([]int32, n)
	next := make([]int32, n)
	alive := make([]bool, n)
	var h []mergeCand
	for i := range ids {
		prev[i], next[i], alive[i] = int32(i-1), int32(i+1), true
	}
	next[n-1] = -1
	push := func(pos int32) {
		r := next[pos]
		if r < 0 {
			return
		}
		if rank, merged, ok := b.m.lookup(int(ids[pos]), int(ids[r])); ok {
			h = heapPush(h, mergeCand{int32(rank), pos, int32(merged)})
		}
	}
	for i := 0; i+1 < n; i++ {
		push(int32(i))
	}
	for len(h) > 0 {
		var c mergeCand
		h, c = heapPop(h)
		r := next[c.pos]
		if !alive[c.pos] || r < 0 {
			continue
		}
		if _, merged, ok := b.m.lookup(int(ids[c.pos]), int(ids[r])); !ok || int32(merged) != c.merged {
			continue
		}
		ids[c.pos] = c.merged
		alive[r] = false
		next[c.pos] = next[r]
		if next[r] >= 0 {
			prev[next[r]] = c.pos
		}
		if p := prev[c.pos]; p >= 0 {
			push(p)
		}
		push(c.pos)
	}
	out := ids[:0]
	for i := int32(0); i >= 0; i = next[i] {
		out = append(out, ids[i])
	}
	return out
}

func candLess(a, b mergeCand) bool {
	return a.rank < b.rank || a.rank == b.rank && a.pos < b.pos
}

func heapPush(h []mergeCand, c mergeCand) []mergeCand {
	h = append(h, c)
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if !candLess(h[i], h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
	return h
}

func heapPop(h []mergeCand) ([]mergeCand, mergeCand) {
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(h) && candLess(h[l], h[m]) {
			m = l
		}
		if r < len(h) && candLess(h[r], h[m]) {
			m = r
		}
		if m == i {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	return h, top
}
