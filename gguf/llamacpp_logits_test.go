package gguf_test

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/cflow-dev/cflow/convert"
	"github.com/cflow-dev/cflow/engine"
	"github.com/cflow-dev/cflow/gguf"
	"github.com/cflow-dev/cflow/quant"
	"github.com/cflow-dev/cflow/vflowfmt"
)

// TestLlamaCppLogits holds GGUF import to libllama itself: GGUFs no cflow
// code wrote (convert/testdata/mkgguf.py --parity: llama.cpp's gguf-py
// writer, all F32, from every family fixture), then llama-quantize --pure
// of each to F16, Q8_0, Q4_0 and Q4_1 (which --requant q8_0 reads), are
// converted to .cflow and .vflow and
// decoded teacher-forced on the same ids by cflow's engine and by a small
// harness linked against the built libllama (testdata/logits.cpp). F32
// files: every logit within 1e-4 of the position's max |logit| and the
// same argmax; F16 and quantized ones (where llama.cpp rounds activations
// to f16 or q8 and cflow does not, or not alike): the top-8 logits within
// 3e-2 of max |logit| and the argmax on ≥ 90% of positions. gemma3 is held
// to the quantized rule at F32 too: llama.cpp's CPU GeLU reads an f16
// table (HF_FAMILIES.md, "llama.cpp departs"); so is gemma4, whose files
// are cflow's export (gemma4GGUFs).
func TestLlamaCppLogits(t *testing.T) {
	bin := llamaBin(t)
	harness := buildLogitsHarness(t, bin)
	py := numpyPython(t)
	root := repoRoot(t)
	dir := t.TempDir()
	cmd := exec.Command(py, filepath.Join(root, "convert", "testdata", "mkgguf.py"), "--parity", dir)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+filepath.Join(bin, "..", "..", "gguf-py"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("mkgguf.py --parity: %v\n%s", err, out)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.gguf"))
	if len(files) < 9 {
		t.Fatalf("mkgguf.py wrote %d files, want every family", len(files))
	}
	files = append(files, gemma4GGUFs(t, root, dir)...)
	toks := []int{1}
	for i := 1; i < 16; i++ {
		toks = append(toks, 3+(i*97+31)%290) // ids every fixture's vocabulary has
	}
	for _, f32 := range files {
		fam := filepath.Base(f32[:len(f32)-len(".gguf")])
		for _, v := range []struct {
			ftype   string
			q       quant.Type
			requant bool
		}{{"F32", quant.F32, false}, {"F16", quant.F32, false}, {"Q8_0", quant.Q8_0, false}, {"Q4_0", quant.Q4_0, false},
			{"Q4_1", quant.Q8_0, true}} {
			t.Run(fam+"_"+v.ftype, func(t *testing.T) {
				in := f32
				if v.ftype != "F32" {
					in = filepath.Join(dir, fam+"-"+v.ftype+".gguf")
					out, err := exec.Command(filepath.Join(bin, "llama-quantize"), "--pure", f32, in, v.ftype).CombinedOutput()
					if err != nil {
						t.Fatalf("llama-quantize %s: %v\n%s", v.ftype, err, out)
					}
					if kept := fallbacks(t, in); v.q != quant.F32 && len(kept) > 0 {
						t.Skipf("llama-quantize kept %d matrices F16 (%s, …: rows not whole blocks); a cflow file holds one codec, so converting would requantize them", len(kept), kept[0])
					}
				}
				want := llamaLogits(t, harness, in, toks)
				strict := v.ftype == "F32" && !strings.HasPrefix(fam, "gemma")
				for _, ext := range []string{".cflow", ".vflow"} {
					got := cflowLogits(t, in, filepath.Join(t.TempDir(), "m"+ext), convert.Options{Quant: v.q, Requant: v.requant}, toks)
					compareLogits(t, ext, got, want, strict)
				}
			})
		}
	}
}

// gemma4GGUFs are the Gemma 4 fixtures as GGUFs: mkgguf.py does not
// restate conversion/gemma.py's Gemma4Model, so these are cflow's own
// export (gguf.Write) of the F32 conversion, with the config llama.cpp
// computes (the embedding scale √d in f32). libllama still reads them by
// its own rules, so importing them back must decode what it decodes.
func gemma4GGUFs(t *testing.T, root, dir string) []string {
	var out []string
	for _, fx := range []string{"gemma4_text", "gemma4_dense"} {
		src := filepath.Join(root, "golden", "gemma4_text", "fixtures", fx)
		b, err := os.ReadFile(filepath.Join(src, "config.json"))
		if err != nil {
			t.Fatal(err)
		}
		var cfg map[string]any
		if err := json.Unmarshal(b, &cfg); err != nil {
			t.Fatal(err)
		}
		cfg["dtype"] = "float32"
		delete(cfg, "torch_dtype")
		view := filepath.Join(dir, fx)
		if err := os.Mkdir(view, 0o755); err != nil {
			t.Fatal(err)
		}
		b, _ = json.Marshal(cfg)
		if err := os.WriteFile(filepath.Join(view, "config.json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(src, "model.safetensors"), filepath.Join(view, "model.safetensors")); err != nil {
			t.Fatal(err)
		}
		cf := filepath.Join(dir, fx+".cflow")
		if _, err := convert.Convert(context.Background(), view, cf, convert.Options{Quant: quant.F32}); err != nil {
			t.Fatalf("%s: %v", fx, err)
		}
		m, err := vflowfmt.OpenModel(cf)
		if err != nil {
			t.Fatal(err)
		}
		gg := filepath.Join(dir, fx+".gguf")
		if err := gguf.Write(m, gg, gguf.Options{}); err != nil {
			t.Fatalf("%s: export: %v", fx, err)
		}
		out = append(out, gg)
	}
	return out
}

// fallbacks lists the matrices of a quantized GGUF that llama-quantize
// left F16 because their rows are not whole blocks.
func fallbacks(t *testing.T, path string) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ti := range f.Tensors {
		if ti.Type == gguf.GGMLF16 && len(ti.Dims) >= 2 {
			out = append(out, ti.Name)
		}
	}
	return out
}

// compareLogits applies the F32 rule (strict) or the quantized one.
func compareLogits(t *testing.T, what string, got, want [][]float32, strict bool) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d positions, llama.cpp %d", what, len(got), len(want))
	}
	agree, worst := 0, 0.0
	for p := range want {
		if len(got[p]) != len(want[p]) {
			t.Fatalf("%s: position %d has %d logits, llama.cpp %d", what, p, len(got[p]), len(want[p]))
		}
		scale := 0.0
		for _, x := range want[p] {
			scale = math.Max(scale, math.Abs(float64(x)))
		}
		ids := make([]int, len(want[p]))
		for i := range ids {
			ids[i] = i
		}
		sort.Slice(ids, func(a, b int) bool { return want[p][ids[a]] > want[p][ids[b]] })
		if !strict {
			ids = ids[:8]
		}
		for _, i := range ids {
			worst = math.Max(worst, math.Abs(float64(got[p][i]-want[p][i]))/scale)
		}
		if argmax(got[p]) == argmax(want[p]) {
			agree++
		}
	}
	tol, need := 3e-2, 0.9
	if strict {
		tol, need = 1e-4, 1
	}
	if worst > tol || float64(agree) < need*float64(len(want)) {
		t.Errorf("%s: worst |Δlogit|/max|logit| %.3g (want ≤ %g), argmax equal on %d of %d positions", what, worst, tol, agree, len(want))
	} else {
		t.Logf("%s: worst |Δlogit|/max|logit| %.3g, argmax equal on %d of %d", what, worst, agree, len(want))
	}
}

