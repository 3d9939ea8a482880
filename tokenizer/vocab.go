package tokenizer

import (
	"bytes"
	"cmp"
	"slices"
	"strings"
	"unsafe"
)

// vocab is the piece table in the flat form the converter stores and the
// runtime opens without rebuilding a map: every piece's bytes end to end,
// offsets by id, and the ids sorted by piece bytes for binary-search
// lookup. An id with no piece has an empty range and is not in sorted.
type vocab struct {
	data   []byte
	off    []uint32 // len n+1
	sorted []uint32
}

// newVocab builds the table from pieces by id ("" = no piece).
func newVocab(pieces []string) *vocab {
	v := &vocab{off: make([]uint32, len(pieces)+1)}
	n := 0
	for _, p := range pieces {
		n += len(p)
	}
	v.data = make([]byte, 0, n)
	for i, p := range pieces {
		v.data = append(v.data, p...)
		v.off[i+1] = uint32(len(v.data))
		if p != "" {
			v.sorted = append(v.sorted, uint32(i))
		}
	}
	slices.SortFunc(v.sorted, func(a, b uint32) int {
		if c := bytes.Compare(v.bytes(int(a)), v.bytes(int(b))); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	return v
}

// size is the number of ids (including ids without a piece).
func (v *vocab) size() int { return len(v.off) - 1 }

// bytes returns id's piece without copying.
func (v *vocab) bytes(id int) []byte { return v.data[v.off[id]:v.off[id+1]] }

// piece returns id's piece as a string ("" outside the table).
func (v *vocab) piece(id int) string {
	if id < 0 || id >= v.size() {
		return ""
	}
	return string(v.bytes(id))
}

// find returns the lowest id whose piece is s, or −1.
func (v *vocab) find(s string) int {
	lo, hi := 0, len(v.sorted)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if strings.Compare(unsafeString(v.bytes(int(v.sorted[m]))), s) < 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(v.sorted) && unsafeString(v.bytes(int(v.sorted[lo]))) == s {
		return int(v.sorted[lo])
	}
	return -1
}

// unsafeString views b as a string for comparison; the result must not
// outlive b's next write (the table is never written after building).
func unsafeString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// merges maps an adjacent id pair to its rank and merged id, as a sorted
// key array (a<<32 | b) and a parallel value array (rank<<32 | merged), so
// the flat form loads with no map to rebuild.
type merges struct {
	keys []uint64
	vals []uint64
}

func pairKey(a, b int) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

// newMerges sorts (pair → rank, merged) entries; a pair listed twice
// keeps its first (lowest) rank, as the tokenizers library does.
func newMerges(keys, vals []uint64) *merges {
	idx := make([]int, len(keys))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int {
		if c := cmp.Compare(keys[a], keys[b]); c != 0 {
			return c
		}
		return cmp.Compare(vals[a], vals[b])
	})
	m := &merges{}
	for _, i := range idx {
		if n := len(m.keys); n > 0 && m.keys[n-1] == keys[i] {
			continue
		}
		m.keys = append(m.keys, keys[i])
		m.vals = append(m.vals, vals[i])
	}
	return m
}

// lookup returns the pair's rank and merged id, ok false when the pair
// does not merge.
func (m *merges) lookup(a, b int) (rank, merged int, ok bool) {
	k := pairKey(a, b)
	lo, hi := 0, len(m.keys)
	for lo < hi {
		h := int(uint(lo+hi) >> 1)
		if m.keys[h] < k {
			lo = h + 1
		} else {
			hi = h
		}
	}
	if lo < len(m.keys) && m.keys[lo] == k {
		v := m.vals[lo]
		return int(v >> 32), int(uint32(v)), true
	}
	return 0, 0, false
}
