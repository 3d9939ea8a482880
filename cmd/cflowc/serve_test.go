//go:build unix

package main

import (
	"encoding/json"
	"math/rand"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cflow-dev/cflow/archspec"
	"github.com/cflow-dev/cflow/cflowfmt/fmttest"
	"github.com/cflow-dev/cflow/quant"
)

// TestServeSIGTERM: cflowc serve answers a completion of token ids (a
// file without a tokenizer), drains on SIGTERM and exits 0; bad flags
// exit 2.
func TestServeSIGTERM(t *testing.T) {
	s := fmttest.Random(rand.New(rand.NewSource(4)), quant.F32)
	s.Header.CombineStyle, s.Header.DenseDelay, s.Header.ExpertDelay, s.Header.VocabSize = archspec.PreNorm, 0, 0, 60
	model := filepath.Join(t.TempDir(), "m.cflow")
	if _, err := fmttest.WriteCflow(model, s, nil); err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]string{{"--parallel", "0"}, {"--ctx", "1000000"}, {"--threads", "0"}, {"--port", "70000"},
		{"--max-conns", "0"}, {"--read-timeout", "0s"}, {"--write-timeout", "-1s"}, {"--idle-timeout", "0s"}, {"--drain-timeout", "0s"},
		{"--api-key-file", filepath.Join(t.TempDir(), "none")}, {"--api-key", " "}} {
		if code := runApp(append([]string{"serve", model}, bad...)...); code != exitUsage {
			t.Errorf("serve %v: exit %d, want %d", bad, code, exitUsage)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	exit := make(chan int, 1)
	keyFile := filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(keyFile, []byte("\nfile-key\n\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CFLOW_API_KEY", "env-key")
	go func() {
		exit <- runApp("serve", model, "--port", port, "--parallel", "2", "--threads", "1", "--api-key-file", keyFile,
			"--alias", "m", "--alias", "gpt-4o")
	}()
	base := "http://127.0.0.1:" + port
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if resp, err := http.Get(base + "/health"); err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("serve did not come up")
		}
	}
	complete := func(key, model string) *http.Response {
		req, _ := http.NewRequest("POST", base+"/v1/completions", strings.NewReader(`{"model":"`+model+`","prompt":[1,2,3],"max_tokens":3,"temperature":0}`))
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	for _, c := range []struct {
		key, model string
		code       int
	}{{"", "m", 401}, {"wrong", "m", 401}, {"env-key", "gpt-4o", 200}, {"file-key", "other", 404}} {
		resp := complete(c.key, c.model)
		resp.Body.Close()
		if resp.StatusCode != c.code {
			t.Errorf("key %q, model %q: %d, want %d", c.key, c.model, resp.StatusCode, c.code)
		}
	}
	resp := complete("file-key", "m")
	var v struct {
		Usage struct {
			CompletionTokens int `json:"completion_tokens"`
		}
	}
	json.NewDecoder(resp.Body).Decode(&v)
	resp.Body.Close()
	if resp.StatusCode != 200 || v.Usage.CompletionTokens != 3 {
		t.Fatalf("completion: %d %+v", resp.StatusCode, v)
	}
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-exit:
		if code != 0 {
			t.Fatalf("exit %d after SIGTERM, want 0", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not exit after SIGTERM")
	}
}
