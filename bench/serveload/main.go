// Command serveload measures an OpenAI-compatible server under concurrent
// greedy (or -temperature) clients — cflowc serve or llama-server, the same requests for
// both: for each concurrency level, that many clients start together and
// each streams -requests text completions one after another (a token-id
// prompt: BOS, then random ids seeded by the request's number: the same
// requests for every server, no tokenizer involved, no prompt a server
// could have cached) with max_tokens and ignore_eos. Per level it reports:
//
//   - aggregate tok/s: completion tokens ÷ wall time of the level, prompt
//     processing, decode and HTTP together (end to end);
//
//   - steady decode tok/s: the decode throughput while every client's
//     request is past its first token (so no prompt is being processed):
//     clients ÷ the mean interval between consecutive tokens of a request,
//     over the intervals that lie wholly inside such a period — N streams
//     each get one token per decode step, so this is N tokens per step;
//
//   - client decode tok/s: clients × the median request's rate after its
//     first token (what a client sees: it includes the time other
//     clients' prompts took from its own decoding);
//
//   - p50/p99 time to first token.
//
//     go run ./bench/serveload -url http://127.0.0.1:8080/v1 -clients 1,2,4,8
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
	Server     string  `json:"server"`
	Clients    int     `json:"clients"`
	Requests   int     `json:"requests"`
	Tokens     int     `json:"completion_tokens"`
	WallS      float64 `json:"wall_s"`
	TokS       float64 `json:"aggregate_tok_s"`
	TTFTp50ms  float64 `json:"ttft_p50_ms"`
	TTFTp99ms  float64 `json:"ttft_p99_ms"`
	PerReqTokS float64 `json:"per_request_tok_s_median"`
	// DecodeTokS is the client decode rate: clients × PerReqTokS (other
	// clients' prompt processing included).
	DecodeTokS float64 `json:"decode_tok_s"`
	// SteadyTokS is the steady decode rate (every client decoding, no
	// prompt in flight), measured over SteadyIntervals token intervals
	// within SteadyS seconds of such periods; 0 when there were none.
	SteadyTokS      float64 `json:"steady_decode_tok_s"`
	SteadyS         float64 `json:"steady_window_s"`
	SteadyIntervals int     `json:"steady_intervals"`
	PromptToken     int     `json:"prompt_tokens"`
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
	temperature := flag.Float64("temperature", 0, "sampling temperature (0: greedy; > 0 samples, each request seeded by its number)")
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
	if *requests < 1 || *maxTokens < 1 || *promptLen < 1 || *vocab < 3 || !(*temperature >= 0 && *temperature <= 2) {
		log.Fatal("-requests, -max-tokens and -prompt-len must be ≥ 1, -vocab ≥ 3, -temperature in [0, 2]")
	}
	// Every request gets its own prompt (seeded by its number), so no
	// server can answer from a cached prompt (llama-server reuses a slot's
	// KV cache for a repeated prefix).
	var seq atomic.Uint64
	body := func() []byte {
		n := seq.Add(1)
		rng := rand.New(rand.NewPCG(1, n))
		prompt := []int{*bos}
		for len(prompt) < *promptLen {
			prompt = append(prompt, 3+rng.IntN(*vocab-3))
		}
		b, _ := json.Marshal(map[string]any{"model": *model, "prompt": prompt, "max_tokens": *maxTokens, "seed": n,
			"temperature": *temperature, "stream": true, "ignore_eos": true, "stream_options": map[string]bool{"include_usage": true}})
		return b
	}
	endpoint := strings.TrimSuffix(*url, "/") + "/completions"
	for range *warmup {
		if _, err := one(endpoint, body(), time.Now()); err != nil {
			log.Fatalf("warm-up request: %v", err)
		}
	}
	if !*asJSON {
		fmt.Printf("%-10s %7s %8s %7s %9s %10s %13s %13s %12s %12s\n", "server", "clients", "requests", "tokens", "wall s", "agg tok/s", "steady dec/s", "client dec/s", "TTFT p50 ms", "TTFT p99 ms")
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
			fmt.Printf("%-10s %7d %8d %7d %9.2f %10.2f %13.2f %13.2f %12.1f %12.1f\n", lv.Server, lv.Clients, lv.Requests, lv.Tokens, lv.WallS, lv.TokS, lv.SteadyTokS, lv.DecodeTokS, lv.TTFTp50ms, lv.TTFTp99ms)
		}
	}
}

// client opens a connection per request: llama-server closes idle
// keep-alive connections, and a POST on a closed one is not retried.
var client = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

