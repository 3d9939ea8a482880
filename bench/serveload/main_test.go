package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
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
