// Package archspec states what a model computes, apart from how a file stores
// it: the combine styles and their facts (what each stream reads, which
// norms a router has, where deferred experts join), the computation
// features of the Hugging Face families and the names of their per-layer
// vectors and routing rules, the matrix roles (MatrixID) and the model's
// geometry (every matrix's shape per layer, with mixed head dims and KV
// heads). The formats (cflowfmt, vflowfmt), the converter, the engine, gguf
// export and analyze ask it, so a new style, feature or shape rule is
// stated once, here, and no package compares against a style it does not
// own.
package archspec
