package quant

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// The block codecs' truth is llama.cpp's own C: ggml/src/ggml-quants.c from
// the npm node-llama-cpp bundle (make llama-src → bench/llama.cpp),
// compiled unmodified with cc into testdata/ggmlquant/harness.c, which
// runs quantize_<type> (with and without an importance matrix) and
// dequantize_row_<type> on the rows this test sends. Bytes and dequantized
// floats must be identical.

// ggmlTypeID is ggml's enum ggml_type for the block codecs.
var ggmlTypeID = map[Type]int32{Q4_0: 2, Q4_1: 3, Q8_0: 8, Q5_0: 6, Q5_1: 7, Q4_K: 12, Q5_K: 13, Q6_K: 14}

// ggmlCFlags are the harness's compile flags: ggml-base's release build
// (NDEBUG; x86-64 without -march, so no FMA contraction; -ffp-contract=off
// says so on every target).
var ggmlCFlags = []string{"-O2", "-ffp-contract=off", "-DNDEBUG", "-std=gnu11"}

// ggmlHarness returns the built harness, cached by the hash of its sources
// under the user cache directory so a rerun costs no compile.
func ggmlHarness(t *testing.T) string {
	t.Helper()
	src := filepath.Join("..", "bench", "llama.cpp", "ggml")
	quants := filepath.Join(src, "src", "ggml-quants.c")
	if _, err := os.Stat(quants); err != nil {
		if os.Getenv("CFLOW_REQUIRE_LLAMA_SRC") == "1" {
			t.Fatalf("%s missing (run make llama-src): CFLOW_REQUIRE_LLAMA_SRC=1 requires it", quants)
		}
		t.Skipf("%s missing (run make llama-src): skipping the byte comparison with ggml's quantizers", quants)
	}
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Fatalf("cc not found: the ggml comparison needs a C compiler (%v)", err)
	}
	h := sha256.New()
	inputs := []string{quants, filepath.Join(src, "src", "ggml-common.h"), filepath.Join(src, "src", "ggml-impl.h"),
		filepath.Join(src, "src", "ggml-quants.h"), filepath.Join(src, "include", "ggml.h"),
		filepath.Join("testdata", "ggmlquant", "harness.c"), filepath.Join("testdata", "ggmlquant", "stubs.c")}
	for _, p := range inputs {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(h, "%s %d\n", filepath.Base(p), len(b))
		h.Write(b)
	}
	fmt.Fprintln(h, strings.Join(ggmlCFlags, " "))
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "cflow", "ggmlquant")
	bin := filepath.Join(dir, "harness-"+hex.EncodeToString(h.Sum(nil))[:16])
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := fmt.Sprintf("%s.tmp%d", bin, os.Getpid())
	args := append(append([]string{}, ggmlCFlags...),
		"-I", filepath.Join(src, "include"), "-I", filepath.Join(src, "src"), "-I", filepath.Join(src, "src", "ggml-cpu"),
		"-o", tmp, quants, inputs[5], inputs[6], "-lm")
	cmd := exec.Command(cc, args...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("cc %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	if err := os.Rename(tmp, bin); err != nil {
		t.Fatal(err)
	}
	return bin
}

// ggmlCase is one request: rows of n weights, optionally an importance
// matrix.
type ggmlCase struct {
	name string
	t    Type
	n    int
	rows [][]float32
	imx  []float32
}

// runGGML sends every case to the harness in one process and returns, per
// case, the quantized bytes and the dequantized floats.
func runGGML(t *testing.T, bin string, cases []ggmlCase) (qs [][]byte, deqs [][]float32) {
	t.Helper()
	var in bytes.Buffer
	for _, c := range cases {
		has := int32(0)
		if c.imx != nil {
			has = 1
		}
		binary.Write(&in, binary.LittleEndian, [4]int32{ggmlTypeID[c.t], int32(len(c.rows)), int32(c.n), has})
		for _, r := range c.rows {
			binary.Write(&in, binary.LittleEndian, r)
		}
		if c.imx != nil {
			binary.Write(&in, binary.LittleEndian, c.imx)
		}
	}
	cmd := exec.Command(bin)
	cmd.Stdin = &in
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("ggml harness: %v\n%s", err, stderr.String())
	}
	rd := bytes.NewReader(out)
	for _, c := range cases {
		q := make([]byte, len(c.rows)*c.t.RowBytes(c.n))
		d := make([]float32, len(c.rows)*c.n)
		if _, err := io.ReadFull(rd, q); err != nil {
			t.Fatalf("harness output short at %s: %v", c.name, err)
		}
		if err := binary.Read(rd, binary.LittleEndian, d); err != nil {
			t.Fatalf("harness output short at %s: %v", c.name, err)
		}
		qs, deqs = append(qs, q), append(deqs, d)
	}
	if rd.Len() != 0 {
		t.Fatalf("harness wrote %d bytes more than expected", rd.Len())
	}
	return qs, deqs
}

