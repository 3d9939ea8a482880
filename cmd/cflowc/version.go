package main

import (
	"fmt"
	"runtime"

	"github.com/cflow-dev/cflow/quant"
)

// versionString names the kernel the dispatcher chose, because performance
// reports are meaningless without it.
func versionString() string {
	return fmt.Sprintf("%s (%s/%s, %s, kernel %s)", version, runtime.GOOS, runtime.GOARCH, runtime.Version(), quant.DefaultKernel())
}
