// Package convert turns training checkpoints (Hugging Face safetensors
// directories and llama2.c legacy .bin files) into .cflow and .vflow files
// whose tiles sit in the order the runtime reads them.
//
// The pipeline is: open the checkpoint lazily over a file mapping
// (checkpoint.go, safetensors.go, llama2c.go), map config.json onto a
// GlobalHeader and metadata (config.go, arch.go), decide which NUMA node owns
// which rows and columns of every matrix (numa.go), enumerate tiles in
// execution-plan order (layout.go), then quantize on every core while one
// goroutine writes the tiles in order (emit.go). Output goes to a temporary
// file that is renamed only after the writer closed it cleanly (convert.go).
package convert
