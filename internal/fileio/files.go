package fileio

import (
	"fmt"
	"io"
	"os"
)

// MaxArgFileBytes bounds a file named on the command line that is read
// whole (a trace, a text, a tokenizer.json): 256 MiB, far above any real
// trace or evaluation text, so /dev/zero or a mistyped device fails at once
// with a clear error instead of growing without bound.
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
