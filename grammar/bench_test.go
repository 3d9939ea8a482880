package grammar

import (
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
