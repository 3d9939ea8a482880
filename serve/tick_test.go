package serve

import (
	"bufio"
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
