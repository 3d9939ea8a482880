package engine

import (
	"fmt"
	"strings"

	"github.com/cflow-dev/cflow/quant"
)

// KVType is how a KV cache stores keys or values (Options.CacheK,
// Options.CacheV). The zero value is f32, the exact cache every pinned
// trace is verified with; f16 halves the bytes attention reads per
// position (cflowc's commands default to it, as llama.cpp does) and q8_0
// stores about 0.53 of f16's. docs/TRACE.md says how far each may move a
// trace.
type KVType uint8

const (
	// KVF32 stores float32: attention's products are bit-identical to the
	// f32 tiles the weights use.
	KVF32 KVType = iota
	// KVF16 stores IEEE binary16, rounded to nearest even, read by F16C.
	KVF16
	// KVQ8_0 stores each position's head as Q8_0 groups of 32 (an f16
	// scale and 32 int8), the converter's rounding.
	KVQ8_0
)

// KVTypeNames lists the names ParseKVType accepts, for flag help.
var KVTypeNames = []string{"f32", "f16", "q8_0"}

// String is the type's name as --cache-type-k/-v and llama.cpp spell it.
func (t KVType) String() string {
	if int(t) < len(KVTypeNames) {
		return KVTypeNames[t]
	}
	return fmt.Sprintf("KVType(%d)", t)
}

// ParseKVType reads a cache type name (f32, f16 or q8_0).
func ParseKVType(s string) (KVType, error) {
	for i, n := range KVTypeNames {
		if strings.EqualFold(s, n) {
			return KVType(i), nil
		}
	}
	return 0, fmt.Errorf("unknown KV cache type %q (want %s)", s, strings.Join(KVTypeNames, ", "))
}

// rowBytes is what one head's hd keys or values take in this type.
func (t KVType) rowBytes(hd int) int {
	switch t {
	case KVF16:
		return 2 * hd
	case KVQ8_0:
		return quant.Groups(hd) * (2 + quant.GroupSize)
	}
	return 4 * hd
}

// KVBytesPerPosition is what one more position costs in a sequence's KV
// caches: every pass's KV heads' keys and values in their cache types
// (bench --json's kv_bytes_per_position).
func (e *Engine) KVBytesPerPosition() int64 {
	var n int64
	for p := range e.passes {
		lp := e.layers[p/e.iters]
		n += int64(lp.kvHeads) * int64(e.cacheK.rowBytes(lp.hd)+e.cacheV.rowBytes(lp.hd))
	}
	return n
}

// CacheTypes are the engine's key and value cache types.
func (e *Engine) CacheTypes() (k, v KVType) { return e.cacheK, e.cacheV }
