package convert

import (
	"bytes"
	"context"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cflow-dev/cflow/archspec"
	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/engine/plan"
	"github.com/cflow-dev/cflow/quant"
	"github.com/cflow-dev/cflow/vflowfmt"
)

var quants = []quant.Type{quant.Q4_0, quant.Q8_0, quant.F32}

// openChecked opens a converted file with the format's reader and runs
// its full Check (padding, exact coverage, finite norms).
func openChecked(t *testing.T, path string) *cflowfmt.File {
	t.Helper()
	f, err := cflowfmt.Open(path)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	t.Cleanup(func() { f.Close() })
	if err := f.Check(); err != nil {
		t.Fatalf("check %s: %v", path, err)
	}
	return f
}

func openCheckedV(t *testing.T, path string) *vflowfmt.File {
	t.Helper()
	f, err := vflowfmt.Open(path)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	t.Cleanup(func() { f.Close() })
	if err := f.Check(); err != nil {
		t.Fatalf("check %s: %v", path, err)
	}
	return f
}

// sameModel requires the two readers' Models to hold the same tiles (header
// and bytes) in the same per-layer order, and the same experts.
func sameModel(t *testing.T, a, b *cflowfmt.Model) {
	t.Helper()
	same := func(what string, x, y []cflowfmt.MappedTile) {
		if len(x) != len(y) {
			t.Fatalf("%s: %d vs %d tiles", what, len(x), len(y))
		}
		for i := range x {
			if x[i].TileHeader != y[i].TileHeader || !bytes.Equal(x[i].Scales, y[i].Scales) || !bytes.Equal(x[i].Data, y[i].Data) {
				t.Fatalf("%s tile %d differs: %+v vs %+v", what, i, x[i].TileHeader, y[i].TileHeader)
			}
		}
	}
	if a.Header.HiddenSize != b.Header.HiddenSize || len(a.Layers) != len(b.Layers) {
		t.Fatal("models differ in geometry")
	}
	for l := range a.Layers {
		x, y := &a.Layers[l], &b.Layers[l]
		same("qkv", x.QKV, y.QKV)
		same("o", x.O, y.O)
		same("gateup", x.GateUp, y.GateUp)
		same("down", x.Down, y.Down)
		same("router", x.Router, y.Router)
		for e := range x.Experts {
			tx, err := a.ExpertTiles(l, e)
			if err != nil {
				t.Fatal(err)
			}
			ty, err := b.ExpertTiles(l, e)
			if err != nil {
				t.Fatal(err)
			}
			same("expert", tx, ty)
		}
	}
	same("embed", a.Embed, b.Embed)
	same("lm_head", a.LMHead, b.LMHead)
	sameVec := func(what string, x, y []float32) {
		if len(x) != len(y) {
			t.Fatalf("%s: %d vs %d values", what, len(x), len(y))
		}
		for i := range x {
			if math.Float32bits(x[i]) != math.Float32bits(y[i]) {
				t.Fatalf("%s[%d]: %v vs %v", what, i, x[i], y[i])
			}
		}
	}
	for l := range a.Layers {
		sameVec("attn_norm", a.Layers[l].AttnNorm, b.Layers[l].AttnNorm)
		sameVec("ffn_norm", a.Layers[l].FFNNorm, b.Layers[l].FFNNorm)
		sameVec("moe_norm", a.Layers[l].MoENorm, b.Layers[l].MoENorm)
	}
	sameVec("final_norm", a.FinalNorm, b.FinalNorm)
}

type locTile struct {
	loc cflowfmt.Loc
	t   cflowfmt.MappedTile
}