// rowKinds are the row shapes the comparison covers, random and
// adversarial, each a function of the row length and a generator.
type rowKind struct {
	name string
	gen  func(n int, r *rand.Rand) []float32
}

var rowKinds = []rowKind{
	{"normal", func(n int, r *rand.Rand) []float32 {
		return fill(n, func(int) float32 { return float32(r.NormFloat64()) })
	}},
	{"normal-small", func(n int, r *rand.Rand) []float32 {
		return fill(n, func(int) float32 { return float32(0.02 * r.NormFloat64()) })
	}},
	{"uniform-pos", func(n int, r *rand.Rand) []float32 { return fill(n, func(int) float32 { return r.Float32() }) }},
	{"negative-only", func(n int, r *rand.Rand) []float32 {
		return fill(n, func(int) float32 { return -float32(math.Abs(r.NormFloat64())) - 0.01 })
	}},
	{"outliers", func(n int, r *rand.Rand) []float32 {
		return fill(n, func(i int) float32 {
			if r.IntN(37) == 0 {
				return float32(50 * r.NormFloat64())
			}
			return float32(0.1 * r.NormFloat64())
		})
	}},
	{"laplace-heavy", func(n int, r *rand.Rand) []float32 {
		return fill(n, func(int) float32 { return float32(r.ExpFloat64() * float64(1-2*r.IntN(2)) * 0.05) })
	}},
	{"zeros", func(n int, r *rand.Rand) []float32 { return make([]float32, n) }},
	{"constant", func(n int, r *rand.Rand) []float32 { return fill(n, func(int) float32 { return 0.375 }) }},
	{"constant-neg", func(n int, r *rand.Rand) []float32 { return fill(n, func(int) float32 { return -1.25 }) }},
	{"one-hot", func(n int, r *rand.Rand) []float32 {
		x := make([]float32, n)
		x[r.IntN(n)] = float32(r.NormFloat64())
		return x
	}},
	{"sparse", func(n int, r *rand.Rand) []float32 {
		return fill(n, func(int) float32 {
			if r.IntN(4) == 0 {
				return float32(r.NormFloat64())
			}
			return 0
		})
	}},
	{"few-levels", func(n int, r *rand.Rand) []float32 {
		return fill(n, func(int) float32 { return float32(r.IntN(5)-2) * 0.5 })
	}},
	{"huge-range", func(n int, r *rand.Rand) []float32 {
		return fill(n, func(int) float32 { return float32(r.NormFloat64() * math.Pow(10, float64(r.IntN(12)-6))) })
	}},
	{"big-1e4", func(n int, r *rand.Rand) []float32 {
		return fill(n, func(int) float32 { return float32(1e4 * r.NormFloat64()) })
	}},
	{"f16-overflow", func(n int, r *rand.Rand) []float32 {
		return fill(n, func(int) float32 { return float32(1e7 * r.NormFloat64()) })
	}},
	{"square-overflow", func(n int, r *rand.Rand) []float32 {
		return fill(n, func(int) float32 { return float32(3e19 * r.NormFloat64()) })
	}},
	{"tiny-1e-6", func(n int, r *rand.Rand) []float32 {
		return fill(n, func(int) float32 { return float32(1e-6 * r.NormFloat64()) })
	}},
	{"tiny-1e-14", func(n int, r *rand.Rand) []float32 {
		return fill(n, func(int) float32 { return float32(1e-14 * r.NormFloat64()) })
	}},
	{"subnormal", func(n int, r *rand.Rand) []float32 {
		return fill(n, func(int) float32 { return float32(1e-40 * r.NormFloat64()) })
	}},
	{"ramp", func(n int, r *rand.Rand) []float32 {
		return fill(n, func(i int) float32 { return float32(i%64) - 31.5 })
	}},
	{"halves", func(n int, r *rand.Rand) []float32 {
		return fill(n, func(i int) float32 { return float32(r.IntN(64)) / 4 })
	}},
}

func fill(n int, f func(i int) float32) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = f(i)
	}
	return x
}

// imatrixKinds are the importance matrices: none, llama-imatrix-like mean
// squares, ones, with zeros, and wildly spread.
var imatrixKinds = []struct {
	name string
	gen  func(n int, r *rand.Rand) []float32
}{
	{"none", func(int, *rand.Rand) []float32 { return nil }},
	{"meansq", func(n int, r *rand.Rand) []float32 {
		return fill(n, func(int) float32 { v := r.NormFloat64(); return float32(v*v + 1e-3) })
	}},
	{"ones", func(n int, r *rand.Rand) []float32 { return fill(n, func(int) float32 { return 1 }) }},
	{"some-zero", func(n int, r *rand.Rand) []float32 {
		return fill(n, func(int) float32 {
			if r.IntN(3) == 0 {
				return 0
			}
			return r.Float32() * 4
		})
	}},
	{"all-zero", func(n int, r *rand.Rand) []float32 { return make([]float32, n) }},
	{"spread", func(n int, r *rand.Rand) []float32 {
		return fill(n, func(int) float32 { return float32(math.Pow(10, 8*r.Float64()-4)) })
	}},
}

