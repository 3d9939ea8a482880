package serve

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// ndjson reads an Ollama stream: one JSON object a line.
func ndjson(t *testing.T, url, body string) (int, string, []map[string]any) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out []map[string]any
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var v map[string]any
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("%s: line %q is not JSON: %v", body, sc.Bytes(), err)
		}
		out = append(out, v)
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), out
}

// greedyOpts makes Ollama's sampling greedy and penalty-free, so a reply
// must equal the hand-stepped engine's (greedyText).
const greedyOpts = `"options":{"temperature":0,"repeat_penalty":1,"num_predict":40}`

// TestOllamaChatGenerate: /api/chat and /api/generate, streamed (NDJSON,
// the default) and not, give the greedy reference text, done_reason,
// counts and durations; raw generate feeds the prompt as it is.
func TestOllamaChatGenerate(t *testing.T) {
	_, hs := startServer(t, Config{Parallel: 2}, nil)
	want := greedyText(t, "Once upon a time", 40)
	chat := `{"model":"demo","messages":[{"role":"user","content":"Once upon a time"}],` + greedyOpts
	checkFinal := func(name string, v map[string]any) {
		t.Helper()
		if v["done"] != true || v["done_reason"] != "length" || v["model"] != strings.Fields(name)[0] || v["eval_count"] != 40.0 || v["prompt_eval_count"] != 17.0 {
			t.Errorf("%s: final %v", name, v)
		}
		for _, k := range []string{"total_duration", "prompt_eval_duration", "eval_duration"} {
			if d, _ := v[k].(float64); d <= 0 {
				t.Errorf("%s: %s = %v, want > 0 ns", name, k, v[k])
			}
		}
		if _, ok := v["load_duration"].(float64); !ok {
			t.Errorf("%s: no load_duration", name)
		}
		if tot, pe, ev := v["total_duration"].(float64), v["prompt_eval_duration"].(float64), v["eval_duration"].(float64); pe+ev > tot*1.01 {
			t.Errorf("%s: prompt %v + eval %v > total %v ns", name, pe, ev, tot)
		}
	}
	code, v := post(t, hs.URL+"/api/chat", chat+`,"stream":false}`)
	if code != 200 || v["message"].(map[string]any)["content"] != want || v["message"].(map[string]any)["role"] != "assistant" {
		t.Fatalf("chat: %d %v, want %q", code, v, want)
	}
	checkFinal("demo chat", v)

	code, ct, lines := ndjson(t, hs.URL+"/api/chat", chat+"}")
	if code != 200 || ct != "application/x-ndjson" || len(lines) < 2 {
		t.Fatalf("chat stream: %d %s %v", code, ct, lines)
	}
	var text strings.Builder
	for _, l := range lines[:len(lines)-1] {
		if l["done"] != false {
			t.Errorf("chat stream: a line before the last is done: %v", l)
		}
		text.WriteString(l["message"].(map[string]any)["content"].(string))
	}
	if text.String() != want {
		t.Errorf("chat stream text %q, want %q", text.String(), want)
	}
	checkFinal("demo chat stream", lines[len(lines)-1])

	gen := `{"model":"demo:latest","prompt":"Once upon a time",` + greedyOpts
	code, v = post(t, hs.URL+"/api/generate", gen+`,"stream":false}`)
	if code != 200 || v["response"] != want {
		t.Fatalf("generate: %d %v", code, v)
	}
	checkFinal("demo:latest generate", v)
	_, _, lines = ndjson(t, hs.URL+"/api/generate", gen+`,"raw":true}`)
	text.Reset()
	for _, l := range lines {
		text.WriteString(l["response"].(string))
	}
	if text.String() != want {
		t.Errorf("raw generate stream %q, want %q", text.String(), want)
	}
	checkFinal("demo:latest raw generate", lines[len(lines)-1])

	// A stop option ends the reply before the stop text, as on /v1.
	stop := want[14:19]
	sj, _ := json.Marshal([]string{stop})
	code, v = post(t, hs.URL+"/api/chat", strings.Replace(chat, `"num_predict":40`, `"num_predict":40,"stop":`+string(sj), 1)+`,"stream":false}`)
	if code != 200 || v["message"].(map[string]any)["content"] != want[:strings.Index(want, stop)] || v["done_reason"] != "stop" {
		t.Errorf("stop %q: %d %v", stop, code, v)
	}
	// No messages or no prompt: Ollama's "load" answer.
	if code, v = post(t, hs.URL+"/api/chat", `{"model":"demo","messages":[],"stream":false}`); code != 200 || v["done_reason"] != "load" {
		t.Errorf("load: %d %v", code, v)
	}
}

