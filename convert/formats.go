package convert

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/cflow-dev/cflow/cflowfmt"
)

// Format is an output file format, picked from the output's extension.
type Format string

// The two formats the runtime loads.
const (
	FormatCFlow Format = "cflow"
	FormatVFlow Format = "vflow"
)

// FormatOf maps an output path's extension to a format, so users never
// pass the format twice.
func FormatOf(path string) (Format, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".cflow":
		return FormatCFlow, nil
	case ".vflow":
		return FormatVFlow, nil
	}
	return "", fmt.Errorf("%s: output extension must be .cflow or .vflow", path)
}

// fileWriter is a sink that can be committed or discarded; both writers
// stage into a temp file next to the target and rename on Close.
type fileWriter interface {
	sink
	Close() error
	Abort()
}

func createWriter(f Format, path string, s *modelSpec) (fileWriter, error) {
	switch f {
	case FormatCFlow:
		return cflowfmt.Create(path, s.h, s.md)
	case FormatVFlow:
		return createVFlow(path, s)
	}
	return nil, fmt.Errorf("unknown format %q", f)
}
