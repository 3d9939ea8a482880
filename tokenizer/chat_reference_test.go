package tokenizer

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestChatGoldenReferenceIDs: the chat renderings jinja2 produced
// (../chat/testdata/golden, multi-turn conversations with a system
// message) tokenize to the reference's ids under each template's own
// model tokenizer, special tokens in the rendered text included.
func TestChatGoldenReferenceIDs(t *testing.T) {
	byModel := map[string]string{"llama3": "llama3", "llama3.1": "llama3", "llama3.2": "llama3", "qwen2.5": "qwen3", "qwen3": "qwen3", "gemma3": "gemma3"}
	files, err := filepath.Glob("../chat/testdata/golden/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden chat renderings: %v", err)
	}
	texts := map[string][]string{}
	skipped := map[string]bool{}
	for _, f := range files {
		base := strings.TrimSuffix(filepath.Base(f), ".txt") // TEMPLATE.CONVERSATION
		tmpl := base[:strings.LastIndex(base, ".")]
		model, ok := byModel[tmpl]
		if !ok {
			// Templates added for rendering only (tool calls, reasoning:
			// chat's own tests hold them to jinja2) have no tokenizer in
			// the reference set.
			skipped[tmpl] = true
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		texts[model] = append(texts[model], string(b))
	}
	if len(texts) < 3 {
		t.Fatalf("only %d reference tokenizers matched the golden renderings", len(texts))
	}
	if len(skipped) > 0 {
		t.Logf("templates without a reference tokenizer, not tokenized here: %v", skipped)
	}
	for model, ts := range texts {
		tk := refTokenizer(t, model)
		var got [][]int
		for _, s := range ts {
			ids, err := tk.Encode(s)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, ids)
		}
		ref := runRef(t, model, ts, nil)
		for i := range ts {
			if fmt.Sprint(got[i]) != fmt.Sprint(ref.Plain[i]) {
				t.Errorf("%s: chat text %d: got %v\nwant %v", model, i, got[i], ref.Plain[i])
			}
		}
		t.Logf("%s: %d chat renderings match", model, len(ts))
	}
}
