package verify

import "github.com/cflow-dev/cflow/quant"

// ensureFloatKernel is a no-op until quant's dispatcher offers
// activation-quantizing kernels: the scalar oracle keeps activations in f32.
func ensureFloatKernel() string { return quant.KernelName() }
