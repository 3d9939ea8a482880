package serve

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const onceUpon = `{"model":"demo","messages":[{"role":"user","content":"Once upon a time"}],"temperature":0,"max_tokens":40`

// TestChatGreedyEqualsRun: a greedy chat reply, streamed or not, and the
// text completion of the same prompt equal the engine stepped by hand
// (what `cflowc run --temperature 0` prints), with OpenAI's usage and
// finish_reason; the stream carries one chunk per token.
func TestChatGreedyEqualsRun(t *testing.T) {
	_, hs := startServer(t, Config{Parallel: 2}, nil)
	want := greedyText(t, "Once upon a time", 40)
	code, v := post(t, hs.URL+"/v1/chat/completions", onceUpon+"}")
	if code != 200 || content(v) != want {
		t.Fatalf("chat: %d %q, want %q", code, content(v), want)
	}
	ch := v["choices"].([]any)[0].(map[string]any)
	u := v["usage"].(map[string]any)
	if ch["finish_reason"] != "length" || u["prompt_tokens"] != 17.0 || u["completion_tokens"] != 40.0 || u["total_tokens"] != 57.0 || v["object"] != "chat.completion" {
		t.Fatalf("chat answer %v", v)
	}
	code, v = post(t, hs.URL+"/v1/completions", `{"prompt":"Once upon a time","temperature":0,"max_tokens":40}`)
	if got := v["choices"].([]any)[0].(map[string]any)["text"]; code != 200 || got != want {
		t.Fatalf("completion: %d %q", code, got)
	}
	resp, err := http.Post(hs.URL+"/v1/chat/completions", "application/json", strings.NewReader(onceUpon+`,"stream":true,"stream_options":{"include_usage":true}}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("stream content type %q", ct)
	}
	ev := sseEvents(t, resp.Body)
	var text strings.Builder
	chunks := 0
	for _, e := range ev[:len(ev)-2] {
		d := e["choices"].([]any)[0].(map[string]any)["delta"].(map[string]any)
		if c, _ := d["content"].(string); c != "" {
			text.WriteString(c)
			chunks++
		}
	}
	last := ev[len(ev)-2]["choices"].([]any)[0].(map[string]any)
	if text.String() != want || chunks != 40 || last["finish_reason"] != "length" || ev[0]["object"] != "chat.completion.chunk" {
		t.Fatalf("stream: %d chunks %q, last %v", chunks, text.String(), last)
	}
	if u := ev[len(ev)-1]["usage"].(map[string]any); u["completion_tokens"] != 40.0 {
		t.Fatalf("stream usage %v", u)
	}
}

// TestStopSeedLogprobs: a stop string cut from the greedy reply ends it
// just before (finish_reason stop, the string not sent); one seed gives
// one sample twice; logprobs come back in OpenAI's shape.
func TestStopSeedLogprobs(t *testing.T) {
	_, hs := startServer(t, Config{Parallel: 2}, nil)
	want := greedyText(t, "Once upon a time", 40)
	stop := want[14:19]
	_, v := post(t, hs.URL+"/v1/chat/completions", onceUpon+fmt.Sprintf(`,"stop":["zzz",%q]}`, stop))
	if got := content(v); got != want[:strings.Index(want, stop)] || v["choices"].([]any)[0].(map[string]any)["finish_reason"] != "stop" {
		t.Fatalf("stop %q: %q (%v)", stop, got, v["choices"])
	}
	sample := func(seed int) string {
		_, v := post(t, hs.URL+"/v1/chat/completions", fmt.Sprintf(`{"messages":[{"role":"user","content":"Once upon a time"}],"temperature":1,"top_k":40,"seed":%d,"max_tokens":40}`, seed))
		return content(v)
	}
	if a, b, c := sample(5), sample(5), sample(6); a != b || a == c {
		t.Fatalf("seed 5 twice: %q / %q; seed 6: %q", a, b, c)
	}
	// A huge max_tokens is bounded by the context, not allocated, and
	// gives exactly what sending none does (the room the context leaves:
	// prompt + completion = ctx).
	_, v = post(t, hs.URL+"/v1/completions", `{"prompt":"Once","max_tokens":2000000000,"temperature":0}`)
	_, def := post(t, hs.URL+"/v1/completions", `{"prompt":"Once","temperature":0}`)
	if u := v["usage"].(map[string]any); u["prompt_tokens"].(float64)+u["completion_tokens"].(float64) != 256 ||
		fmt.Sprint(v["usage"]) != fmt.Sprint(def["usage"]) || v["choices"].([]any)[0].(map[string]any)["text"] != def["choices"].([]any)[0].(map[string]any)["text"] {
		t.Fatalf("max_tokens 2e9: %v, none: %v", v["usage"], def["usage"])
	}
	_, v = post(t, hs.URL+"/v1/chat/completions", onceUpon[:len(onceUpon)-2]+`3,"logprobs":true,"top_logprobs":2}`)
	lp := v["choices"].([]any)[0].(map[string]any)["logprobs"].(map[string]any)["content"].([]any)
	if len(lp) != 3 {
		t.Fatalf("logprobs %v", lp)
	}
	for i, e := range lp {
		e := e.(map[string]any)
		top := e["top_logprobs"].([]any)
		if len(top) != 2 || top[0].(map[string]any)["token"] != e["token"] || e["logprob"].(float64) > 0 || e["token"] != want[i:i+1] {
			t.Fatalf("logprob entry %d: %v", i, e)
		}
	}
}

// TestMalformedRequests: bad bodies and values get OpenAI's error shape
// with the right status and the parameter named.
func TestMalformedRequests(t *testing.T) {
	_, hs := startServer(t, Config{Parallel: 1}, nil)
	msg := `"messages":[{"role":"user","content":"hi"}]`
	chat, compl := hs.URL+"/v1/chat/completions", hs.URL+"/v1/completions"
	for _, c := range []struct {
		url, body string
		status    int
		param     string
	}{
		{chat, ``, 400, ""},
		{chat, `{`, 400, ""},
		{chat, `[1]`, 400, ""},
		{chat, `{` + msg + `}{}`, 400, ""},
		{chat, `{"messages":[]}`, 400, "messages"},
		{chat, `{"messages":"hi"}`, 400, "messages"},
		{chat, `{"messages":[{"role":"wizard","content":"x"}]}`, 400, "messages[0].role"},
		{chat, `{"messages":[{"role":"user","content":[{"type":"image_url"}]}]}`, 400, "messages[0].content"},
		{chat, `{` + msg + `,"temperature":"hot"}`, 400, "temperature"},
		{chat, `{` + msg + `,"temperature":-1}`, 400, "temperature"},
		{chat, `{` + msg + `,"temperature":3}`, 400, "temperature"},
		{chat, `{` + msg + `,"temperature":1e999}`, 400, "temperature"},
		{chat, `{` + msg + `,"top_p":2}`, 400, "top_p"},
		{chat, `{` + msg + `,"top_k":-1}`, 400, "top_k"},
		{chat, `{` + msg + `,"min_p":1.5}`, 400, "min_p"},
		{chat, `{` + msg + `,"frequency_penalty":9}`, 400, "frequency_penalty"},
		{chat, `{` + msg + `,"presence_penalty":-9}`, 400, "presence_penalty"},
		{chat, `{` + msg + `,"repeat_penalty":0}`, 400, "repeat_penalty"},
		{chat, `{` + msg + `,"max_tokens":0}`, 400, "max_tokens"},
		{chat, `{` + msg + `,"max_completion_tokens":-5}`, 400, "max_completion_tokens"},
		{chat, `{` + msg + `,"seed":1.5}`, 400, "seed"},
		{chat, `{` + msg + `,"stop":""}`, 400, "stop"},
		{chat, `{` + msg + `,"stop":[1]}`, 400, "stop"},
		{chat, `{` + msg + `,"n":2}`, 400, "n"},
		{chat, `{` + msg + `,"logit_bias":{"5":1}}`, 400, "logit_bias"},
		{chat, `{` + msg + `,"tools":[{}]}`, 400, "tools"},
		{chat, `{` + msg + `,"top_logprobs":2}`, 400, "top_logprobs"},
		{chat, `{` + msg + `,"logprobs":true,"top_logprobs":30}`, 400, "top_logprobs"},
		{chat, `{` + msg + `,"model":"gpt-4o"}`, 404, "model"},
		{compl, `{"prompt":"` + strings.Repeat("a", 300) + `"}`, 400, ""},
		{compl, `{}`, 400, "prompt"},
		{compl, `{"prompt":[999]}`, 400, "prompt"},
		{compl, `{"prompt":["a","b"]}`, 400, "prompt"},
		{compl, `{"prompt":"a","logprobs":9}`, 400, "logprobs"},
		{hs.URL + "/v1/nothing", `{}`, 404, ""},
	} {
		code, v := post(t, c.url, c.body)
		e, ok := v["error"].(map[string]any)
		if code != c.status || !ok || e["message"] == "" || e["type"] == "" {
			t.Errorf("%s: %d %v, want %d", c.body, code, v, c.status)
			continue
		}
		if p, _ := e["param"].(string); p != c.param {
			t.Errorf("%s: param %q, want %q (%v)", c.body, p, c.param, e["message"])
		}
	}
	if _, v := post(t, compl, `{"prompt":"`+strings.Repeat("a", 300)+`"}`); v["error"].(map[string]any)["code"] != "context_length_exceeded" {
		t.Errorf("long prompt: %v", v)
	}
	resp, err := http.Get(chat)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET chat: %d", resp.StatusCode)
	}
}

// gate is a backend that waits for open before every call and sleeps
// delay per call, so tests can hold the scheduler in a known state.
type gate struct {
	backend
	open  chan struct{}
	delay atomic.Int64 // nanoseconds
}

func (g *gate) wait() {
	<-g.open
	time.Sleep(time.Duration(g.delay.Load()))
}

func (g *gate) feed(fs []slotFeed) ([][]float32, []error) {
	g.wait()
	return g.backend.feed(fs)
}

// until polls cond for up to 10 s.
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// TestQueueFullAndDisconnect: with one slot and a queue of one, a third
// request gets 429; clients that go away (one running, one queued) free
// the slot, and the next request is served in full.
func TestQueueFullAndDisconnect(t *testing.T) {
	g := &gate{open: make(chan struct{})}
	g.delay.Store(int64(5 * time.Millisecond))
	s, hs := startServer(t, Config{Parallel: 1, Queue: 1}, func(b backend) backend { g.backend = b; return g })
	long := `{"messages":[{"role":"user","content":"Once upon a time"}],"max_tokens":200,"stream":true}`
	var wg sync.WaitGroup
	start := func() context.CancelFunc {
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, "POST", hs.URL+"/v1/chat/completions", strings.NewReader(long))
		wg.Add(1)
		go func() {
			defer wg.Done()
			if resp, err := http.DefaultClient.Do(req); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
		return cancel
	}
	cancelA := start()
	until(t, "the first request to take the slot", func() bool { return s.sched.busy.Load() == 1 })
	cancelB := start()
	until(t, "the second request to queue", func() bool { return s.sched.queued() == 1 })
	code, v := post(t, hs.URL+"/v1/chat/completions", long)
	if code != http.StatusTooManyRequests || v["error"].(map[string]any)["type"] != "rate_limit_error" {
		t.Fatalf("third request: %d %v", code, v)
	}
	cancelB()
	close(g.open) // the running request decodes, 5 ms a token
	time.Sleep(50 * time.Millisecond)
	cancelA()
	until(t, "the slot and the queue to empty", func() bool { return s.sched.busy.Load() == 0 && s.sched.queued() == 0 })
	wg.Wait()
	g.delay.Store(0)
	if code, v := post(t, hs.URL+"/v1/chat/completions", onceUpon+"}"); code != 200 || content(v) != greedyText(t, "Once upon a time", 40) {
		t.Fatalf("after the disconnects: %d %v", code, v)
	}
}

// TestDrain: cancelling Serve's context (what SIGTERM does) lets a stream
// in flight finish with [DONE], refuses new connections, and returns nil.
func TestDrain(t *testing.T) {
	m, tk := demoModel(t)
	g := &gate{open: make(chan struct{})}
	g.delay.Store(int64(3 * time.Millisecond))
	close(g.open)
	s, err := newServer(Config{Model: m, Tokenizer: tk, ModelID: "demo", Parallel: 2, Threads: 1}, func(b backend) backend { g.backend = b; return g })
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, context.Background(), ln) }()
	url := "http://" + ln.Addr().String() + "/v1/chat/completions"
	resp, err := http.Post(url, "application/json", strings.NewReader(onceUpon+`,"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	cancel()
	ev := sseEvents(t, resp.Body)
	if fin := ev[len(ev)-1]["choices"].([]any)[0].(map[string]any)["finish_reason"]; fin != "length" {
		t.Fatalf("drained stream ended with %v", ev[len(ev)-1])
	}
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after the drain")
	}
	if _, err := http.Post(url, "application/json", strings.NewReader(onceUpon+"}")); err == nil {
		t.Fatal("a request after the drain was answered")
	}
}

