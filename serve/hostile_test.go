package serve

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The attack harness: hostile HTTP clients against a server on loopback
// (malformed and duplicate-key JSON, huge bodies and messages, slow
// bodies, idle connections, disconnect storms, queue bursts, a drain
// under stalled clients). Every count is bounded; CFLOW_ATTACK_SCALE
// multiplies them (scripts/serve-attack.sh runs 10×), and
// CFLOW_ATTACK_ADDR aims the same clients at a running `cflowc serve`
// (the script then checks the process' own fds, panics and drain).

func attackScale() int {
	if n, err := strconv.Atoi(os.Getenv("CFLOW_ATTACK_SCALE")); err == nil && n > 0 {
		return n
	}
	return 1
}

// hostileBodies are request bodies a client may send by mistake or
// malice; none is the server's error.
func hostileBodies() []string {
	msg := `"messages":[{"role":"user","content":"hi"}]`
	deep := strings.Repeat(`{"a":`, 5000) + `1` + strings.Repeat(`}`, 5000)
	return []string{
		``, `{`, `}`, `[`, `null`, `true`, `"x"`, `123`, `[]`, `{}`, `{"messages":`, `{"messages":[{]}`,
		`{` + msg + `}{}`, `{` + msg + `} trailing`, "{\"messages\":[{\"role\":\"user\",\"content\":\"\xff\xfe\"}]}",
		`{` + msg + `,"max_tokens":1e400}`, `{` + msg + `,"max_tokens":-1}`, `{` + msg + `,"max_tokens":99999999999999999999}`,
		`{` + msg + `,"temperature":NaN}`, `{` + msg + `,"seed":"x"}`, `{` + msg + `,"stop":{"a":1}}`,
		`{` + msg + `,"logit_bias":{"5":1},"LOGIT_BIAS":null}`, `{` + msg + `,"ſtream":true}`,
		`{` + msg + `,"max_tokens":2,"max_tokens":3}`, `{"messages":[{"role":"user","content":"a","Content":"b"}]}`,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"a","text":"b"}]}]}`,
		`{"prompt":[-1]}`, `{"prompt":[1e30]}`, `{"prompt":[[1]]}`, `{"prompt":{"a":1}}`, `{"prompt":[]}`,
		deep, `{"a":` + deep + `}`, strings.Repeat(`[`, 100000),
		`{` + msg + `,"top_logprobs":-1,"logprobs":true}`, `{` + msg + `,"repeat_penalty":1e-39}`,
		`{` + msg + `,"n":0}`, `{` + msg + `,"ignore_eos":true}`, `{"messages":[{"role":"user"}]}`,
	}
}

// hostileOllamaBodies are bodies aimed at the Ollama API and the
// tokenizer endpoints: wrong types where they take options, formats,
// tool calls and token lists.
func hostileOllamaBodies() []string {
	m := `"model":"demo","messages":[{"role":"user","content":"hi"}]`
	return []string{
		`{` + m + `,"options":[]}`, `{` + m + `,"options":{"temperature":"hot"}}`, `{` + m + `,"options":{"stop":"x"}}`,
		`{` + m + `,"options":{"stop":[1]}}`, `{` + m + `,"options":{"num_predict":1e400}}`, `{` + m + `,"options":{"seed":1.5}}`,
		`{` + m + `,"options":{"top_k":1,"top_k":2}}`, `{` + m + `,"options":{"Temperature":0}}`, `{` + m + `,"options":{"num_ctx":-5}}`,
		`{` + m + `,"format":{"type":"object","properties":{"a":{"$ref":"#/nowhere"}}}}`, `{` + m + `,"format":1}`, `{` + m + `,"format":[]}`,
		`{` + m + `,"think":1}`, `{` + m + `,"stream":"yes"}`, `{` + m + `,"keep_alive":{"a":1}}`, `{` + m + `,"tools":"x"}`,
		`{"model":"demo","messages":[{"role":"assistant","content":"","tool_calls":[{"function":{"name":1}}]}]}`,
		`{"model":"demo","messages":[{"role":"assistant","content":"","tool_calls":"x"}]}`,
		`{"model":"demo","messages":{"role":"user"}}`, `{"model":["demo"],"messages":[]}`, `{"model":"demo","prompt":7}`,
		`{"model":"demo","prompt":"hi","context":"x"}`, `{"model":"demo","prompt":"hi","raw":"yes"}`, `{"model":"demo","prompt":"hi","images":[1]}`,
		`{"content":7}`, `{"content":"hi","with_pieces":"yes"}`, `{"tokens":"x"}`, `{"tokens":[1.5]}`, `{"tokens":[-1]}`, `{"tokens":[1e30]}`,
		`{"model":"demo","verbose":"x"}`, `{"name":7}`,
	}
}

// newRoutes are the endpoints beside OpenAI's the hostile bodies go to.
var newRoutes = []string{"/api/chat", "/api/generate", "/api/show", "/tokenize", "/detokenize", "/apply-template"}

// attackTarget is a server to attack: its address and, when in this
// process, the Server (for its internal counters).
type attackTarget struct {
	addr string
	s    *Server
}

func TestHostileClients(t *testing.T) {
	scale := attackScale()
	var target attackTarget
	logs := &syncBuffer{}
	if addr := os.Getenv("CFLOW_ATTACK_ADDR"); addr != "" {
		target.addr = addr
	} else {
		sv := serveLoopback(t, Config{Parallel: 2, Queue: 2, Ctx: 256, ReadTimeout: 300 * time.Millisecond,
			WriteTimeout: 300 * time.Millisecond, IdleTimeout: 300 * time.Millisecond, MaxConns: 64, DrainTimeout: 5 * time.Second, Log: logs}, nil, nil)
		target = attackTarget{addr: sv.addr, s: sv.s}
		defer func() {
			if strings.Contains(logs.String(), "panic") {
				t.Errorf("the server logged a panic:\n%s", logs.String())
			}
		}()
	}
	base := "http://" + target.addr
	client := &http.Client{Timeout: 20 * time.Second}
	if code, _ := getJSON(t, base+"/health"); code != 200 {
		t.Fatalf("health: %d", code)
	}
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	client.CloseIdleConnections()
	time.Sleep(50 * time.Millisecond)
	g0, fd0 := runtime.NumGoroutine(), openFDs()
	var mu sync.Mutex
	statuses := map[int]int{}
	record := func(what string, code int) {
		mu.Lock()
		statuses[code]++
		mu.Unlock()
		if code >= 500 {
			t.Errorf("%s: %d, a client's error answered as the server's", what, code)
		}
	}
	t.Run("malformed", func(t *testing.T) {
		for range scale {
			for _, b := range hostileBodies() {
				for _, path := range []string{"/v1/chat/completions", "/v1/completions"} {
					resp, err := client.Post(base+path, "application/json", strings.NewReader(b))
					if err != nil {
						t.Fatalf("%.60q: %v", b, err)
					}
					out, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					record(fmt.Sprintf("%.60q", b), resp.StatusCode)
					if resp.StatusCode != 200 && !bytes.Contains(out, []byte(`"error"`)) {
						t.Errorf("%.60q: %d without an error object: %.200q", b, resp.StatusCode, out)
					}
				}
			}
		}
	})
	t.Run("new endpoints", func(t *testing.T) {
		for range scale {
			for _, b := range append(hostileBodies(), hostileOllamaBodies()...) {
				for _, path := range newRoutes {
					resp, err := client.Post(base+path, "application/json", strings.NewReader(b))
					if err != nil {
						t.Fatalf("%s %.60q: %v", path, b, err)
					}
					out, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					record(fmt.Sprintf("%s %.60q", path, b), resp.StatusCode)
					if resp.StatusCode != 200 && !bytes.Contains(out, []byte(`"error"`)) {
						t.Errorf("%s %.60q: %d without an error: %.200q", path, b, resp.StatusCode, out)
					}
				}
			}
			huge := `{"model":"demo","prompt":"` + strings.Repeat("a", 8<<20) + `","content":"","tokens":[]}`
			for _, path := range newRoutes {
				resp, err := client.Post(base+path, "application/json", strings.NewReader(huge))
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				record(path+" huge body", resp.StatusCode)
				if resp.StatusCode != 413 {
					t.Errorf("%s: huge body answered %d, want 413", path, resp.StatusCode)
				}
			}
			wrong := map[string]string{"/api/tags": "POST", "/api/ps": "DELETE", "/api/version": "POST", "/metrics": "POST",
				"/api/chat": "GET", "/api/generate": "PUT", "/api/show": "GET", "/tokenize": "GET", "/detokenize": "GET", "/apply-template": "GET"}
			for path, method := range wrong {
				req, _ := http.NewRequest(method, base+path, strings.NewReader(`{}`))
				resp, err := client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				record(method+" "+path, resp.StatusCode)
				if resp.StatusCode != 405 || resp.Header.Get("Allow") == "" {
					t.Errorf("%s %s: %d (Allow %q), want 405", method, path, resp.StatusCode, resp.Header.Get("Allow"))
				}
			}
		}
	})
	t.Run("huge", func(t *testing.T) {
		bodies := []string{
			`{"messages":[{"role":"user","content":"` + strings.Repeat("a", 8<<20) + `"}]}`,
			`{"messages":[` + strings.Repeat(`{"role":"user","content":""},`, 200000) + `{"role":"user","content":""}]}`,
			`{"prompt":[` + strings.Repeat(`1,`, 1<<20) + `1]}`,
			`{"prompt":"` + strings.Repeat(`\u0041`, 1<<20) + `"}`,
		}
		for range scale {
			for _, b := range bodies {
				t0 := time.Now()
				resp, err := client.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(b))
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				record("huge body", resp.StatusCode)
				if resp.StatusCode != 413 && resp.StatusCode != 400 || time.Since(t0) > time.Second {
					t.Errorf("huge body (%d bytes): %d after %v, want 413/400 at once", len(b), resp.StatusCode, time.Since(t0))
				}
			}
		}
	})
	t.Run("slow bodies and idle connections", func(t *testing.T) {
		var wg sync.WaitGroup
		for range 8 * scale {
			wg.Add(2)
			go func() {
				defer wg.Done()
				out, took, err := slowBody(target.addr)
				if err != nil {
					t.Error(err)
					return
				}
				if strings.HasPrefix(out, "HTTP/1.1 5") || took > 35*time.Second {
					t.Errorf("slow body: %.40q after %v", out, took)
				}
			}()
			go func() {
				defer wg.Done()
				c, err := net.Dial("tcp", target.addr)
				if err != nil {
					t.Error(err)
					return
				}
				defer c.Close()
				c.SetReadDeadline(time.Now().Add(40 * time.Second))
				io.Copy(io.Discard, c) // returns when the server closes it
			}()
		}
		wg.Wait()
	})
	t.Run("disconnect storm", func(t *testing.T) {
		var wg sync.WaitGroup
		for i := range 40 * scale {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rand.IntN(60))*time.Millisecond)
				defer cancel()
				path, body := "/v1/completions", fmt.Sprintf(`{"prompt":"Once upon a time","max_tokens":200,"stream":%v}`, i%2 == 0)
				if i%4 == 1 { // the Ollama translation under the same storm
					path, body = "/api/generate", `{"model":"demo","prompt":"Once upon a time","options":{"num_predict":200}}`
				}
				req, _ := http.NewRequestWithContext(ctx, "POST", base+path, strings.NewReader(body))
				if resp, err := client.Do(req); err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					record("storm", resp.StatusCode)
				}
			}()
		}
		wg.Wait()
		if s := target.s; s != nil {
			until(t, "every place freed after the storm", func() bool {
				return s.gate.n.Load() == 0 && s.sched.busy.Load() == 0 && s.sched.queued() == 0
			})
		}
	})
	t.Run("queue burst", func(t *testing.T) {
		for range scale {
			var wg sync.WaitGroup
			for range 12 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					resp, err := client.Post(base+"/v1/completions", "application/json", strings.NewReader(`{"prompt":"Once","max_tokens":8}`))
					if err != nil {
						t.Error(err)
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					record("burst", resp.StatusCode)
					if resp.StatusCode != 200 && resp.StatusCode != 429 {
						t.Errorf("burst: %d", resp.StatusCode)
					}
				}()
			}
			wg.Wait()
		}
	})
	client.CloseIdleConnections()
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	if target.s != nil {
		deadline := time.Now().Add(10 * time.Second)
		for runtime.NumGoroutine() > g0+2 || openFDs() > fd0+2 {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				t.Fatalf("goroutines %d (baseline %d), fds %d (baseline %d) after the attacks\n%s", runtime.NumGoroutine(), g0,
					openFDs(), fd0, buf[:runtime.Stack(buf, true)])
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	t.Logf("statuses: %v", statuses)
}

// openFDs counts this process' open file descriptors (−1 where /proc is
// not there).
func openFDs() int {
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(es)
}
