package tileimage

import (
	"encoding/binary"
	"math"

	"github.com/cflow-dev/cflow/archspec"
	"github.com/cflow-dev/cflow/internal/fileio"
	"github.com/cflow-dev/cflow/quant"
)

// TileSink is the tile layer both formats' writers put over the output
// sink (fileio.Sink): aligned tiles, each folded into the per-layer weight
// checksums the file stores.
type TileSink struct {
	*fileio.Sink
	sums LayerSums // per-layer tile checksums, when TrackSums was called
}

// CreateTileSink opens the output sink for path (fileio.CreateSink: a
// symlink is followed; a FIFO, device, socket or directory refused).
func CreateTileSink(path string) (*TileSink, error) {
	s, err := fileio.CreateSink(path)
	if err != nil {
		return nil, err
	}
	return &TileSink{Sink: s}, nil
}

// TrackSums makes WriteTile fold every tile into per-layer checksums
// (LayerSums) for a model of the given layer count; Sums returns them.
func (s *TileSink) TrackSums(layers int) { s.sums = NewLayerSums(layers) }

// Sums are the checksums of the tiles written so far.
func (s *TileSink) Sums() LayerSums { return s.sums }

// Pad writes zero bytes up to the next multiple of TileAlign.
func (s *TileSink) Pad() error { return s.PadTo(TileAlign) }

// WriteTile pads to TileAlign and writes header, scales and data, returning
// the tile's offset. It does not validate; the format writers do.
func (s *TileSink) WriteTile(th *TileHeader, t *quant.Tile) (int64, error) {
	return s.writeTile(th, t, nil)
}

// WriteTileSum is WriteTile with the tile's TileSum computed by the caller.
func (s *TileSink) WriteTileSum(th *TileHeader, t *quant.Tile, sum uint64) (int64, error) {
	return s.writeTile(th, t, &sum)
}

func (s *TileSink) writeTile(th *TileHeader, t *quant.Tile, sum *uint64) (int64, error) {
	if err := s.Pad(); err != nil {
		return 0, err
	}
	at := s.Offset()
	var b [TileHeaderSize]byte
	th.Put(b[:])
	s.Write(b[:])
	s.Write(t.Scales)
	_, err := s.Write(t.Data)
	switch {
	case s.sums == nil:
	case sum != nil:
		s.sums.Add(int(th.Layer), *sum)
	default:
		s.sums.AddTile(int(th.Layer), b[:], t.Scales, t.Data)
	}
	return at, err
}

// NormTiles splits a norm vector into the 1-row F32 tiles the formats store
// (at most cols columns each); both writers' WriteNorm use it.
func NormTiles(layer int, m archspec.MatrixID, v []float32, cols int) ([]TileHeader, []quant.Tile) {
	var ths []TileHeader
	var ts []quant.Tile
	for c := 0; c < len(v); c += cols {
		n := min(cols, len(v)-c)
		data := make([]byte, 4*n)
		for i, x := range v[c : c+n] {
			binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(x))
		}
		ths = append(ths, TileHeader{Layer: uint16(layer), Matrix: m, Expert: NoExpert,
			ColOffset: uint16(c), Rows: 1, Cols: uint16(n)})
		ts = append(ts, quant.Tile{Type: quant.F32, Rows: 1, Cols: n, Data: data})
	}
	return ths, ts
}