// TestOllamaRefusals: every error is Ollama's {"error": "…"} naming the
// field as the Ollama request named it.
func TestOllamaRefusals(t *testing.T) {
	_, hs := startServer(t, Config{Parallel: 1, Ctx: 256}, nil)
	msg := `"model":"demo","messages":[{"role":"user","content":"hi"}],"stream":false`
	for _, c := range []struct {
		path, body string
		code       int
		prefix     string
	}{
		{"/api/chat", `{"messages":[{"role":"user","content":"hi"}]}`, 400, "model:"},
		{"/api/chat", `{"model":"nope",` + msg[15:] + `}`, 404, `model "nope" not found`},
		{"/api/chat", `{` + msg + `,"options":{"temperature":5}}`, 400, "options.temperature:"},
		{"/api/chat", `{` + msg + `,"options":{"top_k":-1}}`, 400, "options.top_k:"},
		{"/api/chat", `{` + msg + `,"options":{"num_predict":0}}`, 400, "options.num_predict:"},
		{"/api/chat", `{` + msg + `,"options":{"num_ctx":64}}`, 400, "options.num_ctx:"},
		{"/api/chat", `{` + msg + `,"options":{"tfs_z":0.5}}`, 400, "options.tfs_z:"},
		{"/api/chat", `{` + msg + `,"options":{"mirostat":2}}`, 400, "options.mirostat:"},
		{"/api/chat", `{` + msg + `,"options":{"penalize_newline":true}}`, 400, "options.penalize_newline:"},
		{"/api/chat", `{` + msg + `,"options":{"bogus":1}}`, 400, "options.bogus:"},
		{"/api/chat", `{` + msg + `,"options":{"seed":"x"}}`, 400, "options.seed:"},
		{"/api/chat", `{` + msg + `,"format":"yaml"}`, 400, "format:"},
		{"/api/chat", `{` + msg + `,"think":"high"}`, 400, "think:"},
		{"/api/generate", `{"model":"demo","prompt":"hi","raw":true,"logprobs":true}`, 400, "logprobs:"},
		{"/api/chat", `{` + msg + `,"top_logprobs":3}`, 400, "top_logprobs:"},
		{"/api/chat", `{` + msg + `,"logprobs":true,"top_logprobs":21}`, 400, "top_logprobs:"},
		{"/api/chat", `{"model":"demo","messages":[{"role":"user","content":"hi","images":["aGk="]}]}`, 400, "messages[0].images:"},
		{"/api/chat", `{"model":"demo","messages":[{"role":"wizard","content":"hi"}],"stream":false}`, 400, "messages[0].role:"},
		{"/api/chat", `{` + msg + `,"Model":"x"}`, 400, "Model:"},
		{"/api/generate", `{"model":"demo","prompt":"hi","template":"{{ .Prompt }}"}`, 400, "template:"},
		{"/api/generate", `{"model":"demo","prompt":"hi","context":[1,2]}`, 400, "context:"},
		{"/api/generate", `{"model":"demo","prompt":"hi","suffix":"x"}`, 400, "suffix:"},
		{"/api/generate", `{"model":"demo","prompt":"` + strings.Repeat("a", 300) + `"}`, 400, "the prompt"},
		{"/api/show", `{"model":"nope"}`, 404, `model "nope" not found`},
	} {
		code, v := post(t, hs.URL+c.path, c.body)
		msg, _ := v["error"].(string)
		if code != c.code || !strings.HasPrefix(msg, c.prefix) {
			t.Errorf("%s %s: %d %v, want %d and an error starting %q", c.path, c.body, code, v, c.code, c.prefix)
		}
	}
	// Options that change nothing here are accepted.
	code, v := post(t, hs.URL+"/api/chat", `{`+msg+`,"keep_alive":"5m","options":{"num_thread":2,"num_ctx":4096,"num_keep":4,"use_mmap":true,"seed":-1,"num_predict":-1,"mirostat_tau":5,"tfs_z":1}}`)
	if code != 200 || v["done"] != true {
		t.Errorf("no-effect options: %d %v", code, v)
	}
}

