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
// (so its masks start uncached, as a new request's would).
func BenchmarkDecodeTokenQwen3(b *testing.B) {
	v := qwen3Vocab(b)
	mask := make([]uint64, v.MaskWords())
	rng := rand.New(rand.NewPCG(1, 2))
	var allowed []int
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
			s := g.Start()
			for !s.Done() && tokens < b.N {
				if _, err := s.Allowed(v, mask); err != nil {
					b.Fatal(err)
				}
				allowed = allowed[:0]
				for w, word := range mask {
					for word != 0 {
						allowed = append(allowed, w*64+bits.TrailingZeros64(word))
						word &= word - 1
					}
				}
				if s, err = s.Accept(v, allowed[rng.IntN(len(allowed))]); err != nil {
					b.Fatal(err)
				}
				tokens++
			}
		}
	}
}
