package tokenizer

import (
	"os"
	"strings"
	"testing"
)

// benchLine is one line of ordinary prose, what a prompt is.
const benchLine = "Once upon a time, there was a little girl named Lily who loved to play outside in the sunshine."

// BenchmarkOpenEncode: open a model file's flat tokenizer and encode one
// line, the work every cflowc invocation with a --prompt does before
// decoding (issue 16 asks ≤ 100 ms for Gemma 3's 262k vocabulary).
func BenchmarkOpenEncode(b *testing.B) {
	for _, model := range refModels {
		b.Run(model, func(b *testing.B) {
			refTokenizer(b, model) // compile once, outside the timing
			flat, _ := flatCache.Load(model)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				tk, err := OpenFlat(flat.([]byte), -1, -1)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := tk.Encode(benchLine); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkEncode: encoding throughput (MB/s of UTF-8 input) on the
// reference corpus repeated; scripts/tokenizer-bench.sh runs the same text
// through @lenml/tokenizers under node for docs/PERFORMANCE.md.
func BenchmarkEncode(b *testing.B) {
	text := benchText()
	for _, model := range refModels {
		b.Run(model, func(b *testing.B) {
			tk := refTokenizer(b, model)
			b.SetBytes(int64(len(text)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := tk.Encode(text); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// benchText is the first 18 corpus texts (prose, code, numbers, CJK,
// emoji, whitespace, contractions, accents, scripts) joined by newlines,
// repeated to about 64 KiB.
func benchText() string {
	one := strings.Join(corpus()[:18], "\n")
	return strings.Repeat(one+"\n", 65536/len(one)+1)
}

// TestWriteBenchText writes benchText to $CFLOW_BENCH_TEXT for
// scripts/tokenizer-bench.sh (the reference's side of the comparison).
func TestWriteBenchText(t *testing.T) {
	p := os.Getenv("CFLOW_BENCH_TEXT")
	if p == "" {
		t.Skip("CFLOW_BENCH_TEXT unset: only scripts/tokenizer-bench.sh writes the benchmark text")
	}
	if err := os.WriteFile(p, []byte(benchText()), 0o644); err != nil {
		t.Fatal(err)
	}
}
