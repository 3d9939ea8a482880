// Package cflowfmt defines the .cflow v5 file format: the 88-byte
// GlobalHeader, 16-byte TileHeaders, the metadata section, the per-layer
// table, and the streaming writer and zero-copy reader. docs/FORMAT.md gives
// every byte; this package is the executable form of that page. It is bytes
// only, as debug/elf is: mapping files, the output sink and fault guards are
// internal/fileio's, and what a model computes (combine styles, features)
// is archspec's.
package cflowfmt
