package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/cflowfmt/fmttest"
	"github.com/cflow-dev/cflow/quant"
	"github.com/cflow-dev/cflow/vflowfmt"
)

func writeBoth(t *testing.T, s *fmttest.Spec) (string, string) {
	dir := t.TempDir()
	// Extensions are deliberately swapped: inspect picks the format by magic.
	cp, vp := filepath.Join(dir, "model.vflow"), filepath.Join(dir, "model.cflow")
	if _, err := fmttest.WriteCflow(cp, s, nil); err != nil {
		t.Fatal(err)
	}
	w, err := vflowfmt.Create(vp, s.Header, s.Meta)
	if err != nil {
		t.Fatal(err)
	}
	var gs []fmttest.Group
	for _, g := range w.Groups() {
		gs = append(gs, fmttest.Group{First: g.First, Count: g.Count})
	}
	if _, err := fmttest.WriteVflow(w, gs, s, nil); err != nil {
		t.Fatal(err)
	}
	return cp, vp
}

func exitCode(err error) int {
	var ec cli.ExitCoder
	if errors.As(err, &ec) {
		return ec.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

func TestInspectJSONBothFormats(t *testing.T) {
	s := fmttest.Tiny(quant.Q4_0, true, false)
	cp, vp := writeBoth(t, s)
	for _, c := range []struct{ path, format string }{{cp, "cflow"}, {vp, "vflow"}} {
		var buf bytes.Buffer
		if err := runInspect(&buf, c.path, true, true, true); err != nil {
			t.Fatalf("%s: %v", c.format, err)
		}
		var out struct {
			Format string         `json:"format"`
			Header map[string]any `json:"header"`
			Check  string         `json:"check"`
			Layers []struct {
				AttnBytes   int64   `json:"attn_bytes"`
				ExpertBytes []int64 `json:"expert_bytes"`
			} `json:"layers"`
			TileList  []cflowfmt.TileInfo `json:"tile_list"`
			TileCount int                 `json:"tile_count"`
			ShardPlan map[string]any      `json:"shard_plan"`
			Groups    []vflowfmt.GroupInfo
		}
		if err := json.Unmarshal(buf.Bytes(), &out); err != nil {
			t.Fatalf("%s: %v\n%s", c.format, err, buf.String())
		}
		h := s.Header
		want := map[string]any{"hidden_size": float64(h.HiddenSize), "num_layers": float64(h.NumLayers),
			"num_heads": float64(h.NumHeads), "num_kv_heads": float64(h.NumKVHeads), "vocab_size": float64(h.VocabSize),
			"intermediate_size": float64(h.IntermediateSize), "quant_type": "q4_0", "combine_style": "DelayedSum"}
		for k, v := range want {
			if out.Header[k] != v {
				t.Errorf("%s: header.%s = %v, want %v", c.format, k, out.Header[k], v)
			}
		}
		if out.Format != c.format || out.Check != "ok" || len(out.Layers) != 2 || out.Layers[1].AttnBytes == 0 || len(out.Layers[0].ExpertBytes) != 2 {
			t.Errorf("%s: format %q check %q layers %+v", c.format, out.Format, out.Check, out.Layers)
		}
		if len(out.TileList) != out.TileCount || out.TileCount == 0 || out.ShardPlan["policy"] != "numa-tp" {
			t.Errorf("%s: %d listed tiles, tile_count %d, shard plan %v", c.format, len(out.TileList), out.TileCount, out.ShardPlan)
		}
		if c.format == "vflow" && len(out.Groups) != 1 {
			t.Errorf("vflow: %d groups, want 1", len(out.Groups))
		}
	}
}

func TestInspectTextAndExitCodes(t *testing.T) {
	s := fmttest.Tiny(quant.Q8_0, false, true)
	cp, vp := writeBoth(t, s)
	var buf bytes.Buffer
	if err := runInspect(&buf, vp, false, false, true); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"hidden_size", "num_kv_heads", "q8_0", "group table", "sliding", "check: ok", "tokenizer.data", "(16 bytes)"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("text output lacks %q:\n%s", want, buf.String())
		}
	}
	// A non-zero padding byte between tiles: Open ignores it, Check rejects it.
	b, _ := os.ReadFile(cp)
	f, err := cflowfmt.OpenBytes(b, "x")
	if err != nil {
		t.Fatal(err)
	}
	var pad int64 = -1
	for i := 1; i < len(f.Model.Embed); i++ {
		end := f.Model.Embed[i-1].Offset + int64(f.Model.Embed[i-1].Bytes())
		if end < f.Model.Embed[i].Offset {
			pad = end
		}
	}
	if pad < 0 {
		t.Skip("no padding between embedding tiles in this geometry")
	}
	b[pad] = 0x5a
	bad := filepath.Join(t.TempDir(), "bad.cflow")
	os.WriteFile(bad, b, 0o644)
	if err := runInspect(&bytes.Buffer{}, bad, false, false, false); err != nil {
		t.Fatalf("without --check the file should open: %v", err)
	}
	if code := exitCode(runInspect(&bytes.Buffer{}, bad, false, false, true)); code != exitFail {
		t.Fatalf("--check on a bad file exited %d, want %d", code, exitFail)
	}
	if code := exitCode(runInspect(&bytes.Buffer{}, filepath.Join(t.TempDir(), "missing"), false, false, false)); code != exitUsage {
		t.Fatalf("missing file exited %d, want %d", code, exitUsage)
	}
	os.WriteFile(bad, b[:100], 0o644)
	if code := exitCode(runInspect(&bytes.Buffer{}, bad, false, false, false)); code != exitUsage {
		t.Fatalf("truncated file exited %d, want %d", code, exitUsage)
	}
}
