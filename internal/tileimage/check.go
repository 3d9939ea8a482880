package tileimage

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/cflow-dev/cflow/archspec"
	"github.com/cflow-dev/cflow/quant"
)

// Loc says where a tile was found: its layer-table entry, slot and, inside
// an expert bank, the expert (-1 otherwise). Layer == NumLayers is the
// vocabulary entry.
type Loc struct {
	Layer, Slot, Expert int
}

// CheckWalk is Check for any container: walk must call its argument for
// every tile, grouped so that the tiles of one region (Loc) are
// consecutive and a matrix's tiles never span two regions. The .vflow
// reader passes Loc{layer, stage, -1} for stage tiles.
func CheckWalk(h *Header, md *Metadata, data []byte, walk func(func(Loc, *MappedTile) error) error) error {
	return guardFault("", func() error { return checkWalk(h, md, data, walk) })
}

func checkWalk(h *Header, md *Metadata, data []byte, walk func(func(Loc, *MappedTile) error) error) error {
	cov := NewCoverage(h, md)
	sums := NewLayerSums(int(h.NumLayers))
	var cur Loc
	var prevEnd int64
	started := false
	flush := func() error {
		if !started {
			return nil
		}
		return cov.Finish(cur.Layer, cur.Slot, cur.Expert)
	}
	err := walk(func(loc Loc, t *MappedTile) error {
		if !started || loc != cur {
			if err := flush(); err != nil {
				return err
			}
			cur, started, prevEnd = loc, true, t.Offset
		}
		for o := prevEnd; o < t.Offset; o++ {
			if data[o] != 0 {
				return errAt(o, "non-zero padding byte %#x before the tile at %d", data[o], t.Offset)
			}
		}
		prevEnd = t.Offset + int64(t.Bytes())
		sums.AddTile(int(t.Layer), data[t.Offset:prevEnd])
		return cov.Add(t)
	})
	if err == nil {
		err = flush()
	}
	if err == nil {
		err = verifySums(md, sums, 0)
	}
	return err
}

// Coverage checks that the tiles of each matrix cover it exactly once; it
// is fed one region (slot or expert) at a time and checked with Finish.
// Shared by both formats' Check. Memory is bounded by the tiles present:
// the bitmap is built only after the tiles' areas add up to the matrix's,
// so a header claiming a huge matrix cannot make Check allocate for it.
type Coverage struct {
	h     *Header
	md    *Metadata
	geo   archspec.Geometry
	tiles map[archspec.MatrixID][]*MappedTile
	last  int64 // offset of the last tile added, for errors
}

// NewCoverage starts coverage checking for a file with header h.
func NewCoverage(h *Header, md *Metadata) *Coverage {
	return &Coverage{h: h, md: md, geo: h.Geometry(md), tiles: map[archspec.MatrixID][]*MappedTile{}}
}

// Add checks one tile against the layer's exact shape, rejects partial
// column groups away from the matrix edge, non-finite scales and non-finite
// values (the runtime would turn them into garbage text, not an error), and
// files it for Finish.
func (c *Coverage) Add(t *MappedTile) error {
	c.last = t.Offset
	rows, cols := c.geo.MatrixShape(int(t.Layer), t.Matrix)
	ro, co, tr, tc := int64(t.RowOffset), int(t.ColOffset), int64(t.Tile.Rows), t.Tile.Cols
	if ro+tr > int64(rows) || co+tc > cols {
		return errAt(t.Offset, "layer %d %s tile rows %d+%d cols %d+%d outside the layer's %dx%d matrix", t.Layer, t.Matrix, ro, tr, co, tc, rows, cols)
	}
	if tc%quant.GroupSize != 0 && co+tc != cols {
		return errAt(t.Offset, "layer %d %s tile of %d columns ends inside a group away from the matrix edge", t.Layer, t.Matrix, tc)
	}
	if err := checkFinite(t); err != nil {
		return err
	}
	c.tiles[t.Matrix] = append(c.tiles[t.Matrix], t)
	return nil
}

