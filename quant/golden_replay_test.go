package quant

// Bit-exact agreement between quant.Encode (+ Tile.Weight) and the Python
// reference's replay of it (golden/cflow_ref/quant_replay.py), which the
// q4_replay / q8_replay traces are computed with. The vectors are written by
// `make golden` into golden/testdata/quant_replay.json.

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const goldenDir = "../golden"

type replayCase struct {
	Name string   `json:"name"`
	Rows int      `json:"rows"`
	Cols int      `json:"cols"`
	W    []string `json:"w"`
	Q4   []string `json:"q4"`
	Q8   []string `json:"q8"`
}

type replayFixture struct {
	Name    string `json:"name"`
	Dir     string `json:"dir"`
	Tensors int    `json:"tensors"`
	Q4      string `json:"q4_sha256"`
	Q8      string `json:"q8_sha256"`
}

type replayFile struct {
	Group    int             `json:"group"`
	Cases    []replayCase    `json:"cases"`
	Fixtures []replayFixture `json:"fixtures"`
}

func loadReplay(t *testing.T) *replayFile {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(goldenDir, "testdata", "quant_replay.json"))
	if err != nil {
		t.Fatalf("golden vectors: %v (regenerate with `make golden`)", err)
	}
	var f replayFile
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	if f.Group != GroupSize {
		t.Fatalf("golden vectors use groups of %d, quant uses %d", f.Group, GroupSize)
	}
	return &f
}

func hexFloats(t *testing.T, hs []string) []float32 {
	t.Helper()
	out := make([]float32, len(hs))
	for i, h := range hs {
		u, err := strconv.ParseUint(h, 16, 32)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = math.Float32frombits(uint32(u))
	}
	return out
}

// dequantTiled encodes w (rows×cols, row-major) in tiles of at most
// MaxTileRows×MaxTileCols, as the converter does, and returns every
// element's Tile.Weight in row-major order.
func dequantTiled(typ Type, w []float32, rows, cols int) []float32 {
	out := make([]float32, rows*cols)
	for r0 := 0; r0 < rows; r0 += MaxTileRows {
		tr := min(MaxTileRows, rows-r0)
		for c0 := 0; c0 < cols; c0 += MaxTileCols {
			tc := min(MaxTileCols, cols-c0)
			tile := Encode(typ, w[r0*cols+c0:], tr, tc, cols)
			for r := 0; r < tr; r++ {
				for c := 0; c < tc; c++ {
					out[(r0+r)*cols+c0+c] = tile.Weight(r, c)
				}
			}
		}
	}
	return out
}

func TestGoldenReplayVectors(t *testing.T) {
	f := loadReplay(t)
	if len(f.Cases) == 0 {
		t.Fatal("no cases")
	}
	for _, c := range f.Cases {
		w := hexFloats(t, c.W)
		if len(w) != c.Rows*c.Cols {
			t.Fatalf("%s: %d values for %d×%d", c.Name, len(w), c.Rows, c.Cols)
		}
		for _, k := range []struct {
			typ  Type
			want []string
		}{{Q4_0, c.Q4}, {Q8_0, c.Q8}} {
			want := hexFloats(t, k.want)
			got := dequantTiled(k.typ, w, c.Rows, c.Cols)
			bad := 0
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					if bad < 5 {
						t.Errorf("%s %s: [%d,%d] w=%g: Go %g (%08x), Python %g (%08x)", c.Name, k.typ,
							i/c.Cols, i%c.Cols, w[i], got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
					}
					bad++
				}
			}
			if bad > 0 {
				t.Errorf("%s %s: %d of %d values differ", c.Name, k.typ, bad, len(got))
			}
		}
	}
}

