package verify

import "github.com/cflow-dev/cflow/quant"

// Kernel is the kernel a replay engine should run (runtime.Options.Kernel):
// the default kernel's float-activation twin. Replay parity (1e-3) leaves
// no room for int8 activation rounding, and recording a trace (run
// --trace-out) keeps activations in f32 for the same reason.
func Kernel() *quant.Kernel { return quant.DefaultKernel().Float() }