func walk(t *testing.T, f *cflowfmt.File) []locTile {
	t.Helper()
	var out []locTile
	if err := f.Walk(func(l cflowfmt.Loc, mt *cflowfmt.MappedTile) error {
		out = append(out, locTile{l, *mt})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// checkTilesAgainstTruth re-quantizes every tile's block from the
// fixture's own values and requires identical bytes.
func checkTilesAgainstTruth(t *testing.T, fx *fixture, tiles []locTile, q quant.Type) {
	t.Helper()
	for _, lt := range tiles {
		th := lt.t.TileHeader
		name := fx.tensorName(th)
		v, ok := fx.truth[name]
		if !ok {
			t.Fatalf("tile %+v maps to unknown tensor %q", th, name)
		}
		cols := fx.shape[name][1]
		rows, tc := int(th.Rows), int(th.Cols)
		blk := make([]float32, rows*tc)
		for r := 0; r < rows; r++ {
			copy(blk[r*tc:], v[(int(th.RowOffset)+r)*cols+int(th.ColOffset):][:tc])
		}
		if fx.arch == "gemma3_text" && cflowfmt.TileQuant(th.Matrix, q) == quant.F32 && th.Matrix >= archspec.MatAttnNorm {
			for i := range blk {
				blk[i]++ // Gemma's norms are stored as 1 + w
			}
		}
		want := quant.Encode(cflowfmt.TileQuant(th.Matrix, q), blk, rows, tc, tc)
		if !bytes.Equal(want.Scales, lt.t.Scales) || !bytes.Equal(want.Data, lt.t.Data) {
			t.Fatalf("%s tile %+v at %d: bytes differ from quantizing the checkpoint", name, th, lt.t.Offset)
		}
	}
}

// checkPlanOrder requires non-expert tile offsets to increase strictly
// along plan.Layout(plan.Build(...)) (then the vocabulary entry).
func checkPlanOrder(t *testing.T, f *cflowfmt.File, tiles []locTile) {
	t.Helper()
	h := &f.Header
	bi := int(f.Meta.U32(cflowfmt.KeyBlockIterations, 1))
	steps, err := plan.Build(plan.FromHeader(h, bi))
	if err != nil {
		t.Fatal(err)
	}
	bySlot := map[[2]int][]int64{}
	for _, lt := range tiles {
		if lt.loc.Expert < 0 {
			k := [2]int{lt.loc.Layer, lt.loc.Slot}
			bySlot[k] = append(bySlot[k], lt.t.Offset)
		}
	}
	var seq []int64
	seen := 0
	for _, st := range plan.Layout(steps) {
		slot := map[plan.Stream]int{plan.Attn: cflowfmt.SlotAttn, plan.Dense: cflowfmt.SlotDense, plan.MoE: cflowfmt.SlotMoE}[st.Stream]
		seq = append(seq, bySlot[[2]int{st.Layer, slot}]...)
		seen++
	}
	L := int(h.NumLayers)
	for _, s := range []int{cflowfmt.SlotEmbed, cflowfmt.SlotLMHead, cflowfmt.SlotFinalNorm} {
		seq = append(seq, bySlot[[2]int{L, s}]...)
	}
	nonExpert := 0
	for _, lt := range tiles {
		if lt.loc.Expert < 0 {
			nonExpert++
		}
	}
	if len(seq) != nonExpert {
		t.Fatalf("plan order covers %d tiles, the file has %d non-expert tiles", len(seq), nonExpert)
	}
	for i := 1; i < len(seq); i++ {
		if seq[i] <= seq[i-1] {
			t.Fatalf("tile %d along the plan is at %d, not after %d", i, seq[i], seq[i-1])
		}
	}
	// Each layer's expert bank sits inside that layer's region: after its
	// MoE slot, before the next stream in plan order.
	for l := 0; l < L && h.NumExperts > 0; l++ {
		moe := f.Table[l][cflowfmt.SlotMoE]
		for e, r := range f.Experts[l] {
			if r.Offset < moe.End() {
				t.Fatalf("layer %d expert %d at %d precedes its router (ends %d)", l, e, r.Offset, moe.End())
			}
		}
	}
}

// TestConvertEveryArchitecture converts a tiny checkpoint of every
// architecture in all three quant types and checks the file three ways:
// the reader's Check, tile bytes against quantizing the fixture's own
// values, and tile order against the execution plan.
func TestConvertEveryArchitecture(t *testing.T) {
	dts := []string{"F32", "F16", "BF16"}
	for i, arch := range fixtureArchs {
		t.Run(arch, func(t *testing.T) {
			fx := writeFixture(t, filepath.Join(t.TempDir(), arch), arch, dts[i%3])
			for _, q := range quants {
				out := filepath.Join(t.TempDir(), arch+"."+q.String()+".cflow")
				res, err := Convert(context.Background(), fx.dir, out, Options{Quant: q, NUMANodes: 1})
				if err != nil {
					t.Fatalf("%s: %v", q, err)
				}
				if res.Architecture != arch {
					t.Fatalf("detected %s, want %s", res.Architecture, arch)
				}
				f := openChecked(t, out)
				tiles := walk(t, f)
				checkTilesAgainstTruth(t, fx, tiles, q)
				checkPlanOrder(t, f, tiles)
				if q == quant.Q4_0 {
					checkInterleave(t, f, tiles)
				}
				vout := strings.TrimSuffix(out, ".cflow") + ".vflow"
				if _, err := Convert(context.Background(), fx.dir, vout, Options{Quant: q, NUMANodes: 1}); err != nil {
					t.Fatalf("%s .vflow: %v", q, err)
				}
				vf := openCheckedV(t, vout)
				var vt []locTile
				if err := vf.Walk(func(l cflowfmt.Loc, mt *cflowfmt.MappedTile) error {
					vt = append(vt, locTile{l, *mt})
					return nil
				}); err != nil {
					t.Fatal(err)
				}
				if len(vt) != len(tiles) {
					t.Fatalf(".vflow has %d tiles, .cflow %d", len(vt), len(tiles))
				}
				checkTilesAgainstTruth(t, fx, vt, q)
				sameModel(t, f.Model, vf.Model)
			}
		})
	}
}

// checkInterleave verifies the in-slot order for a one-node file: norm,
// then stripe i of Q, K, V (of gate, up), then O (down).
func checkInterleave(t *testing.T, f *cflowfmt.File, tiles []locTile) {
	t.Helper()
	type key struct {
		m   archspec.MatrixID
		row uint32
	}
	for l := 0; l < int(f.Header.NumLayers); l++ {
		for _, s := range []struct {
			slot  int
			group []archspec.MatrixID
			last  archspec.MatrixID
		}{{cflowfmt.SlotAttn, []archspec.MatrixID{archspec.MatQ, archspec.MatK, archspec.MatV}, archspec.MatO},
			{cflowfmt.SlotDense, []archspec.MatrixID{archspec.MatGate, archspec.MatUp}, archspec.MatDown}} {
			var got []key
			for _, lt := range tiles {
				if lt.loc.Layer == l && lt.loc.Slot == s.slot && lt.t.ColOffset == 0 {
					got = append(got, key{lt.t.Matrix, lt.t.RowOffset})
				}
			}
			if len(got) == 0 {
				continue
			}
			// Expected: norm first, then by stripe the group members that
			// have that stripe, then the last matrix's stripes.
			rows := map[archspec.MatrixID]int{}
			for _, k := range got {
				rows[k.m] = max(rows[k.m], int(k.row)+1)
			}
			want := []key{got[0]}
			for r := 0; ; r += 128 {
				any := false
				for _, m := range s.group {
					if r < rows[m] {
						want, any = append(want, key{m, uint32(r)}), true
					}
				}
				if !any {
					break
				}
			}
			for r := 0; r < rows[s.last]; r += 128 {
				want = append(want, key{s.last, uint32(r)})
			}
			if !got[0].m.IsNorm() || len(got) != len(want) {
				t.Fatalf("layer %d slot %d: order %v, want %v", l, s.slot, got, want)
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("layer %d slot %d: tile %d is %v, want %v (order %v)", l, s.slot, i, got[i], want[i], got)
				}
			}
		}
	}
}

// noOutput asserts a failed conversion left neither the file nor a temp.
func noOutput(t *testing.T, out string) {
	t.Helper()
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatalf("%s exists after a failed conversion", out)
	}
	ents, _ := os.ReadDir(filepath.Dir(out))
	for _, e := range ents {
		if strings.Contains(e.Name(), filepath.Base(out)) {
			t.Fatalf("leftover %s", e.Name())
		}
	}
}

func convertErr(t *testing.T, in string, opt Options, wants ...string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out.cflow")
	_, err := Convert(context.Background(), in, out, opt)
	if err == nil {
		t.Fatalf("converting %s succeeded, want an error mentioning %q", in, wants)
	}
	for _, w := range wants {
		if !strings.Contains(err.Error(), w) {
			t.Fatalf("error %q does not mention %q", err, w)
		}
	}
	noOutput(t, out)
}

func TestTruncatedSafetensorsRefused(t *testing.T) {
	fx := writeFixture(t, filepath.Join(t.TempDir(), "m"), "llama", "F16")
	st := filepath.Join(fx.dir, "model.safetensors")
	full, err := os.ReadFile(st)
	if err != nil {
		t.Fatal(err)
	}
	// Data cut short: the last tensor's data_offsets run past EOF.
	if err := os.WriteFile(st, full[:len(full)-1000], 0o644); err != nil {
		t.Fatal(err)
	}
	convertErr(t, fx.dir, Options{}, st, "truncated", "lm_head.weight", "past the end")
	// Header cut short: the length prefix points past EOF.
	if err := os.WriteFile(st, full[:100], 0o644); err != nil {
		t.Fatal(err)
	}
	convertErr(t, fx.dir, Options{}, st, "truncated", "header length")
	if err := os.WriteFile(st, full[:5], 0o644); err != nil {
		t.Fatal(err)
	}
	convertErr(t, fx.dir, Options{}, st, "truncated")
}

// TestContradictingModelRefused: --model naming another architecture than
// the config's is refused (issue 19); it names the architecture only when
// the config names none cflow knows, and a family whose weights are absent
// is still refused.
func TestContradictingModelRefused(t *testing.T) {
	fx := writeFixture(t, filepath.Join(t.TempDir(), "m"), "llama", "F32")
	convertErr(t, fx.dir, Options{Model: "arch2_4"}, "--model arch2_4_combined contradicts", "architecture llama")
	convertErr(t, fx.dir, Options{Model: "mixtral"}, "--model mixtral contradicts")
	convertErr(t, fx.dir, Options{Model: "nonsense"}, "unknown architecture")
	if _, err := Convert(context.Background(), fx.dir, filepath.Join(t.TempDir(), "ok.cflow"), Options{Model: "llama"}); err != nil {
		t.Fatalf("--model naming the config's own architecture: %v", err)
	}
	mx := writeFixture(t, filepath.Join(t.TempDir(), "mx"), "mixtral", "F32")
	convertErr(t, mx.dir, Options{Model: "llama"}, "contradicts", "architecture mixtral")
	// A config naming no known architecture: --model decides, and the
	// family's own checks still apply.
	cfgPath := filepath.Join(fx.dir, "config.json")
	orig, _ := os.ReadFile(cfgPath)
	unknown := bytes.Replace(bytes.Replace(orig, []byte(`"LlamaForCausalLM"`), []byte(`"SomethingForCausalLM"`), 1), []byte(`"model_type":"llama"`), []byte(`"model_type":"something"`), 1)
	if err := os.WriteFile(cfgPath, unknown, 0o644); err != nil {
		t.Fatal(err)
	}
	convertErr(t, fx.dir, Options{}, "unknown architecture", "pass --model")
	convertErr(t, fx.dir, Options{Model: "arch2_4"}, "arch2_4_combined needs experts", "num_experts")
	if _, err := Convert(context.Background(), fx.dir, filepath.Join(t.TempDir(), "ok.cflow"), Options{Model: "llama"}); err != nil {
		t.Fatalf("--model llama on an unnamed config: %v", err)
	}
}

func TestBadInputRefused(t *testing.T) {
	fx := writeFixture(t, filepath.Join(t.TempDir(), "m"), "arch2_4_combined", "F32")
	cfgPath := filepath.Join(fx.dir, "config.json")
	orig, _ := os.ReadFile(cfgPath)
	edit := func(from, to string) {
		t.Helper()
		if err := os.WriteFile(cfgPath, bytes.Replace(orig, []byte(from), []byte(to), 1), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	edit(`"architecture":"arch2_4_combined"`, `"architecture":"arch9"`)
	convertErr(t, fx.dir, Options{}, cfgPath, "unknown architecture", "arch9")
	edit(`"intermediate_size":160`, `"intermediate_size":170`)
	convertErr(t, fx.dir, Options{}, "model.layers.0.mlp.gate_proj.weight", "shape [160 288]", "[170, 288]")
	edit(`"hidden_size":288`, `"hidden_size":70000`)
	convertErr(t, fx.dir, Options{}, "col_offset", "70000")
	edit(`"combine_style":"DelayedSum"`, `"combine_style":"PreNorm"`)
	convertErr(t, fx.dir, Options{}, "combine_style PreNorm contradicts")
	os.WriteFile(cfgPath, orig, 0o644)
	if _, err := Convert(context.Background(), fx.dir, filepath.Join(t.TempDir(), "x.txt"), Options{}); err == nil || !strings.Contains(err.Error(), ".cflow or .vflow") {
		t.Fatalf("a .txt output gave %v", err)
	}

	// A missing tensor names itself.
	fx2 := writeFixture(t, filepath.Join(t.TempDir(), "m2"), "llama", "F32")
	var ts []STTensor
	for _, e := range fixtureTensors("llama", fx2.cfg) {
		name := e[0].(string)
		if name == "model.layers.2.self_attn.v_proj.weight" {
			continue
		}
		v := fx2.truth[name]
		shape := []int{e[1].(int), e[2].(int)}
		if shape[0] == 0 {
			shape = shape[1:]
		}
		ts = append(ts, STTensor{Name: name, DType: "F32", Shape: shape, Fill: func(w io.Writer) error { _, err := w.Write(encodeAs("F32", v)); return err }})
	}
	if err := WriteSafetensors(filepath.Join(fx2.dir, "model.safetensors"), ts); err != nil {
		t.Fatal(err)
	}
	convertErr(t, fx2.dir, Options{}, "missing tensor model.layers.2.self_attn.v_proj.weight")
}

// TestCancelLeavesNothing: a conversion cancelled mid-way (Ctrl-C in the
// CLI) returns the context's error and removes its temp file.
func TestCancelLeavesNothing(t *testing.T) {
	fx := writeFixture(t, filepath.Join(t.TempDir(), "m"), "arch4_async_experts", "F16")
	out := filepath.Join(t.TempDir(), "m.cflow")
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	opt := Options{Quant: quant.Q4_0, NUMANodes: 1}
	opt.onProgress = func() {
		if n++; n == 5 {
			cancel()
		}
	}
	if _, err := Convert(ctx, fx.dir, out, opt); err != context.Canceled {
		t.Fatalf("cancelled conversion returned %v", err)
	}
	noOutput(t, out)
}