// Finish checks the region's matrices are each covered exactly once and
// the region holds every matrix it must (layer l, slot s of a layer entry,
// expert e ≥ 0 inside a bank), then resets for the next region.
func (c *Coverage) Finish(l, s, e int) error {
	defer func() { c.tiles = map[archspec.MatrixID][]*MappedTile{} }()
	var need []archspec.MatrixID
	vocab := l == int(c.h.NumLayers)
	switch {
	case vocab && s == SlotEmbed:
		need = []archspec.MatrixID{archspec.MatEmbed}
	case vocab && s == SlotLMHead:
		need = []archspec.MatrixID{archspec.MatLMHead}
	case vocab:
	case s == SlotAttn:
		need = []archspec.MatrixID{archspec.MatQ, archspec.MatK, archspec.MatO}
		if !(c.md.U32(KeyKEqV, 0) == 1 && c.geo.IsFull(l)) {
			need = append(need, archspec.MatV)
		}
	case s == SlotDense:
		need = []archspec.MatrixID{archspec.MatGate, archspec.MatUp, archspec.MatDown}
	case s == SlotMoE:
		need = []archspec.MatrixID{archspec.MatRouter}
	case s == SlotExpertBank:
		need = []archspec.MatrixID{archspec.MatExpertGate, archspec.MatExpertUp, archspec.MatExpertDown}
	}
	for _, m := range need {
		if c.tiles[m] == nil {
			return errAt(c.last, "layer %d slot %d%s has no %s tiles", l, s, expertSuffix(e), m)
		}
	}
	for m, ts := range c.tiles {
		rows, cols := c.geo.MatrixShape(l, m)
		g := quant.Groups(cols)
		var area int64
		for _, t := range ts {
			area += int64(t.Tile.Rows) * int64(quant.Groups(int(t.ColOffset)+t.Tile.Cols)-int(t.ColOffset)/quant.GroupSize)
		}
		if want := int64(rows) * int64(g); area != want {
			return errAt(ts[len(ts)-1].Offset, "layer %d%s %s: tiles cover %d of %d row-groups", l, expertSuffix(e), m, area, want)
		}
		b := make([]uint64, (int64(rows)*int64(g)+63)/64)
		for _, t := range ts {
			for r := int64(t.RowOffset); r < int64(t.RowOffset)+int64(t.Tile.Rows); r++ {
				for k := int(t.ColOffset) / quant.GroupSize; k < quant.Groups(int(t.ColOffset)+t.Tile.Cols); k++ {
					i := r*int64(g) + int64(k)
					if b[i/64]&(1<<(i%64)) != 0 {
						return errAt(t.Offset, "layer %d%s %s tile overlaps another at row %d, column %d", l, expertSuffix(e), m, r, k*quant.GroupSize)
					}
					b[i/64] |= 1 << (i % 64)
				}
			}
		}
		// Equal area and no overlap: every row-group is covered exactly once.
	}
	return nil
}

func expertSuffix(e int) string {
	if e < 0 {
		return ""
	}
	return fmt.Sprintf(" expert %d", e)
}

// checkFinite rejects a tile holding NaN or ±Inf: every f16 scale of a
// quantized tile (its codes are integers, so finite scales make finite
// weights), every value of an F32 tile.
func checkFinite(t *MappedTile) error {
	bad := func(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }
	if t.Tile.Type == quant.F32 {
		for i := 0; i+4 <= len(t.Tile.Data); i += 4 {
			if v := float64(math.Float32frombits(binary.LittleEndian.Uint32(t.Tile.Data[i:]))); bad(v) {
				r, k := i/4/t.Tile.Cols, i/4%t.Tile.Cols
				return errAt(t.Offset, "layer %d%s %s holds non-finite value %v at row %d, column %d", t.Layer, expertSuffix(expertOf(t)), t.Matrix, v, int(t.RowOffset)+r, int(t.ColOffset)+k)
			}
		}
		return nil
	}
	g := quant.Groups(t.Tile.Cols)
	for r := 0; r < t.Tile.Rows; r++ {
		for k := 0; k < g; k++ {
			if v := float64(t.Tile.ScaleAt(r, k)); bad(v) {
				return errAt(t.Offset, "layer %d%s %s has non-finite scale %v at row %d, column %d", t.Layer, expertSuffix(expertOf(t)), t.Matrix, v, int(t.RowOffset)+r, int(t.ColOffset)+k*quant.GroupSize)
			}
		}
	}
	return nil
}

func expertOf(t *MappedTile) int {
	if t.Expert == NoExpert {
		return -1
	}
	return int(t.Expert)
}
