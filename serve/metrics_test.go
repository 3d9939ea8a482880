package serve

import (
	"bufio"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape parses GET /metrics with Prometheus' own text parser.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("/metrics Content-Type %q", ct)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("/metrics is not Prometheus text format: %v", err)
	}
	return fams
}

// value is a counter's or gauge's value, or a histogram's count, summed
// over the family's series whose labels include want.
func value(fams map[string]*dto.MetricFamily, name string, want ...string) float64 {
	f := fams[name]
	if f == nil {
		return -1
	}
	var sum float64
next:
	for _, m := range f.Metric {
		for i := 0; i+1 < len(want); i += 2 {
			ok := false
			for _, l := range m.Label {
				ok = ok || l.GetName() == want[i] && l.GetValue() == want[i+1]
			}
			if !ok {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		case m.Histogram != nil:
			sum += float64(m.Histogram.GetSampleCount())
		}
	}
	return sum
}

// TestMetrics: counters move with traffic by the request's own usage
// figures; gauges describe slots and KV cache; histograms count requests.
func TestMetrics(t *testing.T) {
	_, hs := startServer(t, Config{Parallel: 2, CacheRAM: -1}, nil)
	before := scrape(t, hs.URL)
	for _, name := range []string{"cflow_prompt_tokens_total", "cflow_generated_tokens_total", "cflow_requests_running",
		"cflow_requests_queued", "cflow_slots", "cflow_kv_cache_usage_ratio", "cflow_prompt_tokens_per_second",
		"cflow_generated_tokens_per_second"} {
		if before[name] == nil {
			t.Errorf("no metric %s", name)
		}
	}
	if value(before, "cflow_generated_tokens_total") != 0 || value(before, "cflow_slots") != 2 {
		t.Errorf("before traffic: generated %v, slots %v", value(before, "cflow_generated_tokens_total"), value(before, "cflow_slots"))
	}
	code, v := post(t, hs.URL+"/v1/chat/completions", onceUpon+`}`)
	if code != 200 {
		t.Fatal(code, v)
	}
	u := v["usage"].(map[string]any)
	post(t, hs.URL+"/api/chat", `{"model":"demo","messages":[{"role":"user","content":"Once upon a time"}],"options":{"num_predict":5},"stream":false}`)
	after := scrape(t, hs.URL)
	if d := value(after, "cflow_generated_tokens_total") - value(before, "cflow_generated_tokens_total"); d != u["completion_tokens"].(float64)+5 {
		t.Errorf("generated tokens moved by %v, want %v + 5", d, u["completion_tokens"])
	}
	if d := value(after, "cflow_prompt_tokens_total"); d != 2*u["prompt_tokens"].(float64) {
		t.Errorf("prompt tokens %v, want 2 × %v", d, u["prompt_tokens"])
	}
	// The second request's prompt is the first's: the cache served it.
	if c := value(after, "cflow_prompt_tokens_cached_total"); c != u["prompt_tokens"].(float64)-1 {
		t.Errorf("cached prompt tokens %v, want %v", c, u["prompt_tokens"].(float64)-1)
	}
	if value(after, "cflow_generated_tokens_per_second") <= 0 || value(after, "cflow_prompt_tokens_per_second") <= 0 {
		t.Errorf("rates: %v %v", value(after, "cflow_generated_tokens_per_second"), value(after, "cflow_prompt_tokens_per_second"))
	}
	if value(after, "cflow_kv_cache_tokens") <= 0 || value(after, "cflow_kv_cache_usage_ratio") <= 0 || value(after, "cflow_kv_cache_usage_ratio") > 1 {
		t.Errorf("kv: %v tokens, ratio %v", value(after, "cflow_kv_cache_tokens"), value(after, "cflow_kv_cache_usage_ratio"))
	}
	if value(after, "cflow_requests_running") != 0 {
		t.Errorf("running after the requests: %v", value(after, "cflow_requests_running"))
	}
	if n := value(after, "cflow_http_request_duration_seconds", "path", "/v1/chat/completions"); n != 1 {
		t.Errorf("duration histogram count %v, want 1", n)
	}
	if n := value(after, "cflow_http_requests_total", "path", "/api/chat", "code", "200"); n != 1 {
		t.Errorf("requests /api/chat 200: %v", n)
	}
	if n := value(after, "cflow_time_to_first_token_seconds"); n != 2 {
		t.Errorf("ttft count %v", n)
	}
	getJSON(t, hs.URL+"/no/such/path")
	if n := value(scrape(t, hs.URL), "cflow_http_requests_total", "path", "other", "code", "404"); n != 1 {
		t.Errorf("an unknown path counts as other: %v", n)
	}
}

// TestKeepAlive: a stream waiting for its first token (the backend held)
// gets ": keep-alive" comments, then its tokens; the OpenAI stream stays
// valid SSE.
func TestKeepAlive(t *testing.T) {
	g := &gate{open: make(chan struct{})}
	_, hs := startServer(t, Config{Parallel: 1, KeepAlive: 20 * time.Millisecond}, func(b backend) backend { g.backend = b; return g })
	go func() { time.Sleep(150 * time.Millisecond); close(g.open) }()
	resp, err := http.Post(hs.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"messages":[{"role":"user","content":"Once upon a time"}],"max_tokens":3,"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	var comments, data, afterToken int
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == ": keep-alive":
			comments++
			if data > 1 {
				afterToken++
			}
		case strings.HasPrefix(line, "data: "):
			data++
		case line != "":
			t.Errorf("line %q", line)
		}
	}
	if comments < 2 || afterToken != 0 || data != 1+3+1+1 {
		t.Errorf("%d keep-alives (%d after a token), %d data lines", comments, afterToken, data)
	}
}