// TestBodyTooLarge: a body past MaxBodyBytes is a 413 in the error shape.
func TestBodyTooLarge(t *testing.T) {
	_, hs := startServer(t, Config{Parallel: 1}, nil)
	big := `{"prompt":"` + strings.Repeat("a", MaxBodyBytes) + `"}`
	code, v := post(t, hs.URL+"/v1/completions", big)
	if code != http.StatusRequestEntityTooLarge || v["error"].(map[string]any)["code"] != "body_too_large" {
		t.Fatalf("%d %v", code, v)
	}
}

// TestDrainAborted: when abort ends the drain (a second SIGTERM), the
// stream still in flight is cut and Serve says so.
func TestDrainAborted(t *testing.T) {
	m, tk := demoModel(t)
	g := &gate{open: make(chan struct{})}
	g.delay.Store(int64(20 * time.Millisecond))
	close(g.open)
	s, err := newServer(Config{Model: m, Tokenizer: tk, ModelID: "demo", Parallel: 1, Threads: 1}, func(b backend) backend { g.backend = b; return g })
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, drain := context.WithCancel(context.Background())
	abort, cut := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, abort, ln) }()
	resp, err := http.Post("http://"+ln.Addr().String()+"/v1/completions", "application/json",
		strings.NewReader(`{"prompt":"Once","max_tokens":200,"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	drain()
	time.Sleep(100 * time.Millisecond)
	cut()
	select {
	case err := <-served:
		if err != ErrDrainAborted {
			t.Fatalf("Serve: %v, want ErrDrainAborted", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after the abort")
	}
	if b, _ := io.ReadAll(resp.Body); strings.Contains(string(b), "[DONE]") {
		t.Fatal("the cut stream still finished")
	}
}
