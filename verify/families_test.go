package verify

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cflow-dev/cflow/convert"
	"github.com/cflow-dev/cflow/engine"
	"github.com/cflow-dev/cflow/engine/expertio"
	"github.com/cflow-dev/cflow/quant"
	"github.com/cflow-dev/cflow/trace"
	"github.com/cflow-dev/cflow/vflowfmt"
)

// TestFamilyMoEStagedExperts replays the MoE families' Q4_0 replay traces
// (Qwen3-MoE with norm_topk_prob both ways, Gemma 4 26B-A4B-shaped: 128
// experts, top-8) with staged expert I/O, sync and direct, on both formats,
// and checks the byte counter: each token reads exactly top-k experts'
// weights per layer, never the whole bank.
func TestFamilyMoEStagedExperts(t *testing.T) {
	var cfgs []string
	for _, fam := range []string{"families", "gemma4_text"} {
		c, _ := filepath.Glob(filepath.Join(goldenDir, fam, "fixtures", "*", "config.json"))
		cfgs = append(cfgs, c...)
	}
	ran := 0
	for _, c := range cfgs {
		dir := filepath.Dir(c)
		fam := filepath.Dir(filepath.Dir(dir))
		name := filepath.Base(dir)
		b, _ := os.ReadFile(c)
		var cfg struct {
			Experts int   `json:"num_experts"`
			Local   int   `json:"num_local_experts"`
			MoE     *bool `json:"enable_moe_block"`
			MLPOnly []int `json:"mlp_only_layers"`
			Step    *int  `json:"decoder_sparse_step"`
		}
		if json.Unmarshal(b, &cfg) != nil || cfg.Experts+cfg.Local == 0 || len(cfg.MLPOnly) > 0 || cfg.Step != nil && *cfg.Step != 1 || cfg.MoE != nil && !*cfg.MoE {
			continue // dense, or refused (TestFamilyTraces checks the refusal)
		}
		tracePath := filepath.Join(fam, "traces", name+"_q4_replay.json")
		tr, err := trace.Load(tracePath)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, ext := range []string{".cflow", ".vflow"} {
			out := filepath.Join(t.TempDir(), name+ext)
			if _, err := convert.Convert(context.Background(), dir, out, convert.Options{Quant: quant.Q4_0, NUMANodes: 1, Workers: 1}); err != nil {
				t.Fatal(err)
			}
			m, err := vflowfmt.OpenModel(out)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			h := &m.Header
			var perExpert int64
			ts, err := m.ExpertTiles(0, 0)
			if err != nil {
				t.Fatal(err)
			}
			for i := range ts {
				perExpert += int64(ts[i].Bytes()) // header, scales, data: what a read costs
			}
			for _, mode := range []expertio.Mode{expertio.Sync, expertio.Direct} {
				e, err := engine.New(m, engine.Options{Threads: 2, ExpertIO: mode, Kernel: Kernel()})
				if err != nil {
					t.Fatal(err)
				}
				rule, _ := SelectRule(tr.Weights, quant.Q4_0)
				rep, err := Replay(e, tr, rule)
				if err != nil {
					t.Fatal(err)
				}
				if !rep.Pass {
					var sb strings.Builder
					rep.WriteTable(&sb)
					t.Errorf("%s%s %s:\n%s", name, ext, mode, sb.String())
				}
				st := e.Stats()
				want := st.Tokens * int64(h.NumLayers) * int64(h.TopK) * perExpert
				if st.Total.Experts != want {
					t.Errorf("%s%s %s: %d expert bytes over %d tokens, want %d (top-%d of %d per layer)", name, ext, mode, st.Total.Experts, st.Tokens, want, h.TopK, h.NumExperts)
				}
				e.Close()
				ran++
			}
		}
	}
	if ran == 0 {
		t.Skip("no MoE family fixtures in golden/families")
	}
}
