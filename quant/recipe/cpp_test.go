package recipe

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The branches the snapshots do not reach (overrides, --pure, an imatrix,
// Mixtral's eight experts, Falcon, odd row lengths) are held to llama.cpp's
// C++ itself: the type-choice functions are copied unmodified out of
// src/llama-quant.cpp (and the loader's tensor-order comparer out of
// llama-model-loader.h) between fixed markers, compiled with
// testdata/llamaquant's mock of the rest, and run on the same models.

const llamaSrc = "../../bench/llama.cpp"

// cut returns src from the line starting with begin up to (not including)
// end, failing when llama.cpp's source no longer has the markers.
func cut(t *testing.T, src, file, begin, end string) string {
	t.Helper()
	i := strings.Index(src, begin)
	if i < 0 {
		t.Fatalf("%s: marker %q not found: llama.cpp's source moved, update cpp_test.go", file, begin)
	}
	j := strings.Index(src[i:], end)
	if j < 0 {
		t.Fatalf("%s: end marker %q not found after %q", file, end, begin)
	}
	return src[i : i+j]
}

func llamaQuantHarness(t *testing.T) string {
	t.Helper()
	quantCpp := filepath.Join(llamaSrc, "src", "llama-quant.cpp")
	q, err := os.ReadFile(quantCpp)
	if err != nil {
		if os.Getenv("CFLOW_REQUIRE_LLAMA_SRC") == "1" {
			t.Fatalf("%v (run make llama-src): CFLOW_REQUIRE_LLAMA_SRC=1 requires it", err)
		}
		t.Skipf("%v (run make llama-src): skipping the comparison with llama-quant.cpp", err)
	}
	loader, err := os.ReadFile(filepath.Join(llamaSrc, "src", "llama-model-loader.h"))
	if err != nil {
		t.Fatal(err)
	}
	pre, err := os.ReadFile(filepath.Join("testdata", "llamaquant", "pre.cpp"))
	if err != nil {
		t.Fatal(err)
	}
	mainCpp, err := os.ReadFile(filepath.Join("testdata", "llamaquant", "main.cpp"))
	if err != nil {
		t.Fatal(err)
	}
	qs := string(q)
	var b strings.Builder
	b.Write(pre)
	b.WriteString(cut(t, string(loader), "llama-model-loader.h", "struct weight_name_comparer {", "\n    };") + "\n};\n")
	b.WriteString(cut(t, qs, quantCpp, "struct tensor_type_option {", "static const size_t LLAMA_QUANT_MAX_BUF_SIZE"))
	b.WriteString(cut(t, qs, quantCpp, "static bool tensor_name_match_token_embd", "//\n// dequantization"))
	b.WriteString(cut(t, qs, quantCpp, "static bool tensor_allows_quantization", "//\n// quantization implementation"))
	b.WriteString(cut(t, qs, quantCpp, "ggml_type llama_ftype_get_default_type", "//\n// main quantization driver"))
	b.Write(mainCpp)
	src := b.String()
	sum := sha256.Sum256([]byte(src + strings.Join(cxxFlags, " ")))
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "cflow", "llamaquant")
	bin := filepath.Join(dir, "types-"+hex.EncodeToString(sum[:8]))
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	cxx, err := exec.LookPath("c++")
	if err != nil {
		t.Fatalf("c++ not found: the llama-quant.cpp comparison needs a C++ compiler (%v)", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cppFile := filepath.Join(t.TempDir(), "types.cpp")
	if err := os.WriteFile(cppFile, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	tmp := fmt.Sprintf("%s.tmp%d", bin, os.Getpid())
	// The copied file's own #includes are not part of the copy; the mock's
	// come first.
	args := append(append([]string{}, cxxFlags...), "-I", filepath.Join(llamaSrc, "ggml", "include"),
		"-I", filepath.Join(llamaSrc, "include"), "-o", tmp, cppFile)
	if out, err := exec.Command(cxx, args...).CombinedOutput(); err != nil {
		t.Fatalf("c++ %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	if err := os.Rename(tmp, bin); err != nil {
		t.Fatal(err)
	}
	return bin
}

// cxxFlags build the harness; -O2 because std::regex unoptimized costs
// seconds over the cases.
var cxxFlags = []string{"-std=c++17", "-O2", "-w"}

var ftypeID = map[Recipe]int{F32: 0, Q4_0: 2, Q8_0: 7, Q4_K_S: 14, Q4_K_M: 15, Q5_K_S: 16, Q5_K_M: 17, Q6_K: 18}

type cppCase struct {
	name      string
	r         Recipe
	m         Model
	ts        []Tensor
	imatrix   bool
	pure      bool
	overrides []string
}

// writeCase appends one model's request.
func writeCase(in *bytes.Buffer, c cppCase) {
	arch := "llama"
	if c.m.Arch == "falcon" {
		arch = "falcon"
	}
	b2i := map[bool]int{false: 0, true: 1}
	fmt.Fprintf(in, "ftype %d arch %s type70b %d n_expert %d n_layer %d imatrix %d pure %d\n",
		ftypeID[c.r], arch, b2i[c.m.Is70B], c.m.Experts, c.m.Layers, b2i[c.imatrix], b2i[c.pure])
	for _, o := range c.overrides {
		p, ty, _ := strings.Cut(o, "=")
		fmt.Fprintf(in, "override %s %s\n", strings.ToLower(p), ty)
	}
	for _, x := range c.ts {
		fmt.Fprintf(in, "tensor %s %d %d %d\n", x.Name, x.dim(0), x.dim(1), x.dim(2))
	}
	in.WriteString("end\n")
}

// runCpp sends every case to one harness process; per case it returns the
// types, or the text of the C++ exception.
func runCpp(t *testing.T, bin string, cases []cppCase) (types [][]string, errs []string) {
	t.Helper()
	var in bytes.Buffer
	for _, c := range cases {
		writeCase(&in, c)
	}
	cmd := exec.Command(bin)
	cmd.Stdin = &in
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("harness: %v", err)
	}
	blocks := strings.Split(strings.TrimSuffix(string(out), "end\n"), "end\n")
	if len(blocks) != len(cases) {
		t.Fatalf("harness answered %d models for %d", len(blocks), len(cases))
	}
	for _, b := range blocks {
		b = strings.TrimSuffix(b, "\n")
		if e, ok := strings.CutPrefix(b, "error "); ok {
			types, errs = append(types, nil), append(errs, e)
			continue
		}
		types, errs = append(types, strings.Split(b, "\n")), append(errs, "")
	}
	return types, errs
}

// cppModels are the shapes the comparison walks: a Llama-7B geometry, a
// 70B, Mixtral (8 experts, tied here), a 128-expert MoE with shared
// experts and 2880-wide rows, Falcon-7B (rows of 4544), and a toy whose
// rows are not multiples of 32.
func cppModels() []struct {
	name string
	m    Model
	ts   []Tensor
} {
	shexp := geometry{embd: 2880, ff: 2880, vocab: 5000, layers: 12, heads: 64, kvHeads: 8, headDim: 64, experts: 128, outputTensor: true}.tensors()
	for l := 0; l < 12; l++ {
		shexp = append(shexp, Tensor{fmt.Sprintf("blk.%d.ffn_down_shexp.weight", l), []int{1536, 2880}},
			Tensor{fmt.Sprintf("blk.%d.ffn_gate_shexp.weight", l), []int{2880, 1536}})
	}
	return []struct {
		name string
		m    Model
		ts   []Tensor
	}{
		{"llama-7b", Model{Arch: "llama", Layers: 32}, llama32.tensors()},
		{"llama-70b", Model{Arch: "llama", Layers: 80, Is70B: true},
			geometry{embd: 8192, ff: 28672, vocab: 1000, layers: 80, heads: 64, kvHeads: 8, headDim: 128, outputTensor: true}.tensors()},
		{"mixtral", Model{Arch: "llama", Layers: 32, Experts: 8},
			geometry{embd: 4096, ff: 14336, vocab: 32000, layers: 32, heads: 32, kvHeads: 8, headDim: 128, experts: 8}.tensors()},
		{"moe-shexp-2880", Model{Arch: "llama", Layers: 12, Experts: 128}, shexp},
		{"falcon-7b", Model{Arch: "falcon", Layers: 32},
			geometry{embd: 4544, ff: 18176, vocab: 65024, layers: 32, heads: 71, kvHeads: 1, headDim: 64, outputTensor: true}.tensors()},
		{"odd-rows", Model{Arch: "llama", Layers: 4},
			geometry{embd: 100, ff: 288, vocab: 300, layers: 4, heads: 2, kvHeads: 1, headDim: 50, outputTensor: true}.tensors()},
	}
}

var overrideSets = [][]string{
	nil,
	{`blk\.0\.attn_v=q5_K`},
	{`attn_q=q6_K`, `attn=q8_0`},
	{`FFN_DOWN=Q4_K`, `blk\.[0-3]\.=q5_0`},
	{`output=q4_0`, `token_embd=q8_0`},
}

func TestChooseMatchesLlamaQuantCpp(t *testing.T) {
	bin := llamaQuantHarness(t)
	var cases []cppCase
	for _, mod := range cppModels() {
		for r := F32; r <= Q6_K; r++ {
			for _, os := range overrideSets {
				for _, flags := range [][2]bool{{false, false}, {true, false}, {false, true}} {
					cases = append(cases, cppCase{name: fmt.Sprintf("%s/%s/overrides=%v/imatrix=%v/pure=%v", mod.name, r, os, flags[0], flags[1]),
						r: r, m: mod.m, ts: mod.ts, imatrix: flags[0], pure: flags[1], overrides: os})
				}
			}
		}
	}
	want, cerrs := runCpp(t, bin, cases)
	compared, errCases := 0, 0
	for ci, c := range cases {
		var ovs []Override
		for _, s := range c.overrides {
			o, err := ParseOverride(s)
			if err != nil {
				t.Fatal(err)
			}
			ovs = append(ovs, o)
		}
		got, err := chooseGGML(c.r, c.m, c.ts, Options{Imatrix: c.imatrix, Pure: c.pure, Overrides: ovs})
		if cerrs[ci] != "" || err != nil {
			if cerrs[ci] == "" || err == nil {
				t.Errorf("%s: Go err %v, C++ error %q", c.name, err, cerrs[ci])
			}
			errCases++
			continue
		}
		for i, x := range c.ts {
			if got[i].String() != want[ci][i] {
				t.Errorf("%s: %s %v: got %s, llama-quant.cpp %s", c.name, x.Name, x.Shape, got[i], want[ci][i])
			}
			compared++
		}
	}
	t.Logf("%d cases (%d refused by both), %d tensor choices identical to llama-quant.cpp's", len(cases), errCases, compared)
}
