package serve

import (
	"net/http"
	"strings"
	"testing"

	"github.com/cflow-dev/cflow/tokenizer"
)

// TestStrictKeys: keys match exactly, as OpenAI's server matches them (a
// proxy parsing the body as OpenAI does must see the request cflow runs):
// a case-folded or Unicode-folded spelling of a field is not that field,
// and no object may repeat a key. Go's decoder alone folds "LOGIT_BIAS"
// onto logit_bias (the last one wins, passing a refused field),
// "ſtream" onto stream and "MAX_TOKENS" onto max_tokens.
func TestStrictKeys(t *testing.T) {
	_, hs := startServer(t, Config{Parallel: 1}, nil)
	msg := `"messages":[{"role":"user","content":"hi"}]`
	chat, compl := hs.URL+"/v1/chat/completions", hs.URL+"/v1/completions"
	for _, c := range []struct{ url, body, param string }{
		{chat, `{` + msg + `,"logit_bias":{"5":1},"LOGIT_BIAS":null}`, "LOGIT_BIAS"},
		{chat, `{` + msg + `,"ſtream":true}`, "ſtream"},
		{chat, `{` + msg + `,"max_tokens":2,"MAX_TOKENS":50}`, "MAX_TOKENS"},
		{chat, `{` + msg + `,"Temperature":0}`, "Temperature"},
		{chat, `{` + msg + `,"max_tokens":2,"max_tokens":50}`, "max_tokens"},
		{chat, `{` + msg + `,` + msg + `}`, "messages"},
		{chat, `{"messages":[{"role":"user","ROLE":"system","content":"hi"}]}`, "messages[0].ROLE"},
		{chat, `{"messages":[{"role":"user","content":"a","content":"b"}]}`, "messages[0].content"},
		{chat, `{"messages":[{"role":"user","content":[{"type":"text","TEXT":"a"}]}]}`, "messages[0].content[0].TEXT"},
		{chat, `{` + msg + `,"stream":true,"stream_options":{"include_usage":true,"Include_Usage":false}}`, "stream_options.Include_Usage"},
		{chat, `{` + msg + `,"logit_bias":{"5":1,"5":2}}`, "logit_bias.5"},
		{chat, `{` + msg + `,"response_format":{"TYPE":"json_object","type":"text"}}`, "response_format.TYPE"},
		{compl, `{"prompt":"a","prompt":"b"}`, "prompt"},
		{compl, `{"prompt":"a","Prompt":"b"}`, "Prompt"},
		{compl, `{"prompt":"a","frobnicate":1}`, "frobnicate"},
	} {
		code, v := post(t, c.url, c.body)
		e, _ := v["error"].(map[string]any)
		if code != http.StatusBadRequest || e == nil {
			t.Errorf("%s: %d %v, want 400", c.body, code, v)
			continue
		}
		if p, _ := e["param"].(string); p != c.param {
			t.Errorf("%s: param %q, want %q (%v)", c.body, p, c.param, e["message"])
		}
	}
}

// TestRefusedFields: every field that would change the output is either
// implemented or refused by name — accepted only at the value that
// changes nothing; every range is checked; every wrong method is a 405.
func TestRefusedFields(t *testing.T) {
	_, hs := startServer(t, Config{Parallel: 1}, nil)
	msg := `"messages":[{"role":"user","content":"hi"}],"max_tokens":2`
	chat, compl := hs.URL+"/v1/chat/completions", hs.URL+"/v1/completions"
	for _, c := range []struct{ url, body, param string }{
		{chat, `{` + msg + `,"ignore_eos":true}`, "ignore_eos"},
		{chat, `{` + msg + `,"min_tokens":3}`, "min_tokens"},
		{chat, `{` + msg + `,"grammar":"root ::= \"a\""}`, "grammar"},
		{chat, `{` + msg + `,"json_schema":{"type":"object"}}`, "json_schema"},
		{chat, `{` + msg + `,"mirostat":2}`, "mirostat"},
		{chat, `{` + msg + `,"typical_p":0.5}`, "typical_p"},
		{chat, `{` + msg + `,"prediction":{"type":"content","content":"x"}}`, "prediction"},
		{chat, `{` + msg + `,"tool_choice":"required"}`, "tool_choice"},
		{chat, `{` + msg + `,"response_format":{"type":"json_object"}}`, "response_format"},
		{chat, `{` + msg + `,"logprobs":true,"top_logprobs":-1}`, "top_logprobs"},
		{chat, `{` + msg + `,"repeat_penalty":1e-39}`, "repeat_penalty"},
		{compl, `{"prompt":"a","max_tokens":2,"top_logprobs":2}`, "top_logprobs"},
		{compl, `{"prompt":"a","max_tokens":2,"dry_multiplier":0.8}`, "dry_multiplier"},
	} {
		code, v := post(t, c.url, c.body)
		e, _ := v["error"].(map[string]any)
		if code != http.StatusBadRequest || e == nil {
			t.Errorf("%s: %d %v, want 400", c.body, code, v)
			continue
		}
		if p, _ := e["param"].(string); p != c.param {
			t.Errorf("%s: param %q, want %q (%v)", c.body, p, c.param, e["message"])
		}
	}
	// The values that change nothing are served, and serve what leaving
	// the field out does.
	_, plain := post(t, chat, `{`+msg+`,"temperature":0}`)
	for _, f := range []string{`"ignore_eos":false`, `"min_tokens":0`, `"typical_p":1`, `"mirostat":0`, `"grammar":""`,
		`"user":"u1"`, `"tool_choice":"none"`, `"parallel_tool_calls":false`, `"response_format":{"type":"text"}`} {
		code, v := post(t, chat, `{`+msg+`,"temperature":0,`+f+`}`)
		if code != 200 || content(v) != content(plain) {
			t.Errorf("%s: %d %v, want the reply without it (%q)", f, code, v, content(plain))
		}
	}
	for _, c := range []struct{ method, path string }{
		{"POST", "/v1/models/demo"}, {"DELETE", "/v1/models/demo"}, {"POST", "/v1/models"}, {"POST", "/health"},
		{"GET", "/v1/completions"}, {"PUT", "/v1/chat/completions"},
	} {
		req, _ := http.NewRequest(c.method, hs.URL+c.path, strings.NewReader(`{}`))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") == "" {
			t.Errorf("%s %s: %d (Allow %q), want 405", c.method, c.path, resp.StatusCode, resp.Header.Get("Allow"))
		}
	}
}

// noBOS is the demo's byte tokenizer without a BOS: an empty message
// renders to no token at all.
type noBOS struct{ tokenizer.Tokenizer }

func (noBOS) BOS() int { return -1 }

// TestEmptyPromptIsTheClients: content "", null or [] on a file with no
// chat template and a tokenizer without BOS is a 400 naming messages (it
// was a 500 "empty prompt"), as an empty completion prompt is.
func TestEmptyPromptIsTheClients(t *testing.T) {
	m, tk := demoModel(t)
	s, err := newServer(Config{Model: m, Tokenizer: noBOS{tk}, ModelID: "demo", Parallel: 1, Threads: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	hs := httptestServer(t, s)
	for _, c := range []struct{ path, body, param string }{
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":""}]}`, "messages"},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":null}]}`, "messages"},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":[]}]}`, "messages"},
		{"/v1/completions", `{"prompt":""}`, "prompt"},
	} {
		code, v := post(t, hs.URL+c.path, c.body)
		e, _ := v["error"].(map[string]any)
		if code != http.StatusBadRequest || e == nil || e["param"] != c.param {
			t.Errorf("%s: %d %v, want 400 naming %s", c.body, code, v, c.param)
		}
	}
}
