package generate

import (
	"os"
	"testing"
)

// mkdirTemp is a directory shared by the tests of this binary (the demo
// model is converted once), removed by TestMain.
func mkdirTemp() (string, error) { return sharedDir, nil }

var sharedDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "cflow-generate-")
	if err != nil {
		panic(err)
	}
	sharedDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
