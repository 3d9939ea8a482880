// Package convert turns training checkpoints (Hugging Face safetensors
// directories, GGUF files and llama2.c legacy .bin files) into .cflow and
// .vflow files whose tiles sit in the order the runtime reads them. A GGUF
// (source_gguf.go; llama, qwen2, qwen3, qwen3moe with its stacked experts
// split into the bank) is read back into the checkpoint it
// was made from: HF tensor names, a config from its ARCH.* keys (any other
// ARCH.* key refused by name), the llama architecture's permuted q/k rows
// viewed back in split-half order, F32/F16/BF16 tensors as they are, Q8_0
// and Q4_0 blocks copied into tiles of the same codec (--quant must name
// it: nothing is requantized; tensor_blocks.go), other types refused naming
// tensor and type, its tokenizer.ggml keys as the tokenizer.
//
// The pipeline runs one way: open the input as a source (source.go:
// tensors under Hugging Face names over file mappings, a config.json
// document, the tokenizer files; one source_<kind>.go per input kind);
// decode the document once into the family's typed config (config.go: the
// identity keys pick the family, family.go, whose struct is then filled;
// config_base.go); let the family reshape its tensors and map its config
// onto a GlobalHeader and metadata (family_<name>.go, hf.go, spec.go);
// decide which NUMA node owns which rows and columns of every matrix
// (numa.go); enumerate tiles in execution-plan order (layout.go); then
// quantize on every core while one goroutine writes the tiles in order
// (emit.go, encode.go). The format writers stage into a temporary file
// renamed only by a clean Close, so a failed conversion leaves nothing
// behind.
//
// Decisions the spec leaves open, settled here:
//
//   - Tokenizer: a tokenizer.json beside config.json (or named by
//     Options.Tokenizer, which also takes a llama2.c score table) is
//     compiled by tokmeta.Write to kind "hf" (flat form) with
//     tokenizer_config.json's BOS/EOS, add_bos_token, stop ids and chat
//     template; a config "tokenizer" / "tokenizer_type" /
//     "tokenizer_class" value containing "byte" gives kind "byte" with no
//     payload; otherwise the file has no tokenizer keys and the runtime
//     takes token ids. llama2.c files carry none unless Options.Tokenizer
//     names their tokenizer.bin.
//   - Architecture: config "architecture" (pipeline-native) wins, then HF
//     "architectures", then "model_type", then "combine_style". --model
//     names the family when the config names none cflow knows; naming a
//     different one than the config's is an error. A family that needs
//     experts or a dense FFN the checkpoint lacks is an error.
//   - Strictness (strict.go): every checkpoint tensor is consumed by the
//     family's mapping or the conversion fails naming the first one left;
//     every computation-changing config value is implemented or refused by
//     key and value; num_hidden_layers below the checkpoint's layer count,
//     ε ≤ 0 or > 0.01 and θ ≤ 0 are refused.
//   - Experts are optional for the pipeline-native families except arch2_4_*
//     and arch4, which require them, and required for mixtral and
//     qwen3_moe, whose MoE replaces the dense FFN.
//   - K = V sharing (attention_k_eq_v) applies to full-attention layers,
//     whose v_proj is then neither required nor stored.
//   - Tiles are 128×256. Q/K/V (gate/up) interleave by 128-row stripe;
//     under a NUMA plan, replicated members (K/V with fewer KV heads than
//     nodes, or a count the nodes do not share evenly) come first, then
//     each node's stripes, so a node's share is one byte range.
package convert
