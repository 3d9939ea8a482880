package main

import (
	"fmt"

	"github.com/cflow-dev/cflow/analyze"
)

// analyzeFile is filled in once the readers land.
func analyzeFile(path string) (*analyze.Report, error) {
	return nil, fmt.Errorf("analyze %s: file analysis not available yet", path)
}