// result is one request's measurements. at holds when each token arrived,
// as offsets from the level's start: one entry per streamed chunk that
// carries a token (see one).
type result struct {
	sent   time.Duration
	ttft   time.Duration
	total  time.Duration
	tokens int
	at     []time.Duration
}

func level(endpoint string, body func() []byte, clients, requests int) (Level, error) {
	var mu sync.Mutex
	var rs []result
	var firstErr error
	var wg sync.WaitGroup
	start := make(chan struct{}) // the clients start together
	var t0 time.Time             // the level's start, set as start closes
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for range requests {
				r, err := one(endpoint, body(), t0)
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
	t0 = time.Now()
	close(start)
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
	lv.SteadyTokS, lv.SteadyS, lv.SteadyIntervals = steady(rs, clients)
	return lv, nil
}

// steady is the decode throughput while all clients decode: the periods
// when clients requests are past their first token and not done (each
// client has one request at a time, so no prompt is in flight then), and
// in them every interval between two consecutive tokens of one request
// that lies wholly inside one period. Each stream gets one token per
// decode step, so clients ÷ the mean such interval is the tokens per second
// of steps that serve every client and nothing else. An interval that
// began before a period (a step that also fed a prompt) is left out.
// It returns that rate, the periods' total length in seconds and the
// intervals counted.
func steady(rs []result, clients int) (tokS, windowS float64, intervals int) {
	type edge struct {
		t time.Duration
		d int
	}
	var es []edge
	for _, r := range rs {
		if len(r.at) > 0 && r.sent+r.total > r.at[0] {
			es = append(es, edge{r.at[0], +1}, edge{r.sent + r.total, -1})
		}
	}
	// Ends before starts at the same instant: a period needs every client
	// decoding, never a client counted twice.
	sort.Slice(es, func(i, j int) bool { return es[i].t < es[j].t || es[i].t == es[j].t && es[i].d < es[j].d })
	var periods [][2]time.Duration
	n := 0
	for _, e := range es {
		n += e.d
		switch {
		case n == clients && e.d > 0:
			periods = append(periods, [2]time.Duration{e.t, -1})
		case n == clients-1 && e.d < 0 && len(periods) > 0 && periods[len(periods)-1][1] < 0:
			periods[len(periods)-1][1] = e.t
		}
	}
	var sum time.Duration
	for _, p := range periods {
		if p[1] < 0 {
			continue // cannot happen: every request ends
		}
		windowS += (p[1] - p[0]).Seconds()
		for _, r := range rs {
			for k := 1; k < len(r.at); k++ {
				if r.at[k-1] >= p[0] && r.at[k] < p[1] {
					sum += r.at[k] - r.at[k-1]
					intervals++
				}
			}
		}
	}
	if intervals == 0 || sum <= 0 {
		return 0, windowS, 0
	}
	return float64(clients) * float64(intervals) / sum.Seconds(), windowS, intervals
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
// tokens (or the count of token chunks when the server sends no usage).
// A token chunk is one whose choice has no finish reason, or the finishing
// chunk when the usage counts a token more than the chunks so far (cflowc
// puts a last token without text in its finishing chunk, llama-server
// sends an empty one). Arrival times are offsets from level.
func one(endpoint string, body []byte, level time.Time) (result, error) {
	var r result
	t0 := time.Now()
	r.sent = t0.Sub(level)
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
	finished := time.Duration(-1)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		now := time.Now()
		if data == "[DONE]" {
			r.total = now.Sub(t0)
			r.tokens = len(r.at)
			if usage >= 0 {
				r.tokens = usage
			}
			if finished >= 0 && len(r.at) < r.tokens {
				r.at = append(r.at, finished)
			}
			return r, nil
		}
		var v struct {
			Choices []struct {
				FinishReason *string `json:"finish_reason"`
			}
			Usage *struct {
				CompletionTokens int `json:"completion_tokens"`
			}
		}
		if err := json.Unmarshal([]byte(data), &v); err != nil {
			return r, fmt.Errorf("chunk %q: %v", data, err)
		}
		if len(v.Choices) > 0 {
			if chunks == 0 {
				r.ttft = now.Sub(t0)
			}
			chunks++
			if v.Choices[0].FinishReason == nil {
				r.at = append(r.at, now.Sub(level))
			} else {
				finished = now.Sub(level)
			}
		}
		if v.Usage != nil {
			usage = v.Usage.CompletionTokens
		}
	}
	return r, fmt.Errorf("stream ended without [DONE]: %v", sc.Err())
}
