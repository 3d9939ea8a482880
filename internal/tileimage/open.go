package tileimage

import (
	"errors"
	"sync"

	"github.com/cflow-dev/cflow/internal/fileio"
)

// Image is what a format parser returns: a file view that owns a Model.
// Both readers' File types satisfy it, so mapping, naming the file in
// errors and the close-once wiring are written once, here.
type Image interface {
	FileModel() *Model
}

// OpenMapped maps path read-only and parses it. On success the Model's
// Close unmaps (once, however often it is called); on failure the mapping is
// released and a *FormatError (or, for a file truncated under the parse, a
// *fileio.FaultError) names the file.
func OpenMapped[F Image](path string, parse func(data []byte, name string) (F, error)) (F, error) {
	data, mapped, unmap, err := fileio.MapFile(path)
	if err != nil {
		var zero F
		return zero, err
	}
	f, err := ParseImage(data, path, parse, unmap)
	if err != nil {
		unmap()
		return f, err
	}
	if mapped {
		f.FileModel().Image = data
	}
	return f, nil
}

// ParseImage parses an image already in memory (tests, fuzzing, files read
// by other means). release runs once when the Model is closed; the Model
// aliases data.
func ParseImage[F Image](data []byte, name string, parse func(data []byte, name string) (F, error), release func() error) (F, error) {
	var f F
	err := guardFault(name, func() (err error) {
		f, err = parse(data, name)
		return err
	})
	if err != nil {
		if fe, ok := err.(*FormatError); ok {
			fe.File = name
		}
		var zero F
		return zero, err
	}
	var once sync.Once
	var cerr error
	f.FileModel().Close = func() error {
		once.Do(func() { cerr = release() })
		return cerr
	}
	return f, nil
}

// guardFault runs fn, a walk over a mapped image, under fileio.GuardFault
// and reports a read of a vanished page as the readers report every bad
// byte: a *FormatError naming the file (wrapping the *fileio.FaultError).
func guardFault(name string, fn func() error) error {
	err := fileio.GuardFault(name, fn)
	var fault *fileio.FaultError
	if errors.As(err, &fault) {
		return &FormatError{File: fault.File, Offset: fault.Offset, What: fault.Reason(), Err: fault}
	}
	return err
}
