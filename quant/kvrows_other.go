//go:build noasm || !amd64

package quant

// f16RowsPath: without assembly every path runs DotF16Rows's Go loop.
func f16RowsPath(*Kernel) f16RowsFunc { return nil }

// q8AccPath: without assembly every path runs AccumQ8Rows's Go loop.
func q8AccPath(*Kernel) q8AccFunc { return nil }
