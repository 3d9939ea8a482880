package main

import (
	"github.com/cflow-dev/cflow/analyze"
	"github.com/cflow-dev/cflow/vflowfmt"
)

// analyzeFile costs a real file: its tiles' on-disk bytes per stream.
func analyzeFile(path string) (*analyze.Report, error) {
	m, err := vflowfmt.OpenModel(path)
	if err != nil {
		return nil, err
	}
	defer m.Close()
	return analyze.Compute(analyze.FromModel(m))
}
