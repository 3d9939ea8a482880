package chat

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestToolsAgreeWithJinja2: tool-use conversations (testdata/tools.json:
// tools, an assistant turn that only calls a tool with null content, tool
// results with tool_call_id and name, parallel calls, Qwen3's
// enable_thinking through chat_template_kwargs) render through every
// template exactly as Debian's python3-jinja2 renders them with
// transformers' options, or fail where it raises (Llama 3.1's one call at
// a time, Qwen3 on null content); testdata/tools.golden.json comes from
// /usr/bin/python3 testdata/render.py --tools testdata/tools.json testdata/tools.golden.json.
func TestToolsAgreeWithJinja2(t *testing.T) {
	var cases []struct {
		Name     string                     `json:"name"`
		Gen      bool                       `json:"add_generation_prompt"`
		Tools    []json.RawMessage          `json:"tools"`
		Kwargs   map[string]json.RawMessage `json:"kwargs"`
		Messages []Message                  `json:"messages"`
	}
	var golden map[string]struct {
		Output *string
		Raises string
	}
	var specials map[string]struct {
		BOS *string `json:"bos_token"`
		EOS *string `json:"eos_token"`
	}
	for f, v := range map[string]any{"testdata/tools.json": &cases, "testdata/tools.golden.json": &golden, "testdata/templates/specials.json": &specials} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
	files, _ := filepath.Glob("testdata/templates/*.jinja")
	rendered := 0
	for _, f := range files {
		model := strings.TrimSuffix(filepath.Base(f), ".jinja")
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		tpl, err := Parse(string(src))
		if err != nil {
			t.Fatalf("%s: %v", model, err)
		}
		o := Options{Now: pinnedNow}
		if sp := specials[model]; sp.BOS != nil {
			o.BOSToken = *sp.BOS
		}
		if sp := specials[model]; sp.EOS != nil {
			o.EOSToken = *sp.EOS
		}
		for _, c := range cases {
			key := model + "." + c.Name
			want, ok := golden[key]
			if !ok {
				t.Fatalf("%s: no golden (rerun render.py --tools)", key)
			}
			o.AddGenerationPrompt, o.Tools, o.Kwargs = c.Gen, c.Tools, c.Kwargs
			got, err := tpl.Render(c.Messages, o)
			switch {
			case want.Raises != "" && err == nil:
				t.Errorf("%s: rendered %q; jinja2 raises %s", key, got, want.Raises)
			case want.Raises == "" && err != nil:
				t.Errorf("%s: %v; jinja2 renders %q", key, err, *want.Output)
			case want.Raises == "" && got != *want.Output:
				t.Errorf("%s:\n got %q\nwant %q (jinja2)", key, got, *want.Output)
			case want.Raises == "":
				rendered++
			}
		}
	}
	if rendered < 40 {
		t.Fatalf("only %d renderings compared", rendered)
	}
}

// TestMessageJSON: OpenAI's message shapes decode as the API means them:
// null or absent content is None to the template, text parts join, other
// parts are refused by name; null content encodes back as null.
func TestMessageJSON(t *testing.T) {
	var ms []Message
	in := `[{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},
	{"role":"tool","tool_call_id":"c1","name":"f","content":"ok"},
	{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},
	{"role":"assistant"}]`
	if err := json.Unmarshal([]byte(in), &ms); err != nil {
		t.Fatal(err)
	}
	if !ms[0].NullContent || ms[0].ToolCalls[0].Function.Name != "f" || ms[1].ToolCallID != "c1" || ms[1].Name != "f" ||
		ms[1].NullContent || ms[2].Content != "ab" || !ms[3].NullContent {
		t.Fatalf("%+v", ms)
	}
	b, err := json.Marshal(ms[0])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"content":null`) {
		t.Fatalf("%s", b)
	}
	var m Message
	if err := json.Unmarshal([]byte(`{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}`), &m); err == nil || !strings.Contains(err.Error(), "image_url") {
		t.Fatalf("image part: %v", err)
	}
}

// TestRenderRefusals: arguments that are not JSON, a tool that is not
// JSON and a kwarg that would replace messages are errors naming them.
func TestRenderRefusals(t *testing.T) {
	tpl, err := Parse(`{{ messages | length }}`)
	if err != nil {
		t.Fatal(err)
	}
	bad := []Message{{Role: "assistant", ToolCalls: []ToolCall{{Function: FunctionCall{Name: "f", Arguments: "{city: x}"}}}}}
	if _, err := tpl.Render(bad, Options{}); err == nil || !strings.Contains(err.Error(), "messages[0].tool_calls[0].function.arguments") {
		t.Fatalf("bad arguments: %v", err)
	}
	if _, err := tpl.Render(nil, Options{Tools: []json.RawMessage{json.RawMessage(`{"type":`)}}); err == nil || !strings.Contains(err.Error(), "tools[0]") {
		t.Fatalf("bad tool: %v", err)
	}
	if _, err := tpl.Render(nil, Options{Kwargs: map[string]json.RawMessage{"messages": json.RawMessage(`[]`)}}); err == nil || !strings.Contains(err.Error(), `"messages"`) {
		t.Fatalf("kwarg messages: %v", err)
	}
}

// TestNullContentAsEmpty: with the option, Qwen3 renders the tool-call
// turn whose content is null as jinja2 renders it with content "".
func TestNullContentAsEmpty(t *testing.T) {
	var cases []struct {
		Name     string            `json:"name"`
		Tools    []json.RawMessage `json:"tools"`
		Messages []Message         `json:"messages"`
	}
	var golden map[string]struct{ Output *string }
	for f, v := range map[string]any{"testdata/tools.json": &cases, "testdata/tools.golden.json": &golden} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatal(err)
		}
	}
	src, err := os.ReadFile("testdata/templates/qwen3.jinja")
	if err != nil {
		t.Fatal(err)
	}
	tpl, err := Parse(string(src))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		if c.Name != "followup" {
			continue
		}
		if !c.Messages[1].NullContent {
			t.Fatal("the followup case has lost its null content")
		}
		got, err := tpl.Render(c.Messages, Options{AddGenerationPrompt: true, EOSToken: "<|im_end|>", Tools: c.Tools, NullContentAsEmpty: true})
		want := golden["qwen3.followup-empty"].Output
		if err != nil || want == nil || got != *want {
			t.Fatalf("err %v\n got %q\nwant %v", err, got, want)
		}
		return
	}
	t.Fatal("no followup case")
}
