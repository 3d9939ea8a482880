package fileio

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// Sink is the streaming, all-or-nothing output every writer uses (.cflow,
// .vflow, GGUF, safetensors, traces, profiles, SVGs): bytes go through a
// buffer into a temp file in the target's directory, which appears at the
// target path only at Commit. Abort, or any failure, removes it, so a
// failed command leaves nothing. Memory is the buffer, never the model.
//
// The target is what Target resolves: a symlink is followed, so the link
// stays and the file it names is replaced whole; an existing path that is
// not a regular file (a FIFO, a device node, a socket, anything under
// /proc or /sys) is refused before a byte is written and left untouched.
//
// The temp file is unnamed where the kernel allows (O_TMPFILE, linked at
// Commit), so a process killed by any signal — SIGKILL included — leaves
// no file behind. Elsewhere it is a named ".<base>.tmp*" file held under an
// exclusive flock while it is written; CreateSink removes such files whose
// lock is free (their writer died), so the next run to the same path
// cleans up after a killed one without touching a live concurrent writer.
//
// Every error a Sink returns is an *OutputError.
type Sink struct {
	name string // the path as given, for errors
	path string // the resolved target
	f    *os.File
	tmp  string // the named temp file; "" while unnamed (O_TMPFILE)
	w    *bufio.Writer
	off  int64
	err  error
	done bool
	wb   writeback
}

const sinkBuffer = 1 << 20

// CreateSink opens the temp file for path in the directory of path's
// target (Target). A directory, a FIFO, a device or a socket at path is
// refused here, before any byte is written.
func CreateSink(path string) (*Sink, error) {
	return createSink(path, true)
}

func createSink(path string, unnamed bool) (*Sink, error) {
	target, err := Target(path)
	if err != nil {
		return nil, err
	}
	s := &Sink{name: path, path: target}
	dir := filepath.Dir(target)
	removeStaleTemps(target)
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		unnamed = false // Commit links the unnamed file through /proc
	}
	if unnamed {
		fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_WRONLY|unix.O_CLOEXEC, 0o600)
		if err == nil {
			s.f = os.NewFile(uintptr(fd), target)
			s.w = bufio.NewWriterSize(s.f, sinkBuffer)
			return s, nil
		}
		// EOPNOTSUPP, EISDIR on old kernels, EINVAL: fall back to a name.
	}
	f, err := os.CreateTemp(dir, tempPattern(target))
	if err != nil {
		return nil, s.wrap(err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, s.wrap(fmt.Errorf("locking %s: %w", f.Name(), err))
	}
	s.f, s.tmp, s.w = f, f.Name(), bufio.NewWriterSize(f, sinkBuffer)
	return s, nil
}

// wrap makes err an *OutputError naming the path as given.
func (s *Sink) wrap(err error) error {
	var oe *OutputError
	if errors.As(err, &oe) {
		return err
	}
	return &OutputError{Path: s.name, Err: err}
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
		s.err = s.wrap(err)
	}
	s.wb.written(s.f, s.off-int64(s.w.Buffered()))
	return n, s.err
}

var zeros [4096]byte

// PadTo writes zero bytes up to the next multiple of align (a power of
// two, at most 4096): the formats align every tile.
func (s *Sink) PadTo(align int64) error {
	if align <= 0 || align > int64(len(zeros)) || align&(align-1) != 0 {
		s.err = s.wrap(fmt.Errorf("padding to %d bytes: want a power of two up to %d", align, len(zeros)))
		return s.err
	}
	_, err := s.Write(zeros[:(align-s.off%align)%align])
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
		s.err = s.wrap(fmt.Errorf("back-patch of %d bytes at %d beyond written size %d", len(p), off, s.off))
		return s.err
	}
	if err := s.w.Flush(); err != nil {
		s.err = s.wrap(err)
		return s.err
	}
	if _, err := s.f.WriteAt(p, off); err != nil {
		s.err = s.wrap(err)
	}
	return s.err
}

// Commit flushes, fsyncs and puts the file at the target path: an
// unnamed temp is linked under a fresh temp name and renamed over the
// target (link cannot replace a file), a named one is renamed. The target
// is checked once more just before the rename, so a FIFO or device that
// appeared there while the file was written is refused, not replaced.
func (s *Sink) Commit() error {
	if s.done {
		return s.wrap(errors.New("sink already closed"))
	}
	s.wb.stop()
	if s.err == nil {
		if err := s.w.Flush(); err != nil {
			s.err = s.wrap(err)
		} else if err := s.f.Chmod(0o644); err != nil {
			s.err = s.wrap(err)
		} else if err := s.f.Sync(); err != nil {
			s.err = s.wrap(err)
		} else if s.tmp == "" {
			s.err = s.link()
		}
	}
	if s.err == nil {
		if t, err := Target(s.name); err != nil {
			s.err = err
		} else if t != s.path {
			s.err = s.wrap(fmt.Errorf("now names %s, not %s as when the output was opened", t, s.path))
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
		return s.wrap(err)
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
			return s.wrap(fmt.Errorf("linking the temp file: %w", err))
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
	s.wb.stop()
	if s.err == nil {
		s.err = s.wrap(errors.New("writer aborted"))
	}
	s.f.Close()
	if s.tmp != "" {
		os.Remove(s.tmp)
	}
}

// WriteFileAtomic writes b to path through a Sink: the file appears whole
// or not at all (small outputs such as a synthesized config.json or an SVG
// get the same guarantee as models).
func WriteFileAtomic(path string, b []byte) error {
	s, err := CreateSink(path)
	if err != nil {
		return err
	}
	if _, err := s.Write(b); err != nil {
		s.Abort()
		return err
	}
	return s.Commit()
}
