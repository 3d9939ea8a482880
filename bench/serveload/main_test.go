package main

import (
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestQuantile(t *testing.T) {
	xs := []float64{5, 1, 4, 2, 3, 6, 7, 8, 9, 10}
	if q := quantile(xs, 0.5); q != 5 {
		t.Fatalf("p50 = %g", q)
	}
	if q := quantile(xs, 0.99); q != 10 {
		t.Fatalf("p99 = %g", q)
	}
}

// TestLevelCountsUsage: tokens come from the usage chunk when the server
// sends one, else from the chunks that carry a choice.
func TestLevelCountsUsage(t *testing.T) {
	for _, usage := range []bool{true, false} {
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			for range 3 {
				fmt.Fprint(w, "data: {\"choices\":[{\"text\":\"a\"}]}\n\n")
			}
			if usage {
				fmt.Fprint(w, "data: {\"choices\":[],\"usage\":{\"completion_tokens\":7}}\n\n")
			}
			fmt.Fprint(w, "data: [DONE]\n\n")
		}))
		lv, err := level(hs.URL, func() []byte { return []byte("{}") }, 2, 3)
		hs.Close()
		want := 2 * 3 * 3
		if usage {
			want = 2 * 3 * 7
		}
		if err != nil || lv.Tokens != want || lv.Requests != 6 {
			t.Fatalf("usage %v: %+v %v, want %d tokens", usage, lv, err, want)
		}
	}
}

// ms is a test's instant or span in milliseconds.
func ms(v int) time.Duration { return time.Duration(v) * time.Millisecond }

// TestSteadyLeavesPromptsOut: two clients; B's prompt takes until 2000 ms,
// during which A's tokens come every 300 ms (its steps also fed B's
// prompt); from B's first token both get one every 200 ms until A is done
// at 2850 ms. The steady rate counts only the 200 ms intervals wholly
// inside [2000, 2850): 8 of them, so 2 streams ÷ 200 ms = 10 tok/s. The
// median-rate figure mixes in A's slowed steps.
func TestSteadyLeavesPromptsOut(t *testing.T) {
	a := result{sent: 0, ttft: ms(1000), total: ms(2850)}
	for _, v := range []int{1000, 1300, 1600, 1900, 2000, 2200, 2400, 2600, 2800} {
		a.at = append(a.at, ms(v))
	}
	b := result{sent: 0, ttft: ms(2000), total: ms(3450)}
	for v := 2000; v <= 3400; v += 200 {
		b.at = append(b.at, ms(v))
	}
	tokS, window, n := steady([]result{a, b}, 2)
	if n != 8 || math.Abs(window-0.85) > 1e-9 || math.Abs(tokS-10) > 1e-9 {
		t.Fatalf("steady = %g tok/s over %g s, %d intervals; want 10 tok/s, 0.85 s, 8", tokS, window, n)
	}
	// With one client (A alone) every interval counts: 8 in 1800 ms.
	tokS, window, n = steady([]result{a}, 1)
	if n != 8 || math.Abs(window-1.85) > 1e-9 || math.Abs(tokS-8/1.8) > 1e-9 {
		t.Fatalf("one client: %g tok/s over %g s, %d intervals; want %g, 1.85 s, 8", tokS, window, n, 8/1.8)
	}
	// Two requests of one client one after the other are two periods; no
	// interval spans the gap between them.
	c := result{sent: ms(3000), ttft: ms(500), total: ms(900)}
	c.at = []time.Duration{ms(3500), ms(3600), ms(3700), ms(3800)}
	tokS, window, n = steady([]result{a, c}, 1)
	if n != 11 || math.Abs(window-2.25) > 1e-9 || math.Abs(tokS-11/2.1) > 1e-9 {
		t.Fatalf("one client, two requests: %g tok/s over %g s, %d intervals; want %g, 2.25 s, 11", tokS, window, n, 11/2.1)
	}
	// Never all clients decoding at once: no figure rather than a wrong one.
	if tokS, _, n := steady([]result{a, c}, 2); tokS != 0 || n != 0 {
		t.Fatalf("two clients never together: %g tok/s, %d intervals", tokS, n)
	}
}

// TestTokenArrivals: a token's arrival is its chunk's; the finishing chunk
// carries a token only when the usage counts one more than the chunks
// before it (cflowc folds a last token without text into it; llama-server
// sends an empty finishing chunk).
func TestTokenArrivals(t *testing.T) {
	for _, tc := range []struct {
		name   string
		chunks int
	}{{"last token in the finishing chunk", 2}, {"empty finishing chunk", 3}} {
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			for range tc.chunks {
				fmt.Fprint(w, "data: {\"choices\":[{\"text\":\"\",\"finish_reason\":null}]}\n\n")
			}
			fmt.Fprint(w, "data: {\"choices\":[{\"text\":\"\",\"finish_reason\":\"length\"}]}\n\n")
			fmt.Fprint(w, "data: {\"choices\":[],\"usage\":{\"completion_tokens\":3}}\n\n")
			fmt.Fprint(w, "data: [DONE]\n\n")
		}))
		r, err := one(hs.URL, []byte("{}"), time.Now())
		hs.Close()
		if err != nil || r.tokens != 3 || len(r.at) != 3 {
			t.Fatalf("%s: %d tokens, %d arrivals, %v; want 3 and 3", tc.name, r.tokens, len(r.at), err)
		}
		for k := 1; k < len(r.at); k++ {
			if r.at[k] < r.at[k-1] || r.at[0] < r.sent {
				t.Fatalf("%s: arrivals out of order: sent %v, %v", tc.name, r.sent, r.at)
			}
		}
	}
}
