package serve

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestNoSpurious429: 10 simultaneous requests at --parallel 4 --queue 6
// are all admitted, however many the scheduler has picked up (here: one,
// the backend is held); the 11th is the first 429, and all ten are served.
func TestNoSpurious429(t *testing.T) {
	for round := range 3 {
		g := &gate{open: make(chan struct{})}
		s, hs := startServer(t, Config{Parallel: 4, Queue: 6}, func(b backend) backend { g.backend = b; return g })
		var wg sync.WaitGroup
		codes := make(chan int, 10)
		start := make(chan struct{})
		for range 10 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				resp, err := http.Post(hs.URL+"/v1/completions", "application/json", strings.NewReader(`{"prompt":"Once","max_tokens":3}`))
				if err != nil {
					codes <- -1
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				codes <- resp.StatusCode
			}()
		}
		close(start)
		until(t, "ten requests admitted", func() bool { return s.gate.n.Load() == 10 || len(codes) > 0 })
		if len(codes) > 0 {
			t.Fatalf("round %d: a request within capacity was answered %d before any was served", round, <-codes)
		}
		if code, _ := post(t, hs.URL+"/v1/completions", `{"prompt":"Once","max_tokens":3}`); code != http.StatusTooManyRequests {
			t.Fatalf("round %d: the 11th request: %d, want 429", round, code)
		}
		close(g.open)
		wg.Wait()
		close(codes)
		for c := range codes {
			if c != 200 {
				t.Fatalf("round %d: a request within capacity got %d", round, c)
			}
		}
	}
}

// TestQueuedHangUpFreesPlace: queued clients that go away free their
// places at once (health's "queued" drops to 0, new requests are
// admitted), not when the scheduler would have reached them.
func TestQueuedHangUpFreesPlace(t *testing.T) {
	g := &gate{open: make(chan struct{})}
	s, hs := startServer(t, Config{Parallel: 1, Queue: 2}, func(b backend) backend { g.backend = b; return g })
	body := `{"prompt":"Once","max_tokens":3}`
	var wg sync.WaitGroup
	send := func(ctx context.Context) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequestWithContext(ctx, "POST", hs.URL+"/v1/completions", strings.NewReader(body))
			if resp, err := http.DefaultClient.Do(req); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
	send(context.Background()) // holds the slot (the backend is shut)
	until(t, "the slot taken", func() bool { return s.sched.busy.Load() == 1 })
	ctx, leave := context.WithCancel(context.Background())
	send(ctx)
	send(ctx)
	until(t, "two queued", func() bool { return s.sched.queued() == 2 })
	leave()
	until(t, "the queue emptied by the hang-ups", func() bool { return s.sched.queued() == 0 && s.gate.n.Load() == 1 })
	_, v := getJSON(t, hs.URL+"/health")
	if v["queued"].(float64) != 0 {
		t.Fatalf("health after the hang-ups: %v", v)
	}
	send(context.Background())
	send(context.Background())
	until(t, "two new requests admitted", func() bool { return s.gate.n.Load() == 3 })
	close(g.open)
	wg.Wait()
}

// TestHugeMessageRefusedAtOnce: at --ctx 256 an 8 MiB message is refused
// in under 100 ms with under 50 MB allocated, before any rendering or
// tokenizing (it took 7.8 s and ~480 MB); so are a body that fits the
// body limit but not the context, and a flood of tiny messages.
func TestHugeMessageRefusedAtOnce(t *testing.T) {
	s, hs := startServer(t, Config{Parallel: 1, Queue: 1, Ctx: 256}, nil)
	huge := `{"messages":[{"role":"user","content":"` + strings.Repeat("a", 8<<20) + `"}]}`
	mid := `{"messages":[{"role":"user","content":"` + strings.Repeat("a", int(s.lim.bodyBytes)/2) + `"}]}`
	tiny := `{"messages":[` + strings.Repeat(`{"role":"user","content":""},`, 240000) + `{"role":"user","content":""}]}`
	many := `{"messages":[` + strings.Repeat(`{"role":"user","content":"a"},`, 300) + `{"role":"user","content":""}]}`
	for _, c := range []struct {
		name, body string
		status     int
	}{
		{"8 MiB message", huge, http.StatusRequestEntityTooLarge},
		{"a message within the body limit, beyond the context", mid, http.StatusBadRequest},
		{"240,000 empty messages", tiny, http.StatusRequestEntityTooLarge},
		{"300 messages", many, http.StatusBadRequest},
	} {
		// The best of three tries: the machine is shared, and one try can
		// lose its CPU for longer than the bound.
		var took time.Duration
		var alloc uint64
		for try := 0; try < 3; try++ {
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			t0 := time.Now()
			resp, err := http.Post(hs.URL+"/v1/chat/completions", "application/json", strings.NewReader(c.body))
			took = time.Since(t0)
			runtime.ReadMemStats(&after)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			alloc = after.TotalAlloc - before.TotalAlloc
			if resp.StatusCode != c.status || !strings.Contains(string(b), `"error"`) {
				t.Errorf("%s: %d %s, want %d", c.name, resp.StatusCode, b, c.status)
			}
			if took < 100*time.Millisecond && alloc < 50<<20 {
				break
			}
		}
		if took > 100*time.Millisecond || alloc > 50<<20 {
			t.Errorf("%s: refused after %v with %.1f MB allocated; want < 100 ms, < 50 MB", c.name, took, float64(alloc)/1e6)
		}
		t.Logf("%s: refused in %v, %.2f MB allocated", c.name, took, float64(alloc)/1e6)
	}
	// Within every byte bound yet longer than the context once rendered
	// (200 one-byte messages joined by newlines): tokenizing stops at
	// ctx + 1 tokens and the prompt is refused.
	turns := `{"messages":[` + strings.Repeat(`{"role":"user","content":"a"},`, 199) + `{"role":"user","content":"a"}]}`
	if code, v := post(t, hs.URL+"/v1/chat/completions", turns); code != 400 || v["error"].(map[string]any)["code"] != "context_length_exceeded" ||
		!strings.Contains(v["error"].(map[string]any)["message"].(string), "more than 256 tokens") {
		t.Errorf("200 turns at ctx 256: %d %v", code, v)
	}
	if code, v := post(t, hs.URL+"/v1/completions", `{"prompt":"`+strings.Repeat("a", 4000)+`"}`); code != 400 ||
		v["error"].(map[string]any)["code"] != "context_length_exceeded" {
		t.Errorf("a 4000-byte prompt at ctx 256: %d %v", code, v)
	}
}

func getJSON(t testing.TB, url string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v map[string]any
	b, _ := io.ReadAll(resp.Body)
	if err := jsonUnmarshal(b, &v); err != nil {
		t.Fatal(fmt.Errorf("%s: %q: %v", url, b, err))
	}
	return resp.StatusCode, v
}
