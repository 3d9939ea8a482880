package convert

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/vflowfmt"
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

func createWriter(f Format, path string, s *modelSpec) (sink, error) {
	switch f {
	case FormatCFlow:
		w, err := cflowfmt.Create(path, s.h, s.md)
		if err != nil {
			return nil, err
		}
		return cflowSink{w}, nil
	case FormatVFlow:
		w, err := vflowfmt.Create(path, s.h, s.md)
		if err != nil {
			return nil, err
		}
		return vflowSink{w}, nil
	}
	return nil, fmt.Errorf("unknown format %q", f)
}

// cflowSink maps region ops onto the .cflow writer's slots.
type cflowSink struct{ *cflowfmt.Writer }

func (w cflowSink) begin(o *op) error {
	switch o.kind {
	case opBeginSlot:
		return w.BeginSlot(o.layer, o.slot)
	case opEndSlot:
		return w.EndSlot()
	case opBeginExpert:
		return w.BeginExpert(o.expert)
	}
	return fmt.Errorf("internal: op %d in a .cflow layout", o.kind)
}

// vflowSink maps region ops onto the .vflow writer's stages.
type vflowSink struct{ *vflowfmt.Writer }

func (w vflowSink) begin(o *op) error {
	switch o.kind {
	case opBeginStage:
		return w.BeginGroupStage(o.layer, o.slot)
	case opBeginVocab:
		return w.BeginVocab(o.slot)
	case opBeginExpert:
		return w.BeginExpert(o.layer, o.expert)
	case opMark:
		return nil
	}
	return fmt.Errorf("internal: op %d in a .vflow layout", o.kind)
}
