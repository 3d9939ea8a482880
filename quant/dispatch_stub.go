package quant

// KernelName reports the dot-kernel path in use. Placeholder until the SIMD
// dispatcher lands: the scalar oracle is the only path.
func KernelName() string { return "scalar" }
