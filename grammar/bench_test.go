package grammar

import (
	"math/bits"
	"math/rand/v2"
	"testing"
)

// BenchmarkMaskColdString is the worst case the trie walk meets: the
// inside of a string, where nearly every token of the vocabulary is
// allowed, with the mask cache emptied before every computation.
func BenchmarkMaskColdString(b *testing.B) {
	v := qwen3Vocab(b)
	g, err := Compile([]byte(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`))
	if err != nil {
		b.Fatal(err)
	}
	s, ok := g.Start().AcceptBytes([]byte(`{"text": "abc`))
	if !ok {
		b.Fatal("prefix refused")
	}
	mask := make([]uint64, v.MaskWords())
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		v.mu.Lock()
		clear(v.cache)
		v.mu.Unlock()
		if _, err := s.Allowed(v, mask); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeTokenQwen3 is what a constrained decode pays per token
// on a 151k vocabulary: Allowed then Accept along uniform random walks of
// the bounded test schemas, each document on a freshly compiled grammar
// with the mask cache emptied (so its masks start uncached, as the first
// request with a schema finds them), and with the cache kept ("repeat":
// later requests with the same schemas).
func BenchmarkDecodeTokenQwen3(b *testing.B) {
	v := qwen3Vocab(b)
	b.Run("cold", func(b *testing.B) { decodeTokens(b, v, true) })
	b.Run("repeat", func(b *testing.B) { decodeTokens(b, v, false) })
}

// decodeTokens runs b.N tokens of the walks; cold empties the mask cache
// before each document, else a schema seen before finds its masks.
func decodeTokens(b *testing.B, v *Vocab, cold bool) {
	mask := make([]uint64, v.MaskWords())
	rng := rand.New(rand.NewPCG(1, 2))
	tokens := 0
	b.ResetTimer()
	for tokens < b.N {
		for _, tc := range testSchemas {
			if tc.freeText || tokens >= b.N {
				continue
			}
			g, err := Compile([]byte(tc.schema))
			if err != nil {
				b.Fatal(err)
			}
			if cold {
				v.mu.Lock()
				clear(v.cache)
				v.mu.Unlock()
			}
			s := g.Start()
			for !s.Done() && tokens < b.N {
				n, err := s.Allowed(v, mask)
				if err != nil {
					b.Fatal(err)
				}
				if s, err = s.Accept(v, nthSet(mask, rng.IntN(n))); err != nil {
					b.Fatal(err)
				}
				tokens++
			}
		}
	}
}

// nthSet is the index of the r-th set bit of mask (uniform sampling
// without listing every allowed id, which would cost more than the mask).
func nthSet(mask []uint64, r int) int {
	for w, word := range mask {
		c := bits.OnesCount64(word)
		if r >= c {
			r -= c
			continue
		}
		for ; r > 0; r-- {
			word &= word - 1
		}
		return w*64 + bits.TrailingZeros64(word)
	}
	return -1
}
