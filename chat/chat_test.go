package chat

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The expected renderings in testdata/golden come from Debian's
// python3-jinja2 configured as transformers configures it
// (testdata/render.py; regenerate with
// /usr/bin/python3 testdata/render.py testdata/templates testdata/conversations.json testdata/golden),
// so CI needs no Python.

// pinnedNow is render.py's FIXED_NOW.
var pinnedNow = func() time.Time { return time.Date(2026, 12, 1, 5, 30, 0, 0, time.UTC) }

type conversation struct {
	Name     string    `json:"name"`
	Gen      bool      `json:"add_generation_prompt"`
	Messages []Message `json:"messages"`
}

func loadConversations(t *testing.T) []conversation {
	b, err := os.ReadFile("testdata/conversations.json")
	if err != nil {
		t.Fatal(err)
	}
	var cs []conversation
	if err := json.Unmarshal(b, &cs); err != nil {
		t.Fatal(err)
	}
	return cs
}

func TestGolden(t *testing.T) {
	convs := loadConversations(t)
	var specials map[string]struct {
		BOS *string `json:"bos_token"`
		EOS *string `json:"eos_token"`
	}
	b, err := os.ReadFile("testdata/templates/specials.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &specials); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("testdata/templates/*.jinja")
	if len(files) < 6 {
		t.Fatalf("%d templates", len(files))
	}
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
		sp := specials[model]
		o := Options{Now: pinnedNow}
		if sp.BOS != nil {
			o.BOSToken = *sp.BOS
		}
		if sp.EOS != nil {
			o.EOSToken = *sp.EOS
		}
		for _, c := range convs {
			want, err := os.ReadFile(filepath.Join("testdata/golden", model+"."+c.Name+".txt"))
			if err != nil {
				t.Fatal(err)
			}
			o.AddGenerationPrompt = c.Gen
			got, err := tpl.Render(c.Messages, o)
			if err != nil {
				t.Fatalf("%s %s: %v", model, c.Name, err)
			}
			if got != string(want) {
				t.Errorf("%s %s:\n got %q\nwant %q", model, c.Name, got, want)
			}
		}
	}
}

// TestRaiseException: Gemma 3's template refuses roles that do not
// alternate, and the message reaches the caller.
func TestRaiseException(t *testing.T) {
	src, err := os.ReadFile("testdata/templates/gemma3.jinja")
	if err != nil {
		t.Fatal(err)
	}
	tpl, err := Parse(string(src))
	if err != nil {
		t.Fatal(err)
	}
	_, err = tpl.Render([]Message{{Role: "user", Content: "a"}, {Role: "user", Content: "b"}}, Options{})
	if err == nil || !strings.Contains(err.Error(), "alternate") {
		t.Fatalf("err = %v", err)
	}
}

// TestFeatures: tojson keeps non-ASCII (jinja2 with transformers' filter:
// {"k": "日本"}), loop controls, strftime_now on the pinned clock.
func TestFeatures(t *testing.T) {
	tpl, err := Parse(`{{ {"k": "日本"} | tojson }}|{% for i in range(5) %}{% if i == 1 %}{% continue %}{% endif %}{% if i == 3 %}{% break %}{% endif %}{{ i }}{% endfor %}|{{ strftime_now("%d %b %Y %H:%M %A %%") }}`)
	if err != nil {
		t.Fatal(err)
	}
	got, err := tpl.Render(nil, Options{Now: pinnedNow})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"k": "日本"}|02|01 Dec 2026 05:30 Tuesday %`; got != want {
		t.Fatalf("got %q want %q", got, want)
	}
	if _, err := Parse("  "); err != ErrNoTemplate {
		t.Fatalf("empty template: %v", err)
	}
}

// TestProbesAgreeWithJinja2: held-out template probes (testdata/probes.json:
// %-formatting, None and float printing, undefined values in arithmetic,
// llama.cpp's firefunction-v2 template rendered without its functions)
// render exactly what Debian's python3-jinja2 renders, or fail where it
// raises (testdata/probes.golden.json, from
// /usr/bin/python3 testdata/render.py --probes testdata/probes.json testdata/probes.golden.json).
func TestProbesAgreeWithJinja2(t *testing.T) {
	var probes []struct{ Name, Template, File string }
	var golden map[string]struct {
		Output *string
		Raises string
	}
	for f, v := range map[string]any{"testdata/probes.json": &probes, "testdata/probes.golden.json": &golden} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
	conv := loadConversations(t)[0]
	for _, p := range probes {
		src := p.Template
		if p.File != "" {
			b, err := os.ReadFile(filepath.Join("testdata", p.File))
			if err != nil {
				t.Fatal(err)
			}
			src = string(b)
		}
		want, ok := golden[p.Name]
		if !ok {
			t.Fatalf("%s: no golden (rerun render.py --probes)", p.Name)
		}
		tpl, err := Parse(src)
		var got string
		if err == nil {
			got, err = tpl.Render(conv.Messages, Options{AddGenerationPrompt: true, Now: pinnedNow})
		}
		switch {
		case want.Raises != "" && err == nil:
			t.Errorf("%s: rendered %q; jinja2 raises %s", p.Name, got, want.Raises)
		case want.Raises == "" && err != nil:
			t.Errorf("%s: %v; jinja2 renders %q", p.Name, err, *want.Output)
		case want.Raises == "" && got != *want.Output:
			t.Errorf("%s:\n got %q\nwant %q (jinja2)", p.Name, got, *want.Output)
		}
	}
}
