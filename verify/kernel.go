package verify

import "github.com/cflow-dev/cflow/quant"

// ensureFloatKernel switches to the fastest available kernel that keeps
// activations in f32 when the active one quantizes them to int8.
func ensureFloatKernel() string {
	if !quant.KernelQuantizesActivations() {
		return quant.KernelName()
	}
	active := quant.KernelName()
	ks := quant.Kernels()
	for i := len(ks) - 1; i >= 0; i-- {
		if quant.SetKernel(ks[i]) == nil && !quant.KernelQuantizesActivations() {
			return ks[i]
		}
	}
	quant.SetKernel(active)
	return active
}
