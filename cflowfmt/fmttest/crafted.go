package fmttest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"

	"github.com/cflow-dev/cflow/archspec"
	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/quant"
)

// Crafted is one hand-made .cflow that a correct reader must refuse: the
// red-team reproductions of issue 19 as bytes. Name says what is wrong.
// Each is a Tiny model written by the real writer and then patched, because
// the writer itself refuses to produce them.
type Crafted struct {
	Name string
	Data []byte
}

// CraftedFiles builds the refused files in dir (a scratch directory).
// Tests assert each is refused by Open or by Check; the fuzz targets use
// them as seeds so mutations start next to the known attacks.
func CraftedFiles(dir string) ([]Crafted, error) {
	var out []Crafted
	add := func(name string, s *Spec, patch func(b []byte, tiles map[int64]Tile) error) error {
		path := filepath.Join(dir, name+".cflow")
		tiles, err := WriteCflow(path, s, nil)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if err := patch(b, tiles); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		out = append(out, Crafted{name, b})
		return nil
	}
	withMeta := func(f func(md *cflowfmt.Metadata)) *Spec {
		s := Tiny(quant.F32, false, false)
		f(s.Meta)
		return s
	}
	steps := []struct {
		name  string
		s     *Spec
		patch func(b []byte, tiles map[int64]Tile) error
	}{
		{"block_iterations_0xffffffff", withMeta(func(md *cflowfmt.Metadata) { md.SetU32(cflowfmt.KeyBlockIterations, 1) }),
			func(b []byte, _ map[int64]Tile) error {
				return patchMeta(b, cflowfmt.KeyBlockIterations, binary.LittleEndian.AppendUint32(nil, 0xFFFFFFFF))
			}},
		{"prenorm_dense_delay_255", Tiny(quant.F32, false, false),
			func(b []byte, _ map[int64]Tile) error { b[80] = 255; return nil }},
		{"partial_rotary_factor_10", withMeta(func(md *cflowfmt.Metadata) { md.SetF32(cflowfmt.KeyRopePartial, 0.5) }),
			func(b []byte, _ map[int64]Tile) error {
				return patchMeta(b, cflowfmt.KeyRopePartial, binary.LittleEndian.AppendUint32(nil, math.Float32bits(10)))
			}},
		{"q4_nan_scale", Tiny(quant.Q4_0, true, false),
			func(b []byte, tiles map[int64]Tile) error {
				off, err := firstTile(tiles, func(t Tile) bool { return t.T.Type == quant.Q4_0 && t.TH.Matrix.IsExpert() })
				binary.LittleEndian.PutUint16(b[off+cflowfmt.TileHeaderSize:], 0x7E00) // f16 NaN
				return err
			}},
		{"q8_inf_scale", Tiny(quant.Q8_0, false, false),
			func(b []byte, tiles map[int64]Tile) error {
				off, err := firstTile(tiles, func(t Tile) bool { return t.T.Type == quant.Q8_0 })
				binary.LittleEndian.PutUint16(b[off+cflowfmt.TileHeaderSize:], 0x7C00) // f16 +Inf
				return err
			}},
		{"f32_nan_weight", Tiny(quant.F32, false, false),
			func(b []byte, tiles map[int64]Tile) error {
				off, err := firstTile(tiles, func(t Tile) bool { return t.TH.Matrix == archspec.MatUp })
				binary.LittleEndian.PutUint32(b[off+cflowfmt.TileHeaderSize+4:], math.Float32bits(float32(math.NaN())))
				return err
			}},
		{"weight_bit_flip", Tiny(quant.Q4_0, false, false),
			func(b []byte, tiles map[int64]Tile) error {
				off, err := firstTile(tiles, func(t Tile) bool { return t.TH.Matrix == archspec.MatGate })
				t := tiles[off]
				b[off+int64(cflowfmt.TileHeaderSize+len(t.T.Scales))] ^= 0x10 // one Q4 code changes
				return err
			}},
	}
	for _, st := range steps {
		if err := add(st.name, st.s, st.patch); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// PatchMeta overwrites the start of key's value in a written file (either
// format), bypassing the writer's validation.
func PatchMeta(b []byte, key string, v []byte) error { return patchMeta(b, key, v) }

// patchMeta overwrites the 4-byte value of key in a written file.
func patchMeta(b []byte, key string, v []byte) error {
	i := bytes.Index(b, []byte(key))
	if i < 0 {
		return fmt.Errorf("key %q not in file", key)
	}
	at := i + len(key) + 1 + 4
	copy(b[at:at+len(v)], v)
	return nil
}

// firstTile is the lowest offset of a tile matching keep.
func firstTile(tiles map[int64]Tile, keep func(Tile) bool) (int64, error) {
	var offs []int64
	for off, t := range tiles {
		if keep(t) {
			offs = append(offs, off)
		}
	}
	if len(offs) == 0 {
		return 0, fmt.Errorf("no matching tile")
	}
	sort.Slice(offs, func(i, j int) bool { return offs[i] < offs[j] })
	return offs[0], nil
}
