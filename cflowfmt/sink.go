package cflowfmt

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/cflow-dev/cflow/quant"
)

// Sink is the streaming, all-or-nothing output both writers (.cflow and
// .vflow) use: bytes go through a buffer into a temp file in the target's
// directory, which is renamed over the target only by Commit. Abort, or any
// failure, removes the temp file, so a failed conversion leaves nothing.
// Memory is the buffer, never the model.
type Sink struct {
	path string
	f    *os.File
	w    *bufio.Writer
	off  int64
	err  error
	done bool
	sums LayerSums // per-layer tile checksums, when TrackSums was called
}

// TrackSums makes WriteTile fold every tile into per-layer checksums
// (LayerSums) for a model of the given layer count; Sums returns them.
func (s *Sink) TrackSums(layers int) { s.sums = NewLayerSums(layers) }

// Sums are the checksums of the tiles written so far.
func (s *Sink) Sums() LayerSums { return s.sums }

const sinkBuffer = 1 << 20

// CreateSink opens a temp file next to path ("."+base+".tmp*").
// A directory at path is refused here, before any byte is written.
func CreateSink(path string) (*Sink, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return nil, fmt.Errorf("output %s is an existing directory; give a file path", path)
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return nil, err
	}
	return &Sink{path: path, f: f, w: bufio.NewWriterSize(f, sinkBuffer)}, nil
}

// Offset is the file offset of the next byte written.
func (s *Sink) Offset() int64 { return s.off }

// Err is the first write error, which makes the sink unusable.
func (s *Sink) Err() error { return s.err }

// Write appends p.
func (s *Sink) Write(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	n, err := s.w.Write(p)
	s.off += int64(n)
	if err != nil {
		s.err = fmt.Errorf("writing %s: %w", s.path, err)
	}
	return n, s.err
}

var zeros [TileAlign]byte

// Pad writes zero bytes up to the next multiple of TileAlign.
func (s *Sink) Pad() error {
	_, err := s.Write(zeros[:AlignUp(s.off)-s.off])
	return err
}

// Zeros appends n zero bytes (space reserved for a later WriteAt).
func (s *Sink) Zeros(n int64) error {
	for n > 0 && s.err == nil {
		k := min(n, int64(len(zeros)))
		s.Write(zeros[:k])
		n -= k
	}
	return s.err
}

// WriteAt overwrites already-written bytes (back-patching tables); it
// flushes the buffer first so the two paths never interleave wrongly.
func (s *Sink) WriteAt(p []byte, off int64) error {
	if s.err != nil {
		return s.err
	}
	if off < 0 || off+int64(len(p)) > s.off {
		s.err = fmt.Errorf("writing %s: back-patch of %d bytes at %d beyond written size %d", s.path, len(p), off, s.off)
		return s.err
	}
	if err := s.w.Flush(); err != nil {
		s.err = fmt.Errorf("writing %s: %w", s.path, err)
		return s.err
	}
	if _, err := s.f.WriteAt(p, off); err != nil {
		s.err = fmt.Errorf("writing %s: %w", s.path, err)
	}
	return s.err
}

// WriteTile pads to TileAlign and writes header, scales and data, returning
// the tile's offset. It does not validate; the format writers do.
func (s *Sink) WriteTile(th *TileHeader, t *quant.Tile) (int64, error) {
	if err := s.Pad(); err != nil {
		return 0, err
	}
	at := s.off
	var b [TileHeaderSize]byte
	th.Put(b[:])
	s.Write(b[:])
	s.Write(t.Scales)
	_, err := s.Write(t.Data)
	if s.sums != nil {
		s.sums.AddTile(int(th.Layer), b[:], t.Scales, t.Data)
	}
	return at, err
}

// Commit flushes, fsyncs and renames the temp file to the target path.
func (s *Sink) Commit() error {
	if s.done {
		return errors.New("cflowfmt: sink already closed")
	}
	if s.err == nil {
		if err := s.w.Flush(); err != nil {
			s.err = err
		} else if err := s.f.Chmod(0o644); err != nil {
			s.err = err
		} else if err := s.f.Sync(); err != nil {
			s.err = err
		}
	}
	if s.err != nil {
		s.Abort()
		return s.err
	}
	s.done = true
	tmp := s.f.Name()
	if err := s.f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", s.path, err)
	}
	if err := os.Rename(tmp, s.path); err != nil {
		os.Remove(tmp)
		return err
	}
	if d, err := os.Open(filepath.Dir(s.path)); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// Abort closes and removes the temp file; safe to call more than once and
// after Commit (then it does nothing).
func (s *Sink) Abort() {
	if s.done {
		return
	}
	s.done = true
	if s.err == nil {
		s.err = errors.New("cflowfmt: writer aborted")
	}
	s.f.Close()
	os.Remove(s.f.Name())
}

// NormTiles splits a norm vector into the 1-row F32 tiles the formats store
// (at most cols columns each); both writers' WriteNorm use it.
func NormTiles(layer int, m MatrixID, v []float32, cols int) ([]TileHeader, []quant.Tile) {
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
