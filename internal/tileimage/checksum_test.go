package tileimage

import (
	"hash/fnv"
	"math/rand"
	"testing"

	"github.com/cflow-dev/cflow/archspec"
	"github.com/cflow-dev/cflow/quant"
)

// TestTileSumsMatchFNV: the interleaved TileSums gives, for every tile, the
// hash/fnv FNV-1a-64 of its header, scales and data — runs of four
// same-size tiles, a run broken by one of another size, a tail of fewer
// than four.
func TestTileSumsMatchFNV(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	sizes := []int{64, 64, 64, 64, 64, 64, 64, 64, 32, 64, 64, 64, 64, 64, 16, 16, 16}
	ths := make([]TileHeader, len(sizes))
	ts := make([]quant.Tile, len(sizes))
	for i, n := range sizes {
		ths[i] = TileHeader{Layer: uint16(i), Matrix: archspec.MatrixID(i % 5), ColOffset: uint16(256 * i), Rows: uint16(n), Cols: 256}
		sc, data := make([]byte, n*8), make([]byte, n*128)
		rng.Read(sc)
		rng.Read(data)
		ts[i] = quant.Tile{Type: quant.Q4_0, Rows: n, Cols: 256, Scales: sc, Data: data}
	}
	got := make([]uint64, len(ts))
	TileSums(ths, ts, got)
	for i := range ts {
		var b [TileHeaderSize]byte
		ths[i].Put(b[:])
		h := fnv.New64a()
		h.Write(b[:])
		h.Write(ts[i].Scales)
		h.Write(ts[i].Data)
		if want := h.Sum64(); got[i] != want {
			t.Fatalf("tile %d (%d rows): TileSums %x, FNV-1a-64 %x", i, sizes[i], got[i], want)
		}
	}
}