func argmax(v []float32) int {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return best
}

// cflowLogits converts in to out and decodes toks as one prefill.
func cflowLogits(t *testing.T, in, out string, opt convert.Options, toks []int) [][]float32 {
	t.Helper()
	if _, err := convert.Convert(context.Background(), in, out, opt); err != nil {
		t.Fatalf("convert %s: %v", filepath.Base(in), err)
	}
	m, err := vflowfmt.OpenModel(out)
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(m, engine.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	var got [][]float32
	if err := e.PrefillEach(toks, func(_ int, l []float32, _ *engine.Observation) error {
		got = append(got, append([]float32(nil), l...))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

// llamaLogits runs the harness and reads its logits back.
func llamaLogits(t *testing.T, harness, model string, toks []int) [][]float32 {
	t.Helper()
	out := filepath.Join(t.TempDir(), "logits.bin")
	args := []string{model, out}
	for _, id := range toks {
		args = append(args, strconv.Itoa(id))
	}
	if b, err := exec.Command(harness, args...).CombinedOutput(); err != nil {
		t.Fatalf("libllama on %s: %v\n%s", filepath.Base(model), err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	V := int(binary.LittleEndian.Uint32(b))
	if len(b) != 4+4*V*len(toks) {
		t.Fatalf("harness wrote %d bytes for %d positions of %d logits", len(b), len(toks), V)
	}
	logits := make([][]float32, len(toks))
	for p := range logits {
		logits[p] = make([]float32, V)
		for i := range logits[p] {
			logits[p][i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4+4*(p*V+i):]))
		}
	}
	return logits
}

// llamaBin is CFLOW_LLAMA_BIN, llama.cpp's built tools (make test-llama);
// the test skips without it unless CFLOW_REQUIRE_LLAMA_BIN=1.
func llamaBin(t *testing.T) string {
	bin := os.Getenv("CFLOW_LLAMA_BIN")
	if bin == "" {
		if os.Getenv("CFLOW_REQUIRE_LLAMA_BIN") == "1" {
			t.Fatal("CFLOW_REQUIRE_LLAMA_BIN=1 but CFLOW_LLAMA_BIN is not set")
		}
		t.Skip("CFLOW_LLAMA_BIN is not set (make test-llama sets it)")
	}
	return bin
}

// numpyPython is a python3 that imports numpy (Debian's python3-numpy),
// which gguf-py's writer needs.
func numpyPython(t *testing.T) string {
	for _, py := range []string{"/usr/bin/python3", "python3"} {
		if exec.Command(py, "-c", "import numpy").Run() == nil {
			return py
		}
	}
	if os.Getenv("CFLOW_REQUIRE_LLAMA_BIN") == "1" {
		t.Fatal("no python3 with numpy (apt-get install python3-numpy) for gguf-py's writer")
	}
	t.Skip("no python3 with numpy for gguf-py's writer")
	return ""
}

// buildLogitsHarness compiles testdata/logits.cpp against the static
// libllama and libggml next to bin (CFLOW_LLAMA_BIN/../src,
// ../ggml/src), cached under the user cache dir by the hash of the source
// and the libraries.
func buildLogitsHarness(t *testing.T, bin string) string {
	t.Helper()
	build := filepath.Dir(bin)
	src := filepath.Dir(build)
	libs := []string{filepath.Join(build, "src", "libllama.a")}
	for _, l := range []string{"libggml.a", "libggml-cpu.a", "libggml-base.a"} {
		libs = append(libs, filepath.Join(build, "ggml", "src", l))
	}
	h := sha256.New()
	code, err := os.ReadFile(filepath.Join("testdata", "logits.cpp"))
	if err != nil {
		t.Fatal(err)
	}
	h.Write(code)
	for _, l := range libs {
		st, err := os.Stat(l)
		if err != nil {
			t.Fatalf("%s: %v (built with llama.cpp's tools)", l, err)
		}
		fmt.Fprintf(h, "%s %d %d\n", l, st.Size(), st.ModTime().UnixNano())
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "cflow", "llamalogits")
	out := filepath.Join(dir, "harness-"+hex.EncodeToString(h.Sum(nil))[:16])
	if _, err := os.Stat(out); err == nil {
		return out
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := fmt.Sprintf("%s.tmp%d", out, os.Getpid())
	args := []string{"-O1", "-std=c++17", "-I", filepath.Join(src, "include"), "-I", filepath.Join(src, "ggml", "include"),
		"-o", tmp, filepath.Join("testdata", "logits.cpp")}
	args = append(append(args, libs...), "-fopenmp", "-lpthread", "-ldl", "-lm")
	if b, err := exec.Command("g++", args...).CombinedOutput(); err != nil {
		t.Fatalf("g++ %v: %v\n%s", args, err, b)
	}
	if err := os.Rename(tmp, out); err != nil {
		t.Fatal(err)
	}
	return out
}