// ggmlShapes are the row lengths per type: whole super-blocks for the
// K-quants, 32-multiples (not all 256-multiples) for Q5_0/Q5_1.
var ggmlShapes = map[Type][]int{
	Q4_K: {256, 512}, Q5_K: {256, 768}, Q6_K: {256, 512},
	Q5_0: {32, 96, 288}, Q5_1: {32, 160, 288}, Q4_0: {32, 288}, Q8_0: {32, 288}, Q4_1: {32, 288},
}

// ggmlTested are the types compared: the block codecs and ggml's Q4_0 and
// Q8_0 (in GGUF's layout).
var ggmlTested = []Type{Q4_K, Q5_K, Q6_K, Q5_0, Q5_1, Q4_1, Q4_0, Q8_0}

func TestBlockCodecsMatchGGML(t *testing.T) {
	bin := ggmlHarness(t)
	r := rand.New(rand.NewPCG(33, 256))
	kinds := rowKinds
	if runtime.GOARCH != "amd64" {
		// Subnormal groups make 1/d infinite, and ggml's casts of ±Inf or
		// NaN to an 8-bit integer are undefined in C: x86 gives 0 (what
		// cTrunc transcribes), arm64 saturates.
		kinds = slices.DeleteFunc(slices.Clone(kinds), func(k rowKind) bool { return k.name == "subnormal" })
		t.Logf("%s: subnormal rows left out (C leaves their bytes to the CPU)", runtime.GOARCH)
	}
	var cases []ggmlCase
	for _, ty := range ggmlTested {
		for _, n := range ggmlShapes[ty] {
			for _, im := range imatrixKinds {
				c := ggmlCase{name: fmt.Sprintf("%s/n=%d/imatrix=%s", ty, n, im.name), t: ty, n: n, imx: im.gen(n, r)}
				for _, k := range kinds {
					c.rows = append(c.rows, k.gen(n, r))
				}
				// Rows mixing kinds block by block.
				for i := 0; i < 4; i++ {
					row := make([]float32, 0, n)
					for len(row) < n {
						k := kinds[r.IntN(len(kinds))]
						row = append(row, k.gen(32, r)...)
					}
					c.rows = append(c.rows, row)
				}
				cases = append(cases, c)
			}
		}
	}
	want, wantDeq := runGGML(t, bin, cases)
	rows, blocks := map[Type]int{}, map[Type]int{}
	for ci, c := range cases {
		src := make([]float32, 0, len(c.rows)*c.n)
		for _, row := range c.rows {
			src = append(src, row...)
		}
		got := make([]byte, len(want[ci]))
		if err := QuantizeRows(c.t, got, src, c.n, c.imx); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		bb, rb := c.t.BlockBytes(), c.t.RowBytes(c.n)
		for ri := range c.rows {
			g, w := got[ri*rb:(ri+1)*rb], want[ci][ri*rb:(ri+1)*rb]
			if !bytes.Equal(g, w) {
				for b := 0; b < rb/bb; b++ {
					if !bytes.Equal(g[b*bb:(b+1)*bb], w[b*bb:(b+1)*bb]) {
						t.Errorf("%s row %d (%s) block %d: bytes differ from ggml\n got %x\nwant %x", c.name, ri, rowName(kinds, ri), b, g[b*bb:(b+1)*bb], w[b*bb:(b+1)*bb])
						break
					}
				}
			}
		}
		rows[c.t] += len(c.rows)
		blocks[c.t] += len(c.rows) * c.n / c.t.BlockWeights()
		deq := make([]float32, len(c.rows)*c.n)
		if err := DequantizeRows(c.t, deq, want[ci]); err != nil {
			t.Fatal(err)
		}
		for i, v := range deq {
			w := wantDeq[ci][i]
			if math.Float32bits(v) != math.Float32bits(w) && !(v != v && w != w) {
				t.Errorf("%s: dequantized value %d (row %d) = %v, ggml %v", c.name, i, i/c.n, v, w)
				break
			}
		}
	}
	for _, ty := range ggmlTested {
		t.Logf("%s: %d rows, %d blocks byte-identical to ggml (with and without imatrix)", ty, rows[ty], blocks[ty])
	}
}

func rowName(kinds []rowKind, i int) string {
	if i < len(kinds) {
		return kinds[i].name
	}
	return "mixed"
}
