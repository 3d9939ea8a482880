package vflowfmt

import (
	"fmt"
	"io"
	"os"

	"github.com/cflow-dev/cflow/cflowfmt"
)

// Kind is the container format of a file, decided by its magic bytes (never
// by its extension).
type Kind int

const (
	KindUnknown Kind = iota
	KindCflow
	KindVflow
)

// Sniff reads the first 8 bytes of path and names its format.
func Sniff(path string) (Kind, error) {
	f, err := os.Open(path)
	if err != nil {
		return KindUnknown, err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.IsDir() {
		// Reading it fails with EISDIR, which would otherwise be reported
		// as a file too short to hold a magic number.
		return KindUnknown, fmt.Errorf("%s is a directory, not a model file", path)
	}
	var m [8]byte
	if _, err := io.ReadFull(f, m[:]); err != nil {
		return KindUnknown, &cflowfmt.FormatError{File: path, Offset: 0, What: "too short to hold a magic number"}
	}
	switch string(m[:]) {
	case cflowfmt.Magic:
		return KindCflow, nil
	case Magic:
		return KindVflow, nil
	}
	return KindUnknown, &cflowfmt.FormatError{File: path, Offset: 0, What: fmt.Sprintf("magic %q is neither .cflow nor .vflow", m[:])}
}

// OpenModel opens a .cflow or .vflow file, picked by magic, and returns its
// Model: the one call the runtime needs whatever format it is given.
func OpenModel(path string) (*cflowfmt.Model, error) {
	k, err := Sniff(path)
	if err != nil {
		return nil, err
	}
	if k == KindCflow {
		f, err := cflowfmt.Open(path)
		if err != nil {
			return nil, err
		}
		return f.Model, nil
	}
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	return f.Model, nil
}
