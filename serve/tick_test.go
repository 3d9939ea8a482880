package serve

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// recorder is a backend that logs every tick's feeds (slot, token count,
// logits asked) and sleeps delay per tick, so a decoding request spans
// many ticks.
type recorder struct {
	backend
	delay time.Duration
	mu    sync.Mutex
	ticks [][]slotFeed
}

func (r *recorder) feed(fs []slotFeed) ([][]float32, []error) {
	time.Sleep(r.delay)
	tick := make([]slotFeed, len(fs))
	for i, f := range fs {
		tick[i] = slotFeed{slot: f.slot, toks: append([]int(nil), f.toks...), logits: f.logits}
	}
	r.mu.Lock()
	r.ticks = append(r.ticks, tick)
	r.mu.Unlock()
	return r.backend.feed(fs)
}

// TestPromptRidesDecodeTick: a prompt arriving while another request
// decodes is fed in the same ticks as the decoding slot's tokens (one pass
// over the weights, no prefill pass of its own), in chunks that keep each
// tick within tickColumns, the logits asked only after its last chunk; both
// replies equal the engine stepped alone.
func TestPromptRidesDecodeTick(t *testing.T) {
	rec := &recorder{delay: 3 * time.Millisecond}
	_, hs := startServer(t, Config{Parallel: 2}, func(b backend) backend { rec.backend = b; return rec })
	const long = "Once upon a time there was a little girl called Lily. She liked to play in the park with her friends every day."
	resp, err := http.Post(hs.URL+"/v1/completions", "application/json",
		strings.NewReader(`{"prompt":"Once upon a time","temperature":0,"max_tokens":120,"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	line, err := br.ReadString('\n') // the first token: slot 0 decodes
	if err != nil {
		t.Fatal(err)
	}
	code, v := post(t, hs.URL+"/v1/completions", `{"prompt":"`+long+`","temperature":0,"max_tokens":8}`)
	if got := v["choices"].([]any)[0].(map[string]any)["text"]; code != 200 || got != greedyText(t, long, 8) {
		t.Fatalf("the second request: %d %v", code, v)
	}
	events := sseEvents(t, io.MultiReader(strings.NewReader(line), br))
	var first strings.Builder
	for _, e := range events {
		if cs, _ := e["choices"].([]any); len(cs) == 1 {
			first.WriteString(cs[0].(map[string]any)["text"].(string))
		}
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	fed, chunks := 0, 0
	for n, tick := range rec.ticks {
		cols, decode0, prompt1 := 0, false, -1
		for k, f := range tick {
			cols += len(f.toks)
			decode0 = decode0 || f.slot == 0 && len(f.toks) == 1 && f.logits
			if f.slot == 1 && fed < len(long)+1 {
				prompt1 = k
			}
		}
		if cols > tickColumns {
			t.Errorf("tick %d feeds %d tokens, more than %d", n, cols, tickColumns)
		}
		if prompt1 < 0 {
			continue
		}
		f := tick[prompt1]
		chunks++
		fed += len(f.toks)
		if !decode0 {
			t.Errorf("tick %d feeds the new prompt (%d tokens) without the decoding slot's token: %+v", n, len(f.toks), tick)
		}
		if f.logits != (fed == len(long)+1) {
			t.Errorf("tick %d: logits %v with %d of %d prompt tokens fed", n, f.logits, fed, len(long)+1)
		}
	}
	if fed != len(long)+1 || chunks < 2 {
		t.Errorf("the prompt of %d tokens was fed as %d tokens in %d ticks", len(long)+1, fed, chunks)
	}
	rec.mu.Unlock()
	if want := greedyText(t, "Once upon a time", 120); first.String() != want {
		t.Errorf("the first request: %q, alone %q", first.String(), want)
	}
	rec.mu.Lock()
}

// syncBuffer is a request log the handlers may write concurrently.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// gated holds every tick after the first two until open is closed.
type gated struct {
	*recorder
	open chan struct{}
}

func (g gated) feed(fs []slotFeed) ([][]float32, []error) {
	g.mu.Lock()
	n := len(g.ticks)
	g.mu.Unlock()
	if n >= 2 {
		<-g.open
	}
	return g.recorder.feed(fs)
}

// TestRequestLogCountsDecodeTicks: each request's log line counts the
// ticks that fed it and, apart, those that fed no prompt chunk (a prompt
// riding in a tick makes it many times longer than a decode step) — both
// as the backend saw them: a decoding request whose tick carried another
// request's prompt has fewer decode-only ticks than ticks.
func TestRequestLogCountsDecodeTicks(t *testing.T) {
	rec := &recorder{}
	open := make(chan struct{})
	var logged syncBuffer
	s, hs := startServer(t, Config{Parallel: 2, Log: &logged}, func(b backend) backend { rec.backend = b; return gated{rec, open} })
	resp, err := http.Post(hs.URL+"/v1/completions", "application/json",
		strings.NewReader(`{"prompt":"Once upon a time","temperature":0,"max_tokens":40,"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	if _, err := br.ReadString('\n'); err != nil { // slot 0 decodes
		t.Fatal(err)
	}
	second := make(chan int)
	go func() {
		code, _ := post(t, hs.URL+"/v1/completions", `{"prompt":"Lily liked to play in the park with her friends every day.","temperature":0,"max_tokens":8}`)
		second <- code
	}()
	// Queued, or admitted, while slot 0's third tick is held: either way
	// one tick carries its prompt beside slot 0's decode token.
	for s.sched.queued() == 0 && s.sched.busy.Load() < 2 {
		time.Sleep(time.Millisecond)
	}
	close(open)
	if code := <-second; code != 200 {
		t.Fatalf("the second request: status %d", code)
	}
	io.Copy(io.Discard, br)
	resp.Body.Close()
	hs.Close() // waits for the handlers, so both lines are logged
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for slot, completion := range []int{40, 8} {
		ticks, decode := 0, 0
		for _, tick := range rec.ticks {
			in, prompt := false, false
			for _, f := range tick {
				in = in || f.slot == slot
				prompt = prompt || len(f.toks) > 1
			}
			if in {
				ticks++
				if !prompt {
					decode++
				}
			}
		}
		if slot == 0 && decode != ticks-2 {
			t.Fatalf("slot 0: %d ticks, %d without a prompt; want its own prompt's and one carrying the second request's", ticks, decode)
		}
		want := fmt.Sprintf(" + %d completion tokens, length, ", completion)
		var line string
		for _, l := range strings.Split(logged.String(), "\n") {
			if strings.Contains(l, want) {
				line = l
			}
		}
		if !strings.Contains(line, fmt.Sprintf(", %d ticks × ", ticks)) || !strings.Contains(line, fmt.Sprintf(" (%d without a prompt: ", decode)) {
			t.Errorf("slot %d: %d ticks, %d without a prompt; logged %q", slot, ticks, decode, line)
		}
	}
}
