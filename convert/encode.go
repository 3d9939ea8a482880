package convert

import "github.com/cflow-dev/cflow/quant"

// encodeTile quantizes w (rows×cols, row stride cols) into t's buffers.
func encodeTile(t *quant.Tile, w []float32) { quant.EncodeInto(t, w, t.Cols) }
