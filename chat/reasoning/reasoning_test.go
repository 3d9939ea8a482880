package reasoning

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/cflow-dev/cflow/chat"
)

var cases = []struct {
	name      string
	inside    bool
	text      string
	reasoning string
	content   string
}{
	{"qwen3", false, "<think>\nThe user asks for 2+2. That is 4.\n</think>\n\nThe answer is 4.", "The user asks for 2+2. That is 4.", "The answer is 4."},
	{"qwen3 empty block", false, "<think>\n\n</think>\n\nHello!", "", "Hello!"},
	{"no reasoning", false, "Just an answer, with a </think> in it.", "", "Just an answer, with a </think> in it."},
	{"starts with a word like it", false, "<thinking is fun>", "", "<thinking is fun>"},
	{"deepseek-r1 starts inside", true, "Okay, 3+3 is 6.\n</think>\n\n**6**", "Okay, 3+3 is 6.", "**6**"},
	{"unclosed is all reasoning", true, "Let me think about this for a long", "Let me think about this for a long", ""},
	{"qwen3 with a tool call after", false, "<think>\nNeed the weather.\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>", "Need the weather.", "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>"},
}

func TestSplit(t *testing.T) {
	for _, c := range cases {
		r, content := Split(c.text, Think, c.inside)
		if r != c.reasoning || content != c.content {
			t.Errorf("%s: got %q %q want %q %q", c.name, r, content, c.reasoning, c.content)
		}
	}
}

// TestStreamMatchesSplit: fed byte by byte or whole, the deltas join to
// Split's result, and reasoning streams before the reply ends.
func TestStreamMatchesSplit(t *testing.T) {
	for _, c := range cases {
		for _, size := range []int{1, 3, len(c.text)} {
			s := NewStream(Think, c.inside)
			var r, content strings.Builder
			early := false
			for i := 0; i < len(c.text); i += size {
				for _, d := range s.Feed(c.text[i:min(len(c.text), i+size)]) {
					r.WriteString(d.Reasoning)
					content.WriteString(d.Content)
					early = early || d.Reasoning != ""
				}
			}
			for _, d := range s.Close() {
				r.WriteString(d.Reasoning)
				content.WriteString(d.Content)
			}
			if r.String() != c.reasoning || content.String() != c.content {
				t.Errorf("%s by %d: got %q %q want %q %q", c.name, size, r.String(), content.String(), c.reasoning, c.content)
			}
			if size == 1 && c.reasoning != "" && !early {
				t.Errorf("%s: no reasoning before Close", c.name)
			}
		}
	}
}

// TestTemplates: the real templates (rendered by chat, held to jinja2)
// decide where a reply starts: DeepSeek-R1's generation prompt opens
// <think> with enable_thinking (and closes it at once without), Qwen3's
// does not open it, and with enable_thinking false it closes an empty
// block; Llama 3.1's has no reasoning tags.
func TestTemplates(t *testing.T) {
	for _, tc := range []struct {
		model  string
		kwargs map[string]json.RawMessage
		has    bool
		inside bool
	}{
		{"deepseek-r1", map[string]json.RawMessage{"enable_thinking": json.RawMessage("true")}, true, true},
		{"deepseek-r1", nil, true, false}, // llama.cpp's copy closes the block unless enable_thinking
		{"qwen3", nil, true, false},
		{"qwen3", map[string]json.RawMessage{"enable_thinking": json.RawMessage("false")}, true, false},
		{"llama3.1", nil, false, false},
	} {
		src, err := os.ReadFile("../testdata/templates/" + tc.model + ".jinja")
		if err != nil {
			t.Fatal(err)
		}
		tags, has := Detect(string(src))
		if has != tc.has {
			t.Errorf("%s: Detect %v", tc.model, has)
			continue
		}
		tpl, err := chat.Parse(string(src))
		if err != nil {
			t.Fatal(err)
		}
		prompt, err := tpl.Render([]chat.Message{{Role: "user", Content: "2+2?"}}, chat.Options{AddGenerationPrompt: true, Kwargs: tc.kwargs})
		if err != nil {
			t.Fatal(err)
		}
		if got := has && StartsInside(prompt, tags); got != tc.inside {
			t.Errorf("%s %s: StartsInside %v on %q", tc.model, tc.kwargs, got, prompt)
		}
	}
}
