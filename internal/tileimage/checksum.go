package tileimage

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"

	"github.com/cflow-dev/cflow/quant"
)

// LayerSums are the per-layer weight checksums stored under
// KeyLayerChecksums: entry l (l = NumLayers for the vocabulary) is the sum,
// modulo 2⁶⁴, of FNV-1a-64 over each of the layer's tiles as stored
// (16-byte header, scales, data). A sum of per-tile hashes does not depend
// on the order tiles are written or walked, so one definition serves the
// layer-major .cflow and the stage-major .vflow. Without it a flipped bit in
// weight data is invisible to inspect --check: every byte of a Q4 tile is a
// valid code.
type LayerSums []uint64

// NewLayerSums has one zero entry per layer plus the vocabulary entry.
func NewLayerSums(layers int) LayerSums { return make(LayerSums, layers+1) }

// AddTile folds one stored tile (its bytes in parts, in file order) into
// its layer's entry; out-of-range layers are ignored (the format checks
// reject them elsewhere).
func (s LayerSums) AddTile(layer int, parts ...[]byte) {
	h := fnv.New64a()
	for _, p := range parts {
		h.Write(p)
	}
	s.Add(layer, h.Sum64())
}

// Add folds a tile's hash (TileSum) into its layer's entry; out-of-range
// layers are ignored as by AddTile.
func (s LayerSums) Add(layer int, sum uint64) {
	if layer >= 0 && layer < len(s) {
		s[layer] += sum
	}
}

// TileSum is the hash a stored tile adds to its layer's entry: FNV-1a-64
// over its header as th encodes it, its scales and its data. A writer fed
// many tiles computes it off its own goroutine (WriteTileSum), since the
// hash is as costly as copying the bytes and the sums do not depend on the
// order tiles are hashed in.
func TileSum(th *TileHeader, t *quant.Tile) uint64 {
	var b [TileHeaderSize]byte
	th.Put(b[:])
	h := fnv.New64a()
	h.Write(b[:])
	h.Write(t.Scales)
	h.Write(t.Data)
	return h.Sum64()
}

// TileSums sets out[i] to TileSum(&ths[i], &ts[i]) for every tile. Runs of
// four tiles of one size (a stripe's tiles, as a converter quantizes them)
// are hashed in one pass with their four FNV chains interleaved: a chain
// waits on its multiply at every byte, so four side by side run about
// four times as fast as one after another.
func TileSums(ths []TileHeader, ts []quant.Tile, out []uint64) {
	for i := 0; i < len(ts); {
		if i+4 > len(ts) || !sameSizes(ts[i:i+4]) {
			out[i] = TileSum(&ths[i], &ts[i])
			i++
			continue
		}
		var hb [4][TileHeaderSize]byte
		h := [4]uint64{fnvOffset, fnvOffset, fnvOffset, fnvOffset}
		for k := range hb {
			ths[i+k].Put(hb[k][:])
		}
		fnv4(&h, hb[0][:], hb[1][:], hb[2][:], hb[3][:])
		fnv4(&h, ts[i].Scales, ts[i+1].Scales, ts[i+2].Scales, ts[i+3].Scales)
		fnv4(&h, ts[i].Data, ts[i+1].Data, ts[i+2].Data, ts[i+3].Data)
		copy(out[i:i+4], h[:])
		i += 4
	}
}

const (
	fnvOffset = 14695981039346656037 // FNV-1a-64's offset basis (hash/fnv)
	fnvPrime  = 1099511628211
)

func sameSizes(ts []quant.Tile) bool {
	for _, t := range ts[1:] {
		if len(t.Scales) != len(ts[0].Scales) || len(t.Data) != len(ts[0].Data) {
			return false
		}
	}
	return true
}

// fnv4 continues four FNV-1a-64 chains over four slices of a's length.
func fnv4(h *[4]uint64, a, b, c, d []byte) {
	b, c, d = b[:len(a)], c[:len(a)], d[:len(a)]
	h0, h1, h2, h3 := h[0], h[1], h[2], h[3]
	for i := range a {
		h0 = (h0 ^ uint64(a[i])) * fnvPrime
		h1 = (h1 ^ uint64(b[i])) * fnvPrime
		h2 = (h2 ^ uint64(c[i])) * fnvPrime
		h3 = (h3 ^ uint64(d[i])) * fnvPrime
	}
	h[0], h[1], h[2], h[3] = h0, h1, h2, h3
}

// Bytes encodes the sums as the metadata value (little-endian u64 each).
func (s LayerSums) Bytes() []byte {
	b := make([]byte, 0, 8*len(s))
	for _, v := range s {
		b = binary.LittleEndian.AppendUint64(b, v)
	}
	return b
}

// StoredSums decodes KeyLayerChecksums; ok is false for files written before
// checksums existed, which still load (inspect --check says so).
func StoredSums(md *Metadata) (s LayerSums, ok bool) {
	b := md.Bytes(KeyLayerChecksums)
	if b == nil {
		return nil, false
	}
	s = make(LayerSums, len(b)/8)
	for i := range s {
		s[i] = binary.LittleEndian.Uint64(b[8*i:])
	}
	return s, true
}

// checkSumsShape is CheckMetadata's rule for the table: 8 bytes per layer
// plus the vocabulary entry.
func checkSumsShape(h *Header, md *Metadata) error {
	if b := md.Bytes(KeyLayerChecksums); b != nil && len(b) != 8*(int(h.NumLayers)+1) {
		return fmt.Errorf("metadata %s: %d bytes, want %d (8 per layer and the vocabulary)", KeyLayerChecksums, len(b), 8*(int(h.NumLayers)+1))
	}
	return nil
}

// ReserveSums puts a zero checksum table for layers into md, marshals it,
// and returns the marshalled section and the table's offset inside it, so
// a writer can write the section first and back-patch the sums at Close.
func ReserveSums(md *Metadata, layers int) (mb []byte, at int, err error) {
	md.SetBytes(KeyLayerChecksums, NewLayerSums(layers).Bytes())
	mb, err = md.MarshalBinary()
	if err != nil {
		return nil, 0, err
	}
	return mb, valueOffset(mb, KeyLayerChecksums), nil
}

// valueOffset walks a marshalled section to the value of key (-1 if absent).
func valueOffset(mb []byte, key string) int {
	le := binary.LittleEndian
	n := int(le.Uint32(mb[8:]))
	off := 12
	for i := 0; i < n; i++ {
		kl := int(le.Uint16(mb[off:]))
		k := string(mb[off+2 : off+2+kl])
		off += 2 + kl + 1
		vl := int(le.Uint32(mb[off:]))
		off += 4
		if k == key {
			return off
		}
		off += vl
	}
	return -1
}

// verifySums compares the sums a walk computed with the stored table.
func verifySums(md *Metadata, got LayerSums, errOff int64) error {
	want, ok := StoredSums(md)
	if !ok {
		return nil
	}
	for l := range want {
		if l < len(got) && got[l] != want[l] {
			what := fmt.Sprintf("layer %d", l)
			if l == len(want)-1 {
				what = "the vocabulary entry"
			}
			return errAt(errOff, "%s: weight checksum %016x, the file's table says %016x (weight bytes changed after writing)", what, got[l], want[l])
		}
	}
	return nil
}
