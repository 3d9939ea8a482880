package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCacheTypeFlags: every command with an engine refuses an unknown
// --cache-type-k/-v with exit 2, and bench --json reports the cache types
// and bytes per position: f16's exactly half of f32's, q8_0's less than
// f16's, f16 the default.
func TestCacheTypeFlags(t *testing.T) {
	p := smallModel(t, t.TempDir())
	for _, args := range [][]string{
		{"run", p, "--prompt-ids", "1", "--max-tokens", "1"},
		{"bench", p, "--tokens", "1", "--runs", "1", "--warmup", "0", "--probe-mib", "1", "--probe-runs", "1"},
		{"ppl", p},
		{"verify", p, "--trace", p},
		{"chat", p},
		{"serve", p},
	} {
		for _, f := range []string{"--cache-type-k", "--cache-type-v"} {
			var code int
			msg := outputOf(t, &os.Stderr, func() { code = runApp(append(append([]string(nil), args...), f, "q4_0")...) })
			if code != exitUsage || !strings.Contains(msg, f+": unknown KV cache type") {
				t.Errorf("%s %s q4_0: exit %d (want %d), %q", args[0], f, code, exitUsage, msg)
			}
		}
	}
	per := map[string]int64{}
	for _, ct := range []string{"", "f32", "f16", "q8_0"} {
		args := []string{"bench", p, "--json", "--tokens", "2", "--runs", "1", "--warmup", "0", "--probe-mib", "1", "--probe-runs", "1", "--threads", "1"}
		if ct != "" {
			args = append(args, "--cache-type-k", ct, "--cache-type-v", ct)
		}
		var code int
		out := stdoutOf(t, func() { code = runApp(args...) })
		if code != 0 {
			t.Fatalf("bench %s: exit %d", ct, code)
		}
		var r struct {
			KV struct{ K, V string } `json:"kv_cache_type"`
			B  int64                 `json:"kv_bytes_per_position"`
		}
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("bench %s: %v in %q", ct, err, out)
		}
		want := ct
		if ct == "" {
			want = "f16"
		}
		if r.KV.K != want || r.KV.V != want || r.B <= 0 {
			t.Fatalf("bench %q: kv_cache_type %+v, %d bytes per position", ct, r.KV, r.B)
		}
		per[ct] = r.B
	}
	if per["f16"]*2 != per["f32"] || per[""] != per["f16"] || per["q8_0"] >= per["f16"] {
		t.Errorf("bytes per position: %v", per)
	}
}

// TestVerifyCacheTypes: run --trace-out records with an f32 cache (a
// reference), verify defaults to the f32 cache (the strict rule) and with
// --cache-type-k/-v f16 or q8_0 judges by TRACE.md's widened KV rule,
// named in its report.
func TestVerifyCacheTypes(t *testing.T) {
	dir := t.TempDir()
	model, tracePath := smallModel(t, dir), filepath.Join(dir, "t.json")
	if code := runApp("run", model, "--prompt-ids", "1,2,3", "--temperature", "0", "--max-tokens", "4", "--threads", "1", "--trace-out", tracePath); code != 0 {
		t.Fatalf("run exit %d", code)
	}
	for _, c := range []struct{ k, v, rule string }{
		{"", "", "f32 trace vs F32 file"},
		{"f16", "f16", "f32 trace vs F32 file, f16/f16 KV cache"},
		{"q8_0", "f16", "f32 trace vs F32 file, q8_0/f16 KV cache"},
		{"q8_0", "q8_0", "f32 trace vs F32 file, q8_0/q8_0 KV cache"},
	} {
		args := []string{"verify", model, "--trace", tracePath, "--json", "--threads", "1"}
		if c.k != "" {
			args = append(args, "--cache-type-k", c.k, "--cache-type-v", c.v)
		}
		var code int
		out := stdoutOf(t, func() { code = runApp(args...) })
		var rep struct {
			Rule string `json:"rule"`
			Pass bool   `json:"pass"`
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("%v: %v in %q", args, err, out)
		}
		if code != 0 || !rep.Pass || rep.Rule != c.rule {
			t.Errorf("verify k=%q v=%q: exit %d, pass %v, rule %q (want %q)", c.k, c.v, code, rep.Pass, rep.Rule, c.rule)
		}
	}
}
