package cflowfmt

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/cflow-dev/cflow/quant"
	"golang.org/x/sys/unix"
)

// Sink is the streaming, all-or-nothing output every writer uses (.cflow,
// .vflow, GGUF, safetensors, traces, profiles): bytes go through a buffer
// into a temp file in the target's directory, which appears at the target
// path only at Commit. Abort, or any failure, removes it, so a failed
// command leaves nothing. Memory is the buffer, never the model.
//
// The temp file is unnamed where the kernel allows (O_TMPFILE, linked at
// Commit), so a process killed by any signal — SIGKILL included — leaves
// no file behind. Elsewhere it is a named ".<base>.tmp*" file held under an
// exclusive flock while it is written; CreateSink removes such files whose
// lock is free (their writer died), so the next run to the same path
// cleans up after a killed one without touching a live concurrent writer.
type Sink struct {
	path string
	f    *os.File
	tmp  string // the named temp file; "" while unnamed (O_TMPFILE)
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

// CreateSink opens the temp file for path in path's directory. A directory
// at path is refused here, before any byte is written.
func CreateSink(path string) (*Sink, error) {
	return createSink(path, true)
}

func createSink(path string, unnamed bool) (*Sink, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return nil, fmt.Errorf("output %s is an existing directory; give a file path", path)
	}
	dir := filepath.Dir(path)
	removeStaleTemps(path)
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		unnamed = false // Commit links the unnamed file through /proc
	}
	if unnamed {
		fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_WRONLY|unix.O_CLOEXEC, 0o600)
		if err == nil {
			f := os.NewFile(uintptr(fd), path)
			return &Sink{path: path, f: f, w: bufio.NewWriterSize(f, sinkBuffer)}, nil
		}
		// EOPNOTSUPP, EISDIR on old kernels, EINVAL: fall back to a name.
	}
	f, err := os.CreateTemp(dir, tempPattern(path))
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("locking %s: %w", f.Name(), err)
	}
	return &Sink{path: path, f: f, tmp: f.Name(), w: bufio.NewWriterSize(f, sinkBuffer)}, nil
}

func tempPattern(path string) string { return "." + filepath.Base(path) + ".tmp*" }

// removeStaleTemps deletes named temp files of path whose flock is free:
// their writer is gone (killed, crashed), since a live writer holds the
// lock until Commit or Abort.
func removeStaleTemps(path string) {
	m, _ := filepath.Glob(filepath.Join(filepath.Dir(path), globEscape(tempPattern(path))))
	for _, name := range m {
		f, err := os.OpenFile(name, os.O_RDONLY, 0)
		if err != nil {
			continue
		}
		if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil {
			os.Remove(name)
		}
		f.Close()
	}
}

// globEscape quotes the glob metacharacters of a file name, keeping the
// pattern's final '*'.
func globEscape(p string) string {
	var b strings.Builder
	for i, r := range p {
		if strings.ContainsRune(`*?[\`, r) && i != len(p)-1 {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
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

// Commit flushes, fsyncs and puts the file at the target path: an
// unnamed temp is linked under a fresh temp name and renamed over the
// target (link cannot replace a file), a named one is renamed.
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
		} else if s.tmp == "" {
			s.err = s.link()
		}
	}
	if s.err != nil {
		s.Abort()
		return s.err
	}
	s.done = true
	err := s.f.Close() // releases the flock of a named temp
	if err == nil {
		err = os.Rename(s.tmp, s.path)
	}
	if err != nil {
		os.Remove(s.tmp)
		return fmt.Errorf("writing %s: %w", s.path, err)
	}
	if d, err := os.Open(filepath.Dir(s.path)); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// link gives an unnamed temp a name beside the target.
func (s *Sink) link() error {
	dir := filepath.Dir(s.path)
	for i := 0; ; i++ {
		name := filepath.Join(dir, fmt.Sprintf(".%s.tmp%d-%d", filepath.Base(s.path), os.Getpid(), i))
		err := unix.Linkat(unix.AT_FDCWD, fmt.Sprintf("/proc/self/fd/%d", s.f.Fd()), unix.AT_FDCWD, name, unix.AT_SYMLINK_FOLLOW)
		if err == nil {
			s.tmp = name
			return nil
		}
		if !errors.Is(err, unix.EEXIST) || i > 100 {
			return fmt.Errorf("writing %s: linking the temp file: %w", s.path, err)
		}
	}
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
	if s.tmp != "" {
		os.Remove(s.tmp)
	}
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
