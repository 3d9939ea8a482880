package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cflow-dev/cflow/quant"
)

// TestLoad: 8 concurrent loopback clients × 10 greedy requests each on
// 4 slots, bounded to a minute: zero errors, and every reply equals the
// single-client reply for its prompt (batching never changes a result).
func TestLoad(t *testing.T) {
	if quant.DefaultKernel().Name() == "scalar" {
		t.Skip("scalar kernel (the noasm build): 800 decode steps would take a minute; the scheduler under load is the same code the SIMD build tests")
	}
	const clients, requests, tokens = 8, 10, 16
	_, hs := startServer(t, Config{Parallel: 4, Queue: clients}, nil)
	prompts := []string{"Once upon a time", "The dog", "Lily and Tom"}
	want := map[string]string{}
	for _, p := range prompts {
		want[p] = greedyText(t, p, tokens)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, clients*requests)
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range requests {
				p := prompts[(c+r)%len(prompts)]
				body := fmt.Sprintf(`{"messages":[{"role":"user","content":%q}],"temperature":0,"max_tokens":%d,"stream":%v}`, p, tokens, r%2 == 0)
				got, err := ask(ctx, hs.URL+"/v1/chat/completions", body)
				if err == nil && got != want[p] {
					err = fmt.Errorf("client %d request %d: %q, alone %q", c, r, got, want[p])
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// ask sends one chat request and returns its content, streamed or not.
func ask(ctx context.Context, url, body string) (string, error) {
	req, _ := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return "", fmt.Errorf("status %d", resp.StatusCode)
	}
	if resp.Header.Get("Content-Type") != "text/event-stream" {
		var v struct {
			Choices []struct{ Message struct{ Content string } }
		}
		if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || len(v.Choices) != 1 {
			return "", fmt.Errorf("answer: %v", err)
		}
		return v.Choices[0].Message.Content, nil
	}
	var b strings.Builder
	dec := sseDecoder{r: resp.Body}
	for {
		data, err := dec.next()
		if err != nil {
			return "", err
		}
		if data == "[DONE]" {
			return b.String(), nil
		}
		var v struct {
			Choices []struct{ Delta struct{ Content string } }
		}
		if err := json.Unmarshal([]byte(data), &v); err != nil {
			return "", err
		}
		if len(v.Choices) == 1 {
			b.WriteString(v.Choices[0].Delta.Content)
		}
	}
}

// TestSampledTogetherEqualAlone: seeded temperature samples (top-k, a
// repetition penalty, log-probabilities) decoded four at a time — the
// sequences of a tick sample in parallel — are each exactly the reply the
// same request gets alone.
func TestSampledTogetherEqualAlone(t *testing.T) {
	_, hs := startServer(t, Config{Parallel: 4}, nil)
	prompts := []string{"Once upon a time", "The dog", "Lily and Tom", "The sun"}
	body := func(i int) string {
		return fmt.Sprintf(`{"messages":[{"role":"user","content":%q}],"temperature":1,"top_k":40,"repeat_penalty":1.1,"seed":%d,"max_tokens":24,"logprobs":true,"top_logprobs":2,"stream":%v}`,
			prompts[i], 100+i, i%2 == 0)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	want := make([]string, len(prompts))
	for i := range prompts {
		got, err := ask(ctx, hs.URL+"/v1/chat/completions", body(i))
		if err != nil {
			t.Fatal(err)
		}
		want[i] = got
	}
	for round := range 2 {
		var wg sync.WaitGroup
		got := make([]string, len(prompts))
		errs := make([]error, len(prompts))
		for i := range prompts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				got[i], errs[i] = ask(ctx, hs.URL+"/v1/chat/completions", body(i))
			}()
		}
		wg.Wait()
		for i := range prompts {
			if errs[i] != nil || got[i] != want[i] {
				t.Errorf("round %d, request %d together: %q (%v); alone %q", round, i, got[i], errs[i], want[i])
			}
		}
	}
}
