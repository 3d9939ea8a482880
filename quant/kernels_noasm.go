//go:build noasm || !amd64

package quant

// archKernels adds nothing: without assembly the scalar oracle is the only
// path.
func archKernels(CPUFeatures) []*Kernel { return nil }
