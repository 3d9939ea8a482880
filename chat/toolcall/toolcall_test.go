package toolcall

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cflow-dev/cflow/chat"
)

// fixedIDs numbers the calls a test parses.
func fixedIDs() func() string {
	n := 0
	return func() string { n++; return fmt.Sprintf("id%d", n) }
}

type want struct {
	content string
	calls   []Call
}

// replies are model outputs as each family writes them (and as their
// templates render a call: see TestTemplateRoundTrip), with the edge
// cases around them.
var replies = []struct {
	name   string
	syntax Syntax
	text   string
	want   want
}{
	{"hermes one", Hermes, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Zürich\", \"unit\": \"celsius\"}}\n</tool_call>",
		want{"", []Call{{"id1", "get_weather", `{"city": "Zürich", "unit": "celsius"}`}}}},
	{"hermes text before, two calls", Hermes, "Let me check both.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\", \"days\": [1, 2]}}\n</tool_call>",
		want{"Let me check both.", []Call{{"id1", "get_weather", `{"city": "Oslo"}`}, {"id2", "get_weather", `{"city": "Rome", "days": [1, 2]}`}}}},
	{"hermes no call", Hermes, "It is 7 °C and cloudy in Zürich.", want{"It is 7 °C and cloudy in Zürich.", nil}},
	{"hermes malformed json stays content", Hermes, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": }\n</tool_call>",
		want{"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": }\n</tool_call>", nil}},
	{"hermes arguments not an object", Hermes, "<tool_call>{\"name\": \"f\", \"arguments\": \"x\"}</tool_call>",
		want{"<tool_call>{\"name\": \"f\", \"arguments\": \"x\"}</tool_call>", nil}},
	{"hermes unclosed at the end counts", Hermes, "<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": \"a \\\"b\\\" </tool_call>\"}}",
		want{"", []Call{{"id1", "search", `{"query": "a \"b\" </tool_call>"}`}}}},
	{"hermes truncated stays content", Hermes, "<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": \"a",
		want{"<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": \"a", nil}},
	{"hermes malformed then good", Hermes, "<tool_call>oops</tool_call> then <tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>",
		want{"<tool_call>oops</tool_call> then", []Call{{"id1", "f", `{}`}}}},

	{"llama json", Llama3, "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}",
		want{"", []Call{{"id1", "get_weather", `{"city": "Paris"}`}}}},
	{"llama json with type", Llama3, "\n{\"type\": \"function\", \"name\": \"search\", \"parameters\": {\"query\": \"llama\", \"limit\": 3}}",
		want{"", []Call{{"id1", "search", `{"query": "llama", "limit": 3}`}}}},
	{"llama python_tag json", Llama3, "Searching.<|python_tag|>{\"name\": \"search\", \"parameters\": {\"query\": \"x\"}}",
		want{"Searching.", []Call{{"id1", "search", `{"query": "x"}`}}}},
	{"llama builtin", Llama3, "<|python_tag|>brave_search.call(query=\"weather in Paris\", count=2)",
		want{"", []Call{{"id1", "brave_search", `{"query": "weather in Paris", "count": 2}`}}}},
	{"llama two calls", Llama3, "{\"name\": \"a\", \"parameters\": {}}; {\"name\": \"b\", \"parameters\": {\"x\": 1.5}}",
		want{"", []Call{{"id1", "a", `{}`}, {"id2", "b", `{"x": 1.5}`}}}},
	{"llama json answer is content", Llama3, "{\"answer\": 4}", want{"{\"answer\": 4}", nil}},
	{"llama prose", Llama3, "Paris is the capital of France.", want{"Paris is the capital of France.", nil}},
	{"llama python code is content", Llama3, "<|python_tag|>print(1)", want{"<|python_tag|>print(1)", nil}},

	{"mistral list", Mistral, "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}, \"id\": \"a1b2c3d4e\"}, {\"name\": \"search\", \"arguments\": {\"query\": \"x\"}}]",
		want{"", []Call{{"a1b2c3d4e", "get_weather", `{"city": "Paris"}`}, {"id1", "search", `{"query": "x"}`}}}},
	{"mistral call id", Mistral, "Sure.[TOOL_CALLS]get_weather[CALL_ID]a1b2c3d4e[ARGS]{\"city\": \"Paris\"}",
		want{"Sure.", []Call{{"a1b2c3d4e", "get_weather", `{"city": "Paris"}`}}}},
	{"mistral args per call", Mistral, "[TOOL_CALLS]get_weather[ARGS]{\"city\":\"Oslo\"}[TOOL_CALLS]search[ARGS]{\"query\":\"x\"}",
		want{"", []Call{{"id1", "get_weather", `{"city":"Oslo"}`}, {"id2", "search", `{"query":"x"}`}}}},
	{"mistral malformed", Mistral, "[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {]", want{"[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {]", nil}},

	{"gemma4", Gemma4, "<|tool_call>call:get_weather{city:<|\"|>Zürich, \"CH\"<|\"|>,days:3,detail:{wind:true,ratio:0.25,tags:[<|\"|>a<|\"|>,null]}}<tool_call|>",
		want{"", []Call{{"id1", "get_weather", `{"city":"Zürich, \"CH\"","days":3,"detail":{"wind":true,"ratio":0.25,"tags":["a",null]}}`}}}},
	{"gemma4 text and two calls", Gemma4, "Checking.<|tool_call>call:a{}<tool_call|><|tool_call>call:b{x:-1e3}<tool_call|>",
		want{"Checking.", []Call{{"id1", "a", `{}`}, {"id2", "b", `{"x":-1e3}`}}}},
	{"gemma4 malformed", Gemma4, "<|tool_call>call:a{x:<tool_call|>", want{"<|tool_call>call:a{x:<tool_call|>", nil}},
}

func TestParse(t *testing.T) {
	for _, r := range replies {
		p := Parser{Syntax: r.syntax, NewID: fixedIDs()}
		content, calls := p.Parse(r.text)
		if content != r.want.content || fmt.Sprint(calls) != fmt.Sprint(r.want.calls) {
			t.Errorf("%s:\n got %q %v\nwant %q %v", r.name, content, calls, r.want.content, r.want.calls)
		}
		for _, c := range calls {
			var v map[string]any
			if err := json.Unmarshal([]byte(c.Arguments), &v); err != nil {
				t.Errorf("%s: arguments %q: %v", r.name, c.Arguments, err)
			}
		}
	}
}

// streamed feeds text in the given pieces and joins the deltas back.
func streamed(t *testing.T, name string, p Parser, pieces []string) (string, []Call, int, error) {
	t.Helper()
	s := p.Stream()
	var content strings.Builder
	var calls []Call
	argPieces := 0
	var failed error
	apply := func(ds []Delta, err error) {
		if err != nil && failed == nil {
			failed = err
		}
		for _, d := range ds {
			if d.Call == nil {
				content.WriteString(d.Content)
				continue
			}
			c := d.Call
			switch {
			case c.Index == len(calls):
				if c.ID == "" || c.Name == "" {
					t.Fatalf("first delta of call %d lacks id or name: %+v", c.Index, c)
				}
				calls = append(calls, Call{c.ID, c.Name, c.Arguments})
			case c.Index < len(calls) && c.ID == "" && c.Name == "":
				calls[c.Index].Arguments += c.Arguments
			default:
				t.Fatalf("delta out of order: %+v after %d calls", c, len(calls))
			}
			if c.Arguments != "" {
				argPieces++
			}
		}
	}
	for _, piece := range pieces {
		apply(s.Feed(piece))
	}
	apply(s.Close())
	if failed != nil {
		return "", nil, 0, failed
	}
	gc, gcalls := s.Result()
	if gc != content.String() || fmt.Sprint(gcalls) != fmt.Sprint(calls) {
		t.Fatalf("Result %q %v differs from the deltas %q %v", gc, gcalls, content.String(), calls)
	}
	return content.String(), calls, argPieces, nil
}

// TestStreamMatchesParse: fed byte by byte, or in random pieces, a
// stream's deltas join to exactly what Parse gives for the whole reply,
// and the arguments of a JSON call arrive in several pieces.
func TestStreamMatchesParse(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for _, r := range replies {
		var bytes []string
		for i := 0; i < len(r.text); i++ {
			bytes = append(bytes, r.text[i:i+1])
		}
		var random []string
		for rest := r.text; rest != ""; {
			n := min(len(rest), 1+rng.Intn(6))
			random = append(random, rest[:n])
			rest = rest[n:]
		}
		for _, pieces := range [][]string{bytes, random, {r.text}} {
			content, calls, argPieces, err := streamed(t, r.name, Parser{Syntax: r.syntax, NewID: fixedIDs()}, pieces)
			if err != nil {
				// Only a call that went malformed after its name and
				// arguments began to stream may end a stream this way.
				retracts := map[string]bool{"hermes malformed json stays content": len(pieces) > 1, "hermes truncated stays content": true, "mistral malformed": len(pieces) > 1}
				if err != ErrRetracted || !retracts[r.name] {
					t.Errorf("%s in %d pieces: %v", r.name, len(pieces), err)
				}
				continue
			}
			wantCalls := r.want.calls
			if r.name == "mistral list" && len(pieces) > 1 { // the stream names a call before Nemo's id shows
				wantCalls = []Call{{"id1", "get_weather", `{"city": "Paris"}`}, {"id2", "search", `{"query": "x"}`}}
			}
			if content != r.want.content || fmt.Sprint(calls) != fmt.Sprint(wantCalls) {
				t.Errorf("%s in %d pieces:\n got %q %v\nwant %q %v", r.name, len(pieces), content, calls, r.want.content, wantCalls)
			}
			if len(pieces) == len(bytes) && r.syntax != Gemma4 && r.name != "llama builtin" && len(calls) > 0 && argPieces < 2*len(calls) {
				t.Errorf("%s: arguments came in %d pieces for %d calls", r.name, argPieces, len(calls))
			}
		}
	}
}

// TestStreamHoldsBackMarkers: content is streamed as it comes, except the
// text that may yet be a call.
func TestStreamHoldsBackMarkers(t *testing.T) {
	s := Parser{Syntax: Hermes, NewID: fixedIDs()}.Stream()
	ds, _ := s.Feed("Checking now. <tool_")
	if len(ds) != 1 || ds[0].Content != "Checking now." {
		t.Fatalf("%+v", ds)
	}
	ds, _ = s.Feed("call>{\"name\": \"f\", \"arguments\": {\"a\"")
	if len(ds) != 1 || ds[0].Call == nil || ds[0].Call.Name != "f" || ds[0].Call.Arguments != `{"a"` {
		t.Fatalf("%+v", ds)
	}
	// A retracted call is an error, never a contradiction.
	s = Parser{Syntax: Hermes, NewID: fixedIDs()}.Stream()
	s.Feed(`<tool_call>{"name": "f", "arguments": {"a": 1}}`)
	if _, err := s.Feed(` trailing junk`); err != ErrRetracted {
		t.Fatalf("err = %v", err)
	}
}

func TestDetect(t *testing.T) {
	want := map[string]Syntax{
		"llama3": None, "llama3.1": Llama3, "llama3.2": Llama3, "qwen2.5": Hermes, "qwen3": Hermes,
		"hermes2pro": Hermes, "mistral-nemo": Mistral, "gemma3": None, "gemma4": Gemma4, "deepseek-r1": None,
	}
	for model, syn := range want {
		src, err := os.ReadFile(filepath.Join("../testdata/templates", model+".jinja"))
		if err != nil {
			t.Fatal(err)
		}
		if got := Detect(string(src)); got != syn {
			t.Errorf("%s: %v, want %v", model, got, syn)
		}
	}
	if Detect("{{ '<tool_call>\\n<function=x>' }}") != None {
		t.Errorf("Qwen3-Coder's XML calls are not Hermes")
	}
}

// TestTemplateRoundTrip: a model's own template, rendered by chat (held
// to jinja2), writes an assistant turn's tool calls in the syntax the
// model was trained on; parsing that text gives the calls back. The
// templates are the truth for each syntax, Gemma 4's notation included.
func TestTemplateRoundTrip(t *testing.T) {
	calls := []chat.ToolCall{
		{ID: "call0abcd", Type: "function", Function: chat.FunctionCall{Name: "get_weather", Arguments: `{"city": "Zürich", "unit": "celsius", "days": [1, 2], "detail": {"wind": true, "ratio": 0.25}}`}},
		{ID: "call1efgh", Type: "function", Function: chat.FunctionCall{Name: "search", Arguments: `{"query": "a \"quoted\" word", "limit": 3}`}},
	}
	tools := []json.RawMessage{
		json.RawMessage(`{"type": "function", "function": {"name": "get_weather", "description": "Weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}`),
		json.RawMessage(`{"type": "function", "function": {"name": "search", "description": "Search", "parameters": {"type": "object", "properties": {"query": {"type": "string"}}}}}`),
	}
	for _, tc := range []struct {
		model string
		end   []string // what the template writes after the calls
		max   int      // calls per turn the template takes
	}{
		{"llama3.1", []string{"<|eot_id|>"}, 1},
		{"llama3.2", []string{"<|eot_id|>"}, 1},
		{"qwen2.5", []string{"<|im_end|>"}, 2},
		{"qwen3", []string{"<|im_end|>"}, 2},
		{"hermes2pro", []string{"<|im_end|>"}, 2},
		{"mistral-nemo", []string{"</s>"}, 2},
		{"gemma4", []string{"<turn|>", "<|tool_response>"}, 2},
	} {
		src, err := os.ReadFile(filepath.Join("../testdata/templates", tc.model+".jinja"))
		if err != nil {
			t.Fatal(err)
		}
		tpl, err := chat.Parse(string(src))
		if err != nil {
			t.Fatal(err)
		}
		syn := Detect(string(src))
		for n := 1; n <= tc.max; n++ {
			user := []chat.Message{{Role: "user", Content: "Weather in Zürich?"}}
			o := chat.Options{AddGenerationPrompt: true, BOSToken: "<s>", EOSToken: tc.end[0], Tools: tools}
			p1, err := tpl.Render(user, o)
			if err != nil {
				t.Fatalf("%s: %v", tc.model, err)
			}
			o.AddGenerationPrompt = false
			turn := chat.Message{Role: "assistant", NullContent: syn != Hermes || tc.model == "hermes2pro", ToolCalls: calls[:n]}
			p2, err := tpl.Render(append(user, turn), o)
			if err != nil {
				t.Fatalf("%s: %v", tc.model, err)
			}
			p1 = strings.TrimSuffix(p1, "<|channel>thought\n<channel|>") // Gemma 4's empty thought when thinking is off
			if !strings.HasPrefix(p2, p1) {
				t.Fatalf("%s: the turn does not extend the generation prompt:\n%q\n%q", tc.model, p1, p2)
			}
			reply := p2[len(p1):]
			if i := strings.Index(reply, "</think>"); strings.HasPrefix(reply, "<think>") && i >= 0 {
				reply = reply[i+len("</think>"):] // Qwen3's empty reasoning block
			}
			for _, e := range tc.end {
				if i := strings.Index(reply, e); i >= 0 {
					reply = reply[:i]
				}
			}
			content, got := Parser{Syntax: syn}.Parse(reply)
			if content != "" || len(got) != n {
				t.Fatalf("%s: %q → content %q, %d calls", tc.model, reply, content, len(got))
			}
			for i, c := range got {
				if c.Name != calls[i].Function.Name || !sameJSON(t, c.Arguments, calls[i].Function.Arguments) {
					t.Errorf("%s: %q → call %d %+v", tc.model, reply, i, c)
				}
				if syn == Mistral && c.ID != calls[i].ID {
					t.Errorf("%s: id %q, the template wrote %q", tc.model, c.ID, calls[i].ID)
				}
			}
		}
	}
}

func sameJSON(t *testing.T, a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	return fmt.Sprint(x) == fmt.Sprint(y)
}

func TestNewCallID(t *testing.T) {
	if id := NewCallID(Mistral); len(id) != 9 || strings.Trim(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") != "" {
		t.Errorf("mistral id %q", id)
	}
	if a, b := NewCallID(Hermes), NewCallID(Hermes); !strings.HasPrefix(a, "call_") || len(a) != 29 || a == b {
		t.Errorf("ids %q %q", a, b)
	}
}
