package serve

import (
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestOpenAIClient drives the server with the real OpenAI client (npm
// `openai`, installed by scripts/openai-client.sh): streaming and
// non-streaming chat equal to the greedy reference, a stop sequence, one
// seeded sample twice, a text completion, and the client's typed errors
// for a bad parameter (400 naming it) and an unknown model (404).
func TestOpenAIClient(t *testing.T) {
	nm, err := exec.Command("bash", "../scripts/openai-client.sh").Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 3 {
		t.Skipf("node and npm are absent and cannot be installed here (not root): %s", ee.Stderr)
	}
	if err != nil {
		t.Fatalf("scripts/openai-client.sh: %v", err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal(err)
	}
	_, hs := startServer(t, Config{Parallel: 2}, nil)
	want := greedyText(t, "Once upon a time", 40)
	stop := want[14:19]
	script, _ := filepath.Abs("testdata/openai_client.cjs")
	cmd := exec.Command(node, script, strings.TrimSpace(string(nm)), hs.URL+"/v1", "demo", stop)
	raw, err := cmd.Output()
	if err != nil {
		if errors.As(err, &ee) {
			t.Fatalf("node client: %v\n%s", err, ee.Stderr)
		}
		t.Fatal(err)
	}
	var got struct {
		Models []string
		Chat   struct {
			Content, Finish string
			Usage           map[string]any
		}
		Stream struct {
			Text   string
			Chunks int
			Finish string
			Usage  map[string]any
		}
		Stop                     struct{ Content, Finish string }
		Seeded                   []string
		Completion               string
		BadTemperature, BadModel *struct {
			Status                  int
			Param, Code, Type, Name *string
		}
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatalf("client output %q: %v", raw, err)
	}
	if len(got.Models) != 1 || got.Models[0] != "demo" {
		t.Errorf("models %v", got.Models)
	}
	if got.Chat.Content != want || got.Chat.Finish != "length" || got.Chat.Usage["completion_tokens"] != 40.0 || got.Chat.Usage["prompt_tokens"] != 17.0 {
		t.Errorf("chat %+v, want %q", got.Chat, want)
	}
	if got.Stream.Text != want || got.Stream.Chunks != 40 || got.Stream.Finish != "length" || got.Stream.Usage["total_tokens"] != 57.0 {
		t.Errorf("stream %+v", got.Stream)
	}
	if got.Stop.Content != want[:strings.Index(want, stop)] || got.Stop.Finish != "stop" {
		t.Errorf("stop %q: %+v", stop, got.Stop)
	}
	if len(got.Seeded) != 2 || got.Seeded[0] != got.Seeded[1] || got.Seeded[0] == "" {
		t.Errorf("seeded %q", got.Seeded)
	}
	if got.Completion != want {
		t.Errorf("completion %q", got.Completion)
	}
	if e := got.BadTemperature; e == nil || e.Status != 400 || e.Param == nil || *e.Param != "temperature" || *e.Name != "BadRequestError" {
		t.Errorf("temperature 5: %+v", e)
	}
	if e := got.BadModel; e == nil || e.Status != 404 || e.Code == nil || *e.Code != "model_not_found" || *e.Name != "NotFoundError" {
		t.Errorf("unknown model: %+v", e)
	}
}
