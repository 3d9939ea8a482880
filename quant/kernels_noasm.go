//go:build noasm || !amd64

package quant

// registerKernels adds nothing: without assembly the scalar oracle is the
// only path.
func registerKernels() {}
