package cflowfmt

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// CheckOutput is run by every command before it does any work for an
// output path: the path must not be a directory, its directory must exist,
// and it must not be one of the inputs (compared by device and inode, so a
// symlink, a hard link or another spelling of the same file is caught; an
// input directory's files count as inputs). The sink's rename would
// otherwise replace the model being read — or, for a directory, fail only
// after the whole conversion.
func CheckOutput(out string, inputs ...string) error {
	if out == "" {
		return fmt.Errorf("empty output path")
	}
	if st, err := os.Stat(filepath.Dir(out)); err != nil {
		return fmt.Errorf("output %s: %w", out, err)
	} else if !st.IsDir() {
		return fmt.Errorf("output %s: %s is not a directory", out, filepath.Dir(out))
	}
	st, err := os.Stat(out)
	if err != nil {
		return nil // a new file
	}
	if st.IsDir() {
		return fmt.Errorf("output %s is an existing directory; give a file path", out)
	}
	for _, in := range inputs {
		ist, err := os.Stat(in)
		if err != nil {
			continue // the command reports a missing input itself
		}
		if os.SameFile(st, ist) {
			return fmt.Errorf("output %s is the input %s (same file); refusing to overwrite it", out, in)
		}
		if !ist.IsDir() {
			continue
		}
		ents, _ := os.ReadDir(in)
		for _, e := range ents {
			if est, err := os.Stat(filepath.Join(in, e.Name())); err == nil && os.SameFile(st, est) {
				return fmt.Errorf("output %s is %s of the input directory (same file); refusing to overwrite it", out, e.Name())
			}
		}
	}
	return nil
}

// MaxArgFileBytes bounds a file named on the command line that is read
// whole (a trace, a text): 256 MiB, far above any real trace or evaluation
// text, so /dev/zero or a mistyped device fails at once with a clear error
// instead of growing without bound.
const MaxArgFileBytes = 256 << 20

// ReadFileLimit reads path whole, refusing more than limit bytes (it reads
// at most limit+1, so an endless source costs bounded memory and time).
func ReadFileLimit(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.IsDir() {
		return nil, fmt.Errorf("%s is a directory", path)
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s: larger than %d MiB; refusing to read it whole", path, limit>>20)
	}
	return b, nil
}

// WriteFileAtomic writes b to path through a Sink: the file appears whole
// or not at all (small outputs such as a synthesized config.json get the
// same guarantee as models).
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
