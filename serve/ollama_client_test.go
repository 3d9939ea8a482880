package serve

import (
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestOllamaClient drives the server with the real Ollama client (npm
// `ollama`, installed by scripts/ollama-client.sh) through an API key:
// version, list, show, ps, chat and generate streamed and not (equal to
// the hand-stepped greedy reference), and the client's errors for a bad
// option, an unknown model and a missing key.
func TestOllamaClient(t *testing.T) {
	nm, err := exec.Command("bash", "../scripts/ollama-client.sh").Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 3 {
		t.Skipf("node and npm are absent and cannot be installed here (not root): %s", ee.Stderr)
	}
	if err != nil {
		t.Fatalf("scripts/ollama-client.sh: %v", err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal(err)
	}
	s, hs := startServer(t, Config{Parallel: 2, APIKeys: []string{"sekrit"}}, nil)
	want := greedyText(t, "Once upon a time", 40)
	script, _ := filepath.Abs("testdata/ollama_client.cjs")
	raw, err := exec.Command(node, script, strings.TrimSpace(string(nm)), hs.URL, "demo", "sekrit").Output()
	if err != nil {
		if errors.As(err, &ee) {
			t.Fatalf("node client: %v\n%s", err, ee.Stderr)
		}
		t.Fatal(err)
	}
	type final struct {
		Reason               string
		Eval, Prompt, Total  float64
		Content, Role, Quant string
	}
	var got struct {
		Version string
		List    []struct {
			Name, Digest, Quant string
			Size                float64
		}
		Show struct {
			Arch, Format string
			Capabilities []string
		}
		PS []struct {
			Name          string
			ContextLength float64 `json:"context_length"`
		}
		Chat struct {
			Content, Role, Reason       string
			Done                        bool
			Prompt, Eval, Total, EvalNs float64
		}
		ChatStream struct {
			Text  string
			Parts int
			Last  *final
		}
		Generate struct {
			Response, Reason string
			Eval             float64
		}
		GenerateStream struct {
			Text, Reason string
			Parts        int
		}
		BadOption, BadModel, NoKey *struct {
			Name, Message string
			Status        float64
		}
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatalf("client output %q: %v", raw, err)
	}
	if got.Version != OllamaVersion || len(got.List) != 1 || got.List[0].Name != "demo:latest" || got.List[0].Quant != "Q4_0" ||
		len(got.List[0].Digest) != 64 || got.List[0].Size <= 0 {
		t.Errorf("version %q, list %+v", got.Version, got.List)
	}
	if got.Show.Arch != s.info.arch || got.Show.Format != "cflow" || len(got.Show.Capabilities) == 0 || got.Show.Capabilities[0] != "completion" {
		t.Errorf("show %+v", got.Show)
	}
	if len(got.PS) != 1 || got.PS[0].Name != "demo:latest" || got.PS[0].ContextLength != float64(s.ctx) {
		t.Errorf("ps %+v", got.PS)
	}
	c := got.Chat
	if c.Content != want || c.Role != "assistant" || !c.Done || c.Reason != "length" || c.Eval != 40 || c.Prompt != 17 || c.Total <= 0 || c.EvalNs <= 0 {
		t.Errorf("chat %+v, want %q", c, want)
	}
	if cs := got.ChatStream; cs.Text != want || cs.Parts < 2 || cs.Last == nil || cs.Last.Reason != "length" || cs.Last.Eval != 40 || cs.Last.Total <= 0 {
		t.Errorf("chat stream %+v", cs)
	}
	if g := got.Generate; g.Response != want || g.Reason != "length" || g.Eval != 40 {
		t.Errorf("generate %+v", g)
	}
	if g := got.GenerateStream; g.Text != want || g.Parts < 2 || g.Reason != "length" {
		t.Errorf("generate stream %+v", g)
	}
	if e := got.BadOption; e == nil || e.Name != "ResponseError" || e.Status != 400 || !strings.HasPrefix(e.Message, "options.temperature:") {
		t.Errorf("temperature 5: %+v", e)
	}
	if e := got.BadModel; e == nil || e.Status != 404 || !strings.Contains(e.Message, "not found") {
		t.Errorf("unknown model: %+v", e)
	}
	if e := got.NoKey; e == nil || e.Status != 401 || !strings.Contains(e.Message, "API key") {
		t.Errorf("no key: %+v", e)
	}
}
