package quant

import "github.com/klauspost/cpuid/v2"

// CPUFeatures is what this CPU offers the kernels, asked once at package
// init. It is the project's one CPU-feature check: the kernel list, the fast
// encoders and the bench package's read probe all consult it, so a build
// tag, an emulator or a future CPU cannot make them disagree.
type CPUFeatures struct {
	// Model is the CPU's brand string ("Intel(R) Xeon(R) Platinum 8488C"),
	// so benchmark reports can name the CPU their figures belong to.
	Model string
	// AVX2 with FMA3 and F16C: the avx2 kernels and the fast encoders.
	AVX2 bool
	// AVXVNNI is the VEX-encoded vpdpbusd (Alder Lake, Sapphire Rapids,
	// Zen 5): the avxvnni kernel on CPUs without AVX-512.
	AVXVNNI bool
	// AVX512 is AVX-512 F, BW and VL together: the avx512 kernels.
	AVX512 bool
	// AVX512VNNI is the EVEX vpdpbusd: the vnni kernel.
	AVX512VNNI bool
}

// cpuFeatures is filled at package init and never written again.
var cpuFeatures = detectCPU()

func detectCPU() CPUFeatures {
	c := &cpuid.CPU
	f := CPUFeatures{Model: c.BrandName}
	f.AVX2 = c.Supports(cpuid.AVX2, cpuid.FMA3, cpuid.F16C)
	f.AVXVNNI = f.AVX2 && c.Supports(cpuid.AVXVNNI)
	f.AVX512 = f.AVX2 && c.Supports(cpuid.AVX512F, cpuid.AVX512BW, cpuid.AVX512VL)
	f.AVX512VNNI = f.AVX512 && c.Supports(cpuid.AVX512VNNI)
	return f
}

// CPU reports what this CPU offers, whatever the build: a noasm build has
// only the scalar kernel (Kernels says which paths exist), but the CPU is
// still what it is.
func CPU() CPUFeatures { return cpuFeatures }
