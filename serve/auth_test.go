package serve

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

func do(t *testing.T, method, url, body string, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// TestAPIKeys: with --api-key, every route but /health needs one of the
// keys (Bearer or X-Api-Key), else 401 in OpenAI's error shape.
func TestAPIKeys(t *testing.T) {
	_, hs := startServer(t, Config{Parallel: 1, APIKeys: []string{"k1", "second-key"}}, nil)
	models := hs.URL + "/v1/models"
	for _, c := range []struct {
		hdr  map[string]string
		code int
	}{
		{nil, 401},
		{map[string]string{"Authorization": "Bearer wrong"}, 401},
		{map[string]string{"Authorization": "Bearer k1x"}, 401},
		{map[string]string{"Authorization": "Basic k1"}, 401},
		{map[string]string{"Authorization": "k1"}, 401},
		{map[string]string{"X-Api-Key": "k"}, 401},
		{map[string]string{"Authorization": "Bearer k1"}, 200},
		{map[string]string{"Authorization": "bearer second-key"}, 200},
		{map[string]string{"X-Api-Key": "second-key"}, 200},
	} {
		resp, body := do(t, "GET", models, "", c.hdr)
		if resp.StatusCode != c.code {
			t.Errorf("%v: %d %s, want %d", c.hdr, resp.StatusCode, body, c.code)
		}
		if c.code == 401 && (!strings.Contains(body, `"code":"invalid_api_key"`) || !strings.Contains(body, `"type":"invalid_request_error"`) ||
			resp.Header.Get("WWW-Authenticate") == "") {
			t.Errorf("%v: 401 body %s, headers %v", c.hdr, body, resp.Header)
		}
	}
	for _, p := range []string{"/api/tags", "/metrics", "/api/version"} {
		if resp, _ := do(t, "GET", hs.URL+p, "", nil); resp.StatusCode != 401 {
			t.Errorf("%s without a key: %d", p, resp.StatusCode)
		}
	}
	if resp, _ := do(t, "POST", hs.URL+"/api/chat", `{}`, nil); resp.StatusCode != 401 {
		t.Errorf("/api/chat without a key: %d", resp.StatusCode)
	}
	if resp, body := do(t, "GET", hs.URL+"/health", "", nil); resp.StatusCode != 200 {
		t.Errorf("/health without a key: %d %s", resp.StatusCode, body)
	}
}

// TestCORS: an allowed origin gets Access-Control-Allow-Origin and its
// preflight a 204; another origin gets no grant and a 403 preflight;
// without --cors-origin no CORS header is ever sent.
func TestCORS(t *testing.T) {
	_, hs := startServer(t, Config{Parallel: 1, CORSOrigins: []string{"http://app.example"}, APIKeys: []string{"k"}}, nil)
	pre := map[string]string{"Origin": "http://app.example", "Access-Control-Request-Method": "POST",
		"Access-Control-Request-Headers": "authorization,content-type"}
	resp, _ := do(t, "OPTIONS", hs.URL+"/v1/chat/completions", "", pre)
	h := resp.Header
	if resp.StatusCode != 204 || h.Get("Access-Control-Allow-Origin") != "http://app.example" ||
		!strings.Contains(h.Get("Access-Control-Allow-Headers"), "Authorization") || !strings.Contains(h.Get("Access-Control-Allow-Methods"), "POST") {
		t.Errorf("preflight: %d %v", resp.StatusCode, h)
	}
	pre["Origin"] = "http://evil.example"
	if resp, _ := do(t, "OPTIONS", hs.URL+"/v1/chat/completions", "", pre); resp.StatusCode != 403 || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("preflight from another origin: %d %v", resp.StatusCode, resp.Header)
	}
	// A simple request: granted to the allowed origin, even its 401.
	resp, _ = do(t, "GET", hs.URL+"/v1/models", "", map[string]string{"Origin": "http://app.example"})
	if resp.StatusCode != 401 || resp.Header.Get("Access-Control-Allow-Origin") != "http://app.example" {
		t.Errorf("401 to an allowed origin: %d %v", resp.StatusCode, resp.Header)
	}
	resp, _ = do(t, "GET", hs.URL+"/v1/models", "", map[string]string{"Origin": "http://evil.example", "Authorization": "Bearer k"})
	if resp.StatusCode != 200 || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("another origin: %d %v", resp.StatusCode, resp.Header)
	}
	_, plain := startServer(t, Config{Parallel: 1}, nil)
	resp, _ = do(t, "GET", plain.URL+"/v1/models", "", map[string]string{"Origin": "http://app.example"})
	if resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("no --cors-origin: %v", resp.Header)
	}
	resp, _ = do(t, "OPTIONS", plain.URL+"/v1/models", "", map[string]string{"Origin": "http://app.example", "Access-Control-Request-Method": "GET"})
	if resp.StatusCode != 405 {
		t.Errorf("no --cors-origin, preflight: %d", resp.StatusCode)
	}
}

// TestAliases: every alias is listed and accepted; another name is a 404
// unless AnyModel, which accepts every name.
func TestAliases(t *testing.T) {
	_, hs := startServer(t, Config{Parallel: 1, Aliases: []string{"gpt-4o", "demo"}}, nil)
	req := func(url, model string) int {
		limit := `"max_tokens":1`
		if strings.HasSuffix(url, "/api/chat") {
			limit = `"options":{"num_predict":1},"stream":false`
		}
		code, _ := post(t, url, `{"model":"`+model+`","messages":[{"role":"user","content":"hi"}],`+limit+`}`)
		return code
	}
	code, v := getJSON(t, hs.URL+"/v1/models")
	data, _ := v["data"].([]any)
	if code != 200 || len(data) != 2 || data[0].(map[string]any)["id"] != "demo" || data[1].(map[string]any)["id"] != "gpt-4o" {
		t.Errorf("models: %v", v)
	}
	for _, m := range []string{"demo", "gpt-4o"} {
		if c := req(hs.URL+"/v1/chat/completions", m); c != 200 {
			t.Errorf("model %q: %d", m, c)
		}
		if c, _ := getJSON(t, hs.URL+"/v1/models/"+m); c != 200 {
			t.Errorf("/v1/models/%s: %d", m, c)
		}
	}
	if c := req(hs.URL+"/v1/chat/completions", "gpt-3.5-turbo"); c != 404 {
		t.Errorf("another name: %d", c)
	}
	_, any := startServer(t, Config{Parallel: 1, AnyModel: true}, nil)
	for _, m := range []string{"gpt-3.5-turbo", "llama3.2:8b", "x"} {
		if c := req(any.URL+"/v1/chat/completions", m); c != 200 {
			t.Errorf("any model %q: %d", m, c)
		}
		if c := req(any.URL+"/api/chat", m); c != 200 {
			t.Errorf("any model %q on /api/chat: %d", m, c)
		}
	}
}