// TestOllamaInfo: /api/tags, /api/ps, /api/show and /api/version in
// Ollama's shapes, every alias listed with its tag.
func TestOllamaInfo(t *testing.T) {
	s, hs := startServer(t, Config{Parallel: 1, Aliases: []string{"demo", "llama3.2"}}, nil)
	for _, path := range []string{"/api/tags", "/api/ps"} {
		code, v := getJSON(t, hs.URL+path)
		models, _ := v["models"].([]any)
		if code != 200 || len(models) != 2 {
			t.Fatalf("%s: %d %v", path, code, v)
		}
		m := models[1].(map[string]any)
		d := m["details"].(map[string]any)
		if m["name"] != "llama3.2:latest" || m["model"] != "llama3.2:latest" || len(m["digest"].(string)) != 64 || m["size"].(float64) <= 0 ||
			d["format"] != "cflow" || d["quantization_level"] != "Q4_0" || d["family"] != s.info.arch {
			t.Errorf("%s: %v", path, m)
		}
		if path == "/api/ps" && (m["context_length"] != float64(s.ctx) || m["expires_at"] == nil) {
			t.Errorf("ps: %v", m)
		}
	}
	code, v := post(t, hs.URL+"/api/show", `{"model":"llama3.2"}`)
	mi, _ := v["model_info"].(map[string]any)
	if code != 200 || mi["general.architecture"] != s.info.arch || mi[s.info.arch+".context_length"] != float64(s.ctx) || v["capabilities"] == nil {
		t.Errorf("show: %d %v", code, v)
	}
	if code, v := getJSON(t, hs.URL+"/api/version"); code != 200 || v["version"] != OllamaVersion {
		t.Errorf("version: %d %v", code, v)
	}
}

// TestOllamaLogprobs: logprobs and top_logprobs give, whole and streamed,
// the entries /v1/chat/completions gives for the same greedy request
// (held to the engine's log-softmax by TestStopSeedLogprobs).
func TestOllamaLogprobs(t *testing.T) {
	_, hs := startServer(t, Config{Parallel: 1}, nil)
	_, ref := post(t, hs.URL+"/v1/chat/completions", onceUpon+`,"logprobs":true,"top_logprobs":2,"repeat_penalty":1.1,"top_k":40,"top_p":0.9}`)
	want, _ := json.Marshal(ref["choices"].([]any)[0].(map[string]any)["logprobs"].(map[string]any)["content"])
	body := `{"model":"demo","messages":[{"role":"user","content":"Once upon a time"}],"options":{"temperature":0,"num_predict":40},"logprobs":true,"top_logprobs":2`
	code, v := post(t, hs.URL+"/api/chat", body+`,"stream":false}`)
	got, _ := json.Marshal(v["logprobs"])
	if code != 200 || string(got) != string(want) {
		t.Errorf("logprobs %d:\n%s\nwant\n%s", code, got, want)
	}
	_, _, lines := ndjson(t, hs.URL+"/api/chat", body+`}`)
	var all []any
	for _, l := range lines {
		if lp, ok := l["logprobs"].([]any); ok {
			all = append(all, lp...)
		}
	}
	if got, _ := json.Marshal(all); string(got) != string(want) {
		t.Errorf("streamed logprobs:\n%s\nwant\n%s", got, want)
	}
}

