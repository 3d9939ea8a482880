// Command serveload measures an OpenAI-compatible server under concurrent
// greedy clients — cflowc serve or llama-server, the same requests for
// both: for each concurrency level, that many clients each stream
// -requests text completions of a token-id prompt (BOS, then random ids
// seeded by the request's number: the same requests for every server, no
// tokenizer involved, no prompt a server could have cached) with max_tokens and
// ignore_eos, and it reports aggregate tok/s (completion tokens ÷ wall
// time of the level: prompt processing, decode and HTTP together), the
// aggregate decode tok/s (clients × the median request's decode rate after
// its first token) and the p50/p99 time to first token.
//
//	go run ./bench/serveload -url http://127.0.0.1:8080/v1 -clients 1,2,4,8
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Level is one concurrency level's result (one JSON line with -json).
type Level struct {
	Server      string  `json:"server"`
	Clients     int     `json:"clients"`
	Requests    int     `json:"requests"`
	Tokens      int     `json:"completion_tokens"`
	WallS       float64 `json:"wall_s"`
	TokS        float64 `json:"aggregate_tok_s"`
	TTFTp50ms   float64 `json:"ttft_p50_ms"`
	TTFTp99ms   float64 `json:"ttft_p99_ms"`
	PerReqTokS  float64 `json:"per_request_tok_s_median"`
	DecodeTokS  float64 `json:"decode_tok_s"`
	PromptToken int     `json:"prompt_tokens"`
}

func main() {
	url := flag.String("url", "http://127.0.0.1:8080/v1", "the server's /v1 base URL")
	model := flag.String("model", "", "model name to send (cflowc serve: the file's base name; llama-server ignores it)")
	name := flag.String("name", "server", "label for the output rows")
	levels := flag.String("clients", "1,2,4,8", "concurrency levels")
	requests := flag.Int("requests", 4, "requests per client per level")
	maxTokens := flag.Int("max-tokens", 64, "completion tokens per request")
	promptLen := flag.Int("prompt-len", 32, "prompt tokens (BOS, then seeded random ids)")
	vocab := flag.Int("vocab", 32000, "vocabulary the random prompt ids are drawn from")
	bos := flag.Int("bos", 1, "BOS id")
	warmup := flag.Int("warmup", 1, "untimed requests before the first level")
	asJSON := flag.Bool("json", false, "one JSON object per level")
	flag.Parse()
	var cs []int
	for _, f := range strings.Split(*levels, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			log.Fatalf("-clients: %q is not a positive count", f)
		}
		cs = append(cs, n)
	}
	if *requests < 1 || *maxTokens < 1 || *promptLen < 1 || *vocab < 3 {
		log.Fatal("-requests, -max-tokens and -prompt-len must be ≥ 1, -vocab ≥ 3")
	}
	// Every request gets its own prompt (seeded by its number), so no
	// server can answer from a cached prompt (llama-server reuses a slot's
	// KV cache for a repeated prefix).
	var seq atomic.Uint64
	body := func() []byte {
		rng := rand.New(rand.NewPCG(1, seq.Add(1)))
		prompt := []int{*bos}
		for len(prompt) < *promptLen {
			prompt = append(prompt, 3+rng.IntN(*vocab-3))
		}
		b, _ := json.Marshal(map[string]any{"model": *model, "prompt": prompt, "max_tokens": *maxTokens,
			"temperature": 0, "stream": true, "ignore_eos": true, "stream_options": map[string]bool{"include_usage": true}})
		return b
	}
	endpoint := strings.TrimSuffix(*url, "/") + "/completions"
	for range *warmup {
		if _, err := one(endpoint, body()); err != nil {
			log.Fatalf("warm-up request: %v", err)
		}
	}
	if !*asJSON {
		fmt.Printf("%-10s %7s %8s %7s %9s %12s %12s %12s %14s\n", "server", "clients", "requests", "tokens", "wall s", "agg tok/s", "decode tok/s", "TTFT p50 ms", "TTFT p99 ms")
	}
	for _, c := range cs {
		lv, err := level(endpoint, body, c, *requests)
		if err != nil {
			log.Fatalf("%d clients: %v", c, err)
		}
		lv.Server, lv.PromptToken = *name, *promptLen
		if *asJSON {
			json.NewEncoder(os.Stdout).Encode(lv)
		} else {
			fmt.Printf("%-10s %7d %8d %7d %9.2f %12.2f %12.2f %12.1f %14.1f\n", lv.Server, lv.Clients, lv.Requests, lv.Tokens, lv.WallS, lv.TokS, lv.DecodeTokS, lv.TTFTp50ms, lv.TTFTp99ms)
		}
	}
}

// client opens a connection per request: llama-server closes idle
// keep-alive connections, and a POST on a closed one is not retried.
var client = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

// result is one request's measurements.
type result struct {
	ttft   time.Duration
	total  time.Duration
	tokens int
}

func level(endpoint string, body func() []byte, clients, requests int) (Level, error) {
	var mu sync.Mutex
	var rs []result
	var firstErr error
	var wg sync.WaitGroup
	t0 := time.Now()
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range requests {
				r, err := one(endpoint, body())
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				rs = append(rs, r)
				mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	wall := time.Since(t0)
	if firstErr != nil {
		return Level{}, firstErr
	}
	lv := Level{Clients: clients, Requests: len(rs), WallS: wall.Seconds()}
	var ttft, per []float64
	for _, r := range rs {
		lv.Tokens += r.tokens
		ttft = append(ttft, float64(r.ttft.Microseconds())/1e3)
		if d := r.total - r.ttft; d > 0 && r.tokens > 1 {
			per = append(per, float64(r.tokens-1)/d.Seconds())
		}
	}
	lv.TokS = float64(lv.Tokens) / wall.Seconds()
	lv.TTFTp50ms, lv.TTFTp99ms = quantile(ttft, 0.5), quantile(ttft, 0.99)
	lv.PerReqTokS = quantile(per, 0.5)
	lv.DecodeTokS = float64(clients) * lv.PerReqTokS
	return lv, nil
}

// quantile is the nearest-rank quantile.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	i := int(q*float64(len(s))+0.999999) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// one streams a completion and returns when [DONE] arrives: TTFT is the
// first chunk that carries a choice; tokens are the usage's completion
// tokens (or the chunk count when the server sends no usage).
func one(endpoint string, body []byte) (result, error) {
	var r result
	t0 := time.Now()
	resp, err := client.Post(endpoint, "application/json", bytes.NewReader(body))
	if err != nil {
		return r, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		return r, fmt.Errorf("status %d: %s", resp.StatusCode, b.String())
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	chunks, usage := 0, -1
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			r.total = time.Since(t0)
			r.tokens = chunks
			if usage >= 0 {
				r.tokens = usage
			}
			return r, nil
		}
		var v struct {
			Choices []json.RawMessage
			Usage   *struct {
				CompletionTokens int `json:"completion_tokens"`
			}
		}
		if err := json.Unmarshal([]byte(data), &v); err != nil {
			return r, fmt.Errorf("chunk %q: %v", data, err)
		}
		if len(v.Choices) > 0 {
			if chunks == 0 {
				r.ttft = time.Since(t0)
			}
			chunks++
		}
		if v.Usage != nil {
			usage = v.Usage.CompletionTokens
		}
	}
	return r, fmt.Errorf("stream ended without [DONE]: %v", sc.Err())
}
