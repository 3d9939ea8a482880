package gguf_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestLlamaCppFamilies extends the llama.cpp cross-check to every Hugging
// Face family fixture (golden/families/fixtures): convert as F32, export
// under llama.cpp's architecture (llama with rope scaling and biases,
// qwen2, qwen3, qwen3moe, gemma3), and compare llama.cpp's greedy ids
// after the fixture's trace prompt (BOS and five ids, written as the
// export's placeholder pieces, which llama.cpp's tokenizer matches as
// single tokens) with cflowc run --temperature 0 on the same ids. Where
// llama.cpp departs from transformers on purpose
// (../shared/spec/HF_FAMILIES.md), the comparison allows for it: Mistral is
// compared from BOS within its window (llama.cpp's llama graph has none);
// Gemma 3 and Qwen3-MoE without norm_topk_prob are compared on a copy of
// the fixture whose config states what llama.cpp computes
// (query_pre_attn_scalar = head_dim and the embedding scale unrounded;
// renormalised top-k weights), same weights.
func TestLlamaCppFamilies(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cflowc and runs llama.cpp")
	}
	simple := llamaSimple(t)
	root := repoRoot(t)
	dirs, _ := filepath.Glob(filepath.Join(root, "golden", "families", "fixtures", "*", "config.json"))
	g4, _ := filepath.Glob(filepath.Join(root, "golden", "gemma4_text", "fixtures", "*", "config.json"))
	dirs = append(dirs, g4...)
	if len(dirs) == 0 {
		t.Skip("no golden/families fixtures")
	}
	cflowc := buildCflowc(t)
	for _, c := range dirs {
		dir := filepath.Dir(c)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			cfg := readConfig(t, dir)
			n := 10
			bos, eos := tokenID(cfg, "bos_token_id", 1), tokenID(cfg, "eos_token_id", 2)
			traces := filepath.Join(filepath.Dir(filepath.Dir(dir)), "traces")
			prompt := tracePrompt(t, filepath.Join(traces, filepath.Base(dir)+"_f32.json"), bos)
			if tc, ok := cfg["text_config"].(map[string]any); ok {
				bos, eos = tokenID(tc, "bos_token_id", bos), tokenID(tc, "eos_token_id", eos)
			}
			switch mt, _ := cfg["model_type"].(string); mt {
			case "gemma4_text", "gemma4":
				// llama.cpp's gemma4 scales the embedding by √d in f32.
				set := map[string]any{"dtype": "float32"}
				if tc, ok := cfg["text_config"].(map[string]any); ok {
					tc["dtype"] = "float32"
					set = map[string]any{"text_config": tc, "dtype": "float32"}
				}
				dir = llamaCppView(t, dir, cfg, set)
			case "mistral":
				if w, ok := cfg["sliding_window"].(float64); ok {
					n, prompt = min(n, int(w)), []int{bos}
				}
			case "gemma3_text":
				if lt, ok := cfg["layer_types"]; ok && lt != nil {
					t.Skip("layer_types that follow no sliding_window_pattern: export refuses it (tested in TestExportRefusals)")
				}
				hd, _ := cfg["head_dim"].(float64)
				dir = llamaCppView(t, dir, cfg, map[string]any{"query_pre_attn_scalar": hd, "torch_dtype": "float32"})
			case "qwen3_moe":
				if only, _ := cfg["mlp_only_layers"].([]any); len(only) > 0 {
					t.Skip("dense layers among MoE layers: the converter refuses this fixture (verify.TestFamilyTraces)")
				}
				if norm, _ := cfg["norm_topk_prob"].(bool); !norm {
					dir = llamaCppView(t, dir, cfg, map[string]any{"norm_topk_prob": true})
				}
			}
			tmp := t.TempDir()
			cf, gg := filepath.Join(tmp, "m.cflow"), filepath.Join(tmp, "m.gguf")
			run(t, cflowc, "convert", "-q", "--quant", "f32", "-o", cf, dir)
			run(t, cflowc, "export", "gguf", "-o", gg, cf)
			ids, text := make([]string, len(prompt)), ""
			for i, id := range prompt {
				ids[i] = strconv.Itoa(id)
				if i > 0 {
					text += "[" + ids[i] + "]"
				}
			}
			out := run(t, cflowc, "run", "--temperature", "0", "--prompt-ids", strings.Join(ids, ","), "-n", strconv.Itoa(n), "--threads", "1", cf)
			var want []int
			for _, f := range strings.Fields(out) {
				if v, err := strconv.Atoi(f); err == nil {
					want = append(want, v)
				}
			}
			got := placeholderIDs(t, run(t, simple, "-m", gg, "-n", strconv.Itoa(n), text), bos, eos)
			if len(got) < len(prompt) || !slices.Equal(got[:len(prompt)], prompt) {
				t.Fatalf("llama-simple output %v does not start with the prompt %v", got, prompt)
			}
			got = got[len(prompt):]
			if len(want) == 0 {
				t.Fatalf("cflowc run printed no ids: %q", out)
			}
			if !slices.Equal(got, want) {
				t.Errorf("llama.cpp greedy %v, cflow %v", got, want)
			}
		})
	}
}

func readConfig(t *testing.T, dir string) map[string]any {
	b, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func tokenID(cfg map[string]any, key string, def int) int {
	switch v := cfg[key].(type) {
	case float64:
		return int(v)
	case []any:
		if f, ok := v[0].(float64); ok {
			return int(f)
		}
	}
	return def
}

// tracePrompt is the prompt of a fixture's pinned trace (BOS alone when it
// has none).
func tracePrompt(t *testing.T, path string, bos int) []int {
	b, err := os.ReadFile(path)
	if err != nil {
		return []int{bos}
	}
	var tr struct {
		Prompt []int `json:"prompt"`
	}
	if err := json.Unmarshal(b, &tr); err != nil || len(tr.Prompt) == 0 {
		t.Fatalf("%s: no prompt (%v)", path, err)
	}
	return tr.Prompt
}

// llamaCppView copies a fixture with the config values llama.cpp fixes its
// own way set to what llama.cpp computes (same weights).
func llamaCppView(t *testing.T, dir string, cfg, set map[string]any) string {
	out := filepath.Join(t.TempDir(), filepath.Base(dir))
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.Name() == "config.json" {
			continue
		}
		if err := os.Symlink(filepath.Join(dir, e.Name()), filepath.Join(out, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	c := map[string]any{}
	for k, v := range cfg {
		c[k] = v
	}
	for k, v := range set {
		c[k] = v
	}
	b, _ := json.Marshal(c)
	if err := os.WriteFile(filepath.Join(out, "config.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

var placeholderPiece = regexp.MustCompile(`\[(\d+)\]|<unk>|<s>|</s>`)

// placeholderIDs reads ids back from the export's placeholder pieces: "[id]",
// <unk> = 0, <s> = bos, </s> = eos.
func placeholderIDs(t *testing.T, s string, bos, eos int) []int {
	var out []int
	for _, m := range placeholderPiece.FindAllStringSubmatch(s, -1) {
		switch m[0] {
		case "<unk>":
			out = append(out, 0)
		case "<s>":
			out = append(out, bos)
		case "</s>":
			out = append(out, eos)
		default:
			n, err := strconv.Atoi(m[1])
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, n)
		}
	}
	return out
}
