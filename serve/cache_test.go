package serve

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/convert"
	"github.com/cflow-dev/cflow/engine"
	"github.com/cflow-dev/cflow/generate"
	"github.com/cflow-dev/cflow/quant"
	"github.com/cflow-dev/cflow/vflowfmt"
)

// runJob submits one greedy request of prompt for n tokens to s and waits
// for it: the ids it generated and the prompt tokens it reused.
func runJob(t *testing.T, s *scheduler, prompt []int, n, vocab, ctx int, cachePrompt bool) (ids []int, cached int) {
	t.Helper()
	p := generate.DefaultParams()
	p.Temperature = 0
	seq, err := generate.NewSequence(generate.Request{Prompt: prompt, MaxTokens: n, Ctx: ctx, Params: p, TopLogprobs: -1}, vocab, ctx)
	if err != nil {
		t.Fatal(err)
	}
	j := &job{ctx: context.Background(), seq: seq, out: outbox{wake: make(chan struct{}, 1)}, cachePrompt: cachePrompt}
	s.submit(j)
	var buf []generate.Token
	for {
		toks, done, err := j.out.take(buf)
		buf = toks
		for _, tk := range toks {
			if tk.ID >= 0 {
				ids = append(ids, tk.ID)
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		if done {
			return ids, int(j.cached.Load())
		}
		<-j.out.wake
	}
}

// fed is what a finished request leaves in its slot's KV cache: the prompt
// and every generated token but the last (sampled, never fed).
func fed(prompt, ids []int) []int {
	return append(append([]int(nil), prompt...), ids[:len(ids)-1]...)
}

// wantCached is the reuse a prompt gets from a slot holding cache: their
// common prefix, all but the prompt's last token at most.
func wantCached(cache, prompt []int) int {
	n := 0
	for n < len(cache) && n < len(prompt) && cache[n] == prompt[n] {
		n++
	}
	return min(n, len(prompt)-1)
}

// lcgTokens is a deterministic sequence of n ids below vocab.
func lcgTokens(n, vocab, seed int) []int {
	ts := make([]int, n)
	x := uint32(seed*2654435761 + 12345)
	for i := range ts {
		x = x*1664525 + 1013904223
		ts[i] = int(x>>8) % vocab
	}
	return ts
}

// cacheFixtures converts every architecture fixture the converter accepts
// (golden/fixtures and golden/families/fixtures) to Q4_0.
func cacheFixtures(t *testing.T) map[string]*cflowfmt.Model {
	out := map[string]*cflowfmt.Model{}
	for _, g := range []string{"../golden/fixtures/*", "../golden/families/fixtures/*"} {
		dirs, _ := filepath.Glob(g)
		for _, d := range dirs {
			if _, err := os.Stat(filepath.Join(d, "config.json")); err != nil {
				continue
			}
			path := filepath.Join(t.TempDir(), filepath.Base(d)+".cflow")
			if _, err := convert.Convert(context.Background(), d, path, convert.Options{Quant: quant.Q4_0, NUMANodes: 1, Workers: 1}); err != nil {
				if s := err.Error(); strings.Contains(s, "mlp_only_layers") || strings.Contains(s, "decoder_sparse_step") {
					continue // refused on purpose (verify tests the refusal)
				}
				t.Fatalf("convert %s: %v", d, err)
			}
			m, err := vflowfmt.OpenModel(path)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { m.Close() })
			out[filepath.Base(d)] = m
		}
	}
	if len(out) == 0 {
		t.Skip("no fixtures")
	}
	return out
}

// newTestScheduler runs a scheduler over slots sequences of m.
func newTestScheduler(t *testing.T, m *cflowfmt.Model, slots int, cacheRAM int64) *scheduler {
	// cflowc serve's default cache, f16: its replies must not depend on
	// the prompt cache either.
	be, err := newBatched(m, slots, engine.Options{Threads: 1, CacheK: engine.KVF16, CacheV: engine.KVF16})
	if err != nil {
		t.Fatal(err)
	}
	s := newScheduler(be, slots, cacheRAM)
	t.Cleanup(s.close)
	return s
}

// TestPromptCacheGreedyEqualsFresh: for every architecture fixture, a
// series of greedy requests on one slot that keeps its cache — a
// continuation of the last reply, a prompt sharing only part of the cache
// (cut back in the middle), one sharing nothing, one opting out — gives
// exactly the ids a server without a cache gives, and each reuses the
// common prefix of its prompt and what the slot's last request fed.
func TestPromptCacheGreedyEqualsFresh(t *testing.T) {
	for name, m := range cacheFixtures(t) {
		t.Run(name, func(t *testing.T) {
			vocab, ctx := int(m.Header.VocabSize), int(m.Header.MaxSeqLen)
			L := min(40, ctx/3)
			toks := lcgTokens(ctx, vocab, 3)
			cached := newTestScheduler(t, m, 1, -1)
			fresh := newTestScheduler(t, m, 1, 0)
			const n = 6
			other := toks[0] + 1
			if other >= vocab {
				other = 0
			}
			idsA, _ := runJob(t, fresh, toks[:L], n, vocab, ctx, true)
			steps := []struct {
				what   string
				prompt func(last []int) []int
				cache  bool
			}{
				{"first", func([]int) []int { return toks[:L] }, true},
				{"continuation", func(last []int) []int {
					return append(append(append([]int(nil), toks[:L]...), idsA...), toks[L:L+3]...)
				}, true},
				{"the same prompt again", func(last []int) []int { return last }, true},
				{"half the prefix", func([]int) []int { return append(append([]int(nil), toks[:L/2]...), toks[2*L:2*L+5]...) }, true},
				{"no shared prefix", func([]int) []int { return append([]int{other}, toks[1:L]...) }, true},
				{"cache_prompt false", func([]int) []int { return append([]int{other}, toks[1:L]...) }, false},
			}
			var held, last []int
			for _, st := range steps {
				p := st.prompt(last)
				want, c0 := runJob(t, fresh, p, n, vocab, ctx, true)
				if c0 != 0 {
					t.Fatalf("%s: the server without a cache reused %d tokens", st.what, c0)
				}
				got, c := runJob(t, cached, p, n, vocab, ctx, st.cache)
				if !slicesEqual(got, want) {
					t.Fatalf("%s: with the cache %v, without %v", st.what, got, want)
				}
				w := 0
				if st.cache {
					w = wantCached(held, p)
				}
				if c != w {
					t.Fatalf("%s: reused %d prompt tokens, the slot shared %d", st.what, c, w)
				}
				if st.what == "no shared prefix" && c != 0 || st.what == "continuation" && c < L {
					t.Fatalf("%s: reused %d tokens", st.what, c)
				}
				held, last = fed(p, got), p
			}
		})
	}
}

func slicesEqual(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestPromptCachePlacesAndEvicts: with two slots a request goes to the
// slot holding its longest prefix (two interleaved conversations each
// find theirs), and a cache bound of one slot's KV memory evicts the least
// recently used idle slot, whose conversation then reuses nothing.
func TestPromptCachePlacesAndEvicts(t *testing.T) {
	m, _ := demoModel(t)
	vocab, ctx := int(m.Header.VocabSize), int(m.Header.MaxSeqLen)
	P := lcgTokens(30, vocab, 1)
	Q := lcgTokens(30, vocab, 2)
	Q[0] = (P[0] + 1) % vocab
	grow := func(p, ids []int, extra int) []int {
		return append(append(append([]int(nil), p...), ids...), lcgTokens(extra, vocab, len(p))...)
	}
	t.Run("longest prefix", func(t *testing.T) {
		s := newTestScheduler(t, m, 2, -1)
		idsP, _ := runJob(t, s, P, 4, vocab, ctx, true)
		idsQ, _ := runJob(t, s, Q, 4, vocab, ctx, true)
		P2, Q2 := grow(P, idsP, 5), grow(Q, idsQ, 5)
		if _, c := runJob(t, s, P2, 4, vocab, ctx, true); c != wantCached(fed(P, idsP), P2) || c < len(P) {
			t.Fatalf("P's continuation reused %d tokens, want %d", c, wantCached(fed(P, idsP), P2))
		}
		if _, c := runJob(t, s, Q2, 4, vocab, ctx, true); c != wantCached(fed(Q, idsQ), Q2) || c < len(Q) {
			t.Fatalf("Q's continuation reused %d tokens, want %d", c, wantCached(fed(Q, idsQ), Q2))
		}
	})
	t.Run("cache-ram", func(t *testing.T) {
		// One slot's KV memory for a 30-odd-token sequence: one block of
		// positions in every pass.
		e, err := engine.New(m, engine.Options{Threads: 1, CacheK: engine.KVF16, CacheV: engine.KVF16}) // newTestScheduler's
		if err != nil {
			t.Fatal(err)
		}
		q := e.NewSequence()
		if _, err := e.StepFeeds([]engine.Feed{{Seq: q, Toks: P, Logits: true}}); err != nil {
			t.Fatal(err)
		}
		one := q.KVBytes()
		e.Close()
		s := newTestScheduler(t, m, 2, one)
		idsP, _ := runJob(t, s, P, 4, vocab, ctx, true)
		idsQ, _ := runJob(t, s, Q, 4, vocab, ctx, true) // evicts P's slot
		Q2 := grow(Q, idsQ, 5)
		if _, c := runJob(t, s, Q2, 4, vocab, ctx, true); c != wantCached(fed(Q, idsQ), Q2) || c < len(Q) {
			t.Fatalf("Q's continuation reused %d tokens, want %d (its slot, the most recent, is kept)", c, wantCached(fed(Q, idsQ), Q2))
		}
		if _, c := runJob(t, s, grow(P, idsP, 5), 4, vocab, ctx, true); c != 0 {
			t.Fatalf("P's continuation reused %d tokens after its slot was evicted", c)
		}
	})
}

// cachedTokens is an answer's usage.prompt_tokens_details.cached_tokens.
func cachedTokens(t *testing.T, v map[string]any) int {
	t.Helper()
	u, _ := v["usage"].(map[string]any)
	d, _ := u["prompt_tokens_details"].(map[string]any)
	c, ok := d["cached_tokens"].(float64)
	if !ok {
		t.Fatalf("no usage.prompt_tokens_details.cached_tokens in %v", v)
	}
	return int(c)
}

// TestPromptCacheUsage: over HTTP, a text completion extending the last
// one reports the shared prefix as cached_tokens (the byte tokenizer's
// ids counted here from the texts), in the answer, in a stream's final
// usage chunk and in the request log; chat reports it too; cache_prompt
// false reuses nothing; every reply equals the engine stepped alone.
func TestPromptCacheUsage(t *testing.T) {
	var logged syncBuffer
	_, hs := startServer(t, Config{Parallel: 1, CacheRAM: -1, Log: &logged}, nil)
	_, tk := demoModel(t)
	text := func(v map[string]any) string { return v["choices"].([]any)[0].(map[string]any)["text"].(string) }
	const p1 = "Once upon a time"
	code, v := post(t, hs.URL+"/v1/completions", `{"prompt":"`+p1+`","temperature":0,"max_tokens":12}`)
	if code != 200 || text(v) != greedyText(t, p1, 12) || cachedTokens(t, v) != 0 {
		t.Fatalf("first request: %d %v", code, v)
	}
	r1 := text(v)
	ids1, _ := generate.EncodePrompt(tk, p1+r1)
	p2 := p1 + r1 + " and"
	ids2, _ := generate.EncodePrompt(tk, p2)
	want := wantCached(ids1[:len(ids1)-1], ids2) // the reply's last token was never fed
	resp, err := httpPost(hs.URL+"/v1/completions", `{"prompt":"`+p2+`","temperature":0,"max_tokens":6,"stream":true,"stream_options":{"include_usage":true}}`)
	if err != nil {
		t.Fatal(err)
	}
	events := sseEvents(t, resp.Body)
	resp.Body.Close()
	var streamed strings.Builder
	for _, e := range events[:len(events)-1] {
		if cs, _ := e["choices"].([]any); len(cs) == 1 {
			streamed.WriteString(cs[0].(map[string]any)["text"].(string))
		}
	}
	if got := cachedTokens(t, events[len(events)-1]); got != want || got < len(ids1)-4 || streamed.String() != greedyText(t, p2, 6) {
		t.Fatalf("the continuation: cached_tokens %d, want %d; text %q, want %q", got, want, streamed.String(), greedyText(t, p2, 6))
	}
	code, v = post(t, hs.URL+"/v1/completions", `{"prompt":"`+p2+`","temperature":0,"max_tokens":6,"cache_prompt":false}`)
	if code != 200 || cachedTokens(t, v) != 0 || text(v) != greedyText(t, p2, 6) {
		t.Fatalf("cache_prompt false: %d %v", code, v)
	}
	msgs := `"messages":[{"role":"user","content":"Lily had a red ball."}],"temperature":0,"max_tokens":5`
	code, v = post(t, hs.URL+"/v1/chat/completions", `{`+msgs+`}`)
	first := content(v)
	if code != 200 {
		t.Fatalf("chat: %d %v", code, v)
	}
	code, v = post(t, hs.URL+"/v1/chat/completions", `{`+msgs+`}`)
	prompt := int(v["usage"].(map[string]any)["prompt_tokens"].(float64))
	if code != 200 || content(v) != first || cachedTokens(t, v) != prompt-1 {
		t.Fatalf("the same chat again: %d %v (first reply %q): want %d cached", code, v, first, prompt-1)
	}
	if code, v = post(t, hs.URL+"/v1/completions", `{"prompt":"x","cache_prompt":1}`); code != 400 {
		t.Fatalf("cache_prompt 1: %d %v", code, v)
	}
	hs.Close()
	if !strings.Contains(logged.String(), "prompt (0 cached) + 6 completion tokens") ||
		!strings.Contains(logged.String(), fmt.Sprintf("%d prompt (%d cached) + 6", len(ids2), want)) {
		t.Errorf("the request log does not say what was cached:\n%s", logged.String())
	}
}

func httpPost(url, body string) (*http.Response, error) {
	return http.Post(url, "application/json", strings.NewReader(body))
}