// TestGoldenReplayFixtures quantizes every matrix of every golden fixture
// that the converter stores quantized (2-D, not the MoE router) and checks
// the dequantized values hash to what the Python replay produced.
func TestGoldenReplayFixtures(t *testing.T) {
	f := loadReplay(t)
	if len(f.Fixtures) == 0 {
		t.Fatal("no fixtures")
	}
	for _, fx := range f.Fixtures {
		tensors, err := readSafetensors(filepath.Join(goldenDir, fx.Dir, "model.safetensors"))
		if err != nil {
			t.Fatalf("%s: %v", fx.Name, err)
		}
		var names []string
		for n, st := range tensors {
			if len(st.shape) == 2 && !strings.HasSuffix(n, "moe.router.weight") && !strings.HasSuffix(n, "block_sparse_moe.gate.weight") {
				names = append(names, n)
			}
		}
		sort.Strings(names)
		if len(names) != fx.Tensors {
			t.Errorf("%s: %d quantized matrices, Python counted %d", fx.Name, len(names), fx.Tensors)
		}
		for _, k := range []struct {
			typ  Type
			want string
		}{{Q4_0, fx.Q4}, {Q8_0, fx.Q8}} {
			h := sha256.New()
			var buf []byte
			for _, n := range names {
				st := tensors[n]
				got := dequantTiled(k.typ, st.data, st.shape[0], st.shape[1])
				buf = buf[:0]
				for _, v := range got {
					buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(v))
				}
				h.Write(buf)
			}
			if sum := hex.EncodeToString(h.Sum(nil)); sum != k.want {
				t.Errorf("%s %s: dequantized matrices hash %s, Python replay %s", fx.Name, k.typ, sum, k.want)
			}
		}
	}
}

type stTensor struct {
	shape []int
	data  []float32
}

// readSafetensors is a minimal reader (F32, F16, BF16) so this test needs
// nothing beyond the standard library.
func readSafetensors(path string) (map[string]stTensor, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(b) < 8 {
		return nil, fmt.Errorf("%s: too short", path)
	}
	n := binary.LittleEndian.Uint64(b)
	if n > uint64(len(b)-8) {
		return nil, fmt.Errorf("%s: header length %d", path, n)
	}
	var hdr map[string]json.RawMessage
	if err := json.Unmarshal(b[8:8+n], &hdr); err != nil {
		return nil, err
	}
	base := 8 + int(n)
	out := map[string]stTensor{}
	for name, raw := range hdr {
		if name == "__metadata__" {
			continue
		}
		var info struct {
			Dtype   string `json:"dtype"`
			Shape   []int  `json:"shape"`
			Offsets [2]int `json:"data_offsets"`
		}
		if err := json.Unmarshal(raw, &info); err != nil {
			return nil, err
		}
		p := b[base+info.Offsets[0] : base+info.Offsets[1]]
		var v []float32
		switch info.Dtype {
		case "F32":
			v = make([]float32, len(p)/4)
			for i := range v {
				v[i] = math.Float32frombits(binary.LittleEndian.Uint32(p[4*i:]))
			}
		case "F16":
			v = make([]float32, len(p)/2)
			for i := range v {
				v[i] = halfToFloat(binary.LittleEndian.Uint16(p[2*i:]))
			}
		case "BF16":
			v = make([]float32, len(p)/2)
			for i := range v {
				v[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(p[2*i:])) << 16)
			}
		default:
			return nil, fmt.Errorf("%s: %s has dtype %s", path, name, info.Dtype)
		}
		out[name] = stTensor{shape: info.Shape, data: v}
	}
	return out, nil
}

// halfToFloat widens an IEEE binary16 value exactly.
func halfToFloat(h uint16) float32 {
	sign := float32(1)
	if h&0x8000 != 0 {
		sign = -1
	}
	exp := int(h>>10) & 0x1f
	frac := float64(h & 0x3ff)
	switch exp {
	case 0:
		return sign * float32(math.Ldexp(frac, -24))
	case 0x1f:
		if frac != 0 {
			return float32(math.NaN())
		}
		return sign * float32(math.Inf(1))
	}
	return sign * float32(math.Ldexp(1024+frac, exp-25))
}