// TestOllamaMessageFor: the OpenAI path's 400s are renamed to the Ollama
// request's fields.
func TestOllamaMessageFor(t *testing.T) {
	for _, c := range []struct{ param, msg, want string }{
		{"temperature", "temperature: 5: must be in [0, 2]", "options.temperature: 5: must be in [0, 2]"},
		{"max_tokens", "max_tokens: 0: must be ≥ 1", "options.num_predict: 0: must be ≥ 1"},
		{"response_format", `response_format: "json_object": only text is supported`, `format: "json_object": only text is supported`},
		{"response_format.json_schema.schema", "response_format.json_schema.schema: bad", "format.json_schema.schema: bad"},
		{"chat_template_kwargs", "chat_template_kwargs: unrecognized", "think: unrecognized"},
		{"messages[2].name", "messages[2].name: unrecognized", "messages[2].tool_name: unrecognized"},
		{"messages[0].role", `messages[0].role: "x": must be …`, `messages[0].role: "x": must be …`},
		{"", "plain", "plain"},
	} {
		p := strp(c.param)
		if got := ollamaMessageFor(p, c.msg); got != c.want {
			t.Errorf("%q %q: %q, want %q", c.param, c.msg, got, c.want)
		}
	}
}

// TestOllamaWriterToolsThinking: an OpenAI chat stream with reasoning
// and a tool call streamed in pieces (the shape OpenAI documents) becomes
// Ollama's: thinking per line, the call whole with its arguments an
// object, done_reason "stop"; and the same, not streamed, in one object.
func TestOllamaWriterToolsThinking(t *testing.T) {
	events := []string{
		`{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`,
		`{"choices":[{"index":0,"delta":{"reasoning_content":"Weather "}}]}`,
		`{"choices":[{"index":0,"delta":{"reasoning_content":"needed."}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"Paris\"}"}}]}}]}`,
		`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
		`{"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":9}}`,
	}
	var sse strings.Builder
	for _, e := range events {
		sse.WriteString("data: " + e + "\n\n")
	}
	sse.WriteString(": keep-alive\n\ndata: [DONE]\n\n")
	for _, stream := range []bool{true, false} {
		rec := httptest.NewRecorder()
		o := &ollamaWriter{w: rec, h: http.Header{}, model: "m", field: "message", stream: stream, t0: time.Now()}
		o.WriteHeader(200)
		raw := sse.String()
		for len(raw) > 0 { // in uneven pieces, as a connection splits them
			n := min(7, len(raw))
			o.Write([]byte(raw[:n]))
			raw = raw[n:]
		}
		o.close()
		var lines []map[string]any
		for _, l := range strings.Split(strings.TrimSpace(rec.Body.String()), "\n") {
			var v map[string]any
			if err := json.Unmarshal([]byte(l), &v); err != nil {
				t.Fatalf("stream %v: %q: %v", stream, l, err)
			}
			lines = append(lines, v)
		}
		var thinking strings.Builder
		var calls []any
		for _, l := range lines {
			m := l["message"].(map[string]any)
			if th, ok := m["thinking"].(string); ok {
				thinking.WriteString(th)
			}
			if c, ok := m["tool_calls"].([]any); ok {
				calls = append(calls, c...)
			}
		}
		last := lines[len(lines)-1]
		if thinking.String() != "Weather needed." || len(calls) != 1 || last["done"] != true || last["done_reason"] != "stop" ||
			last["prompt_eval_count"] != 12.0 || last["eval_count"] != 9.0 || stream && len(lines) != 4 || !stream && len(lines) != 1 {
			t.Errorf("stream %v: %s", stream, rec.Body.String())
			continue
		}
		fn := calls[0].(map[string]any)["function"].(map[string]any)
		if fn["name"] != "get_weather" || fn["arguments"].(map[string]any)["city"] != "Paris" || calls[0].(map[string]any)["id"] != "call_1" {
			t.Errorf("stream %v: call %v", stream, calls[0])
		}
	}
}
