package convert

import "errors"

// createVFlow is wired to vflowfmt's writer once it exists.
func createVFlow(path string, s *modelSpec) (fileWriter, error) {
	return nil, errors.New(path + ": .vflow output is not available in this build yet")
}
