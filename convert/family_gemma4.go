package convert

import "github.com/cflow-dev/cflow/archspec"

// gemma4 is the report's Gemma-4-style pipeline-native architecture
// (ParallelSqrt2: dense FFN and MoE side by side, summed over √2). Its
// config always carries the global θ and the partial-rotary factor, with
// the spec's defaults. The real Hugging Face Gemma 4 (gemma4_text) differs
// and is not this family: its model_type is not an alias here.
func init() {
	register(&family{name: "gemma4", combine: archspec.ParallelSqrt2, names: nativeNames,
		newConfig: func() familyConfig { return newNativeConfig(1e6, 0.25, true) }})
}
