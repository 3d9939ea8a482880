package tileimage

import (
	"encoding/binary"
	"fmt"
	"math"
	"sort"
)

// MetaType is the type tag of a metadata value; values are on disk.
type MetaType uint8

const (
	MetaU32    MetaType = 0
	MetaF32    MetaType = 1
	MetaString MetaType = 2
	MetaBytes  MetaType = 3
	MetaU32s   MetaType = 4 // little-endian u32 array
	MetaF32s   MetaType = 5 // little-endian f32 array
)

// MetaMagic and MetaVersion open the metadata section.
const MetaMagic = "CFMD"

const MetaVersion = 1

// Well-known metadata keys. What the 88-byte header cannot hold lives here;
// the runtime reads only these names.
const (
	KeyArchitecture    = "general.architecture"    // string: spec architecture name
	KeyName            = "general.name"            // string: free text
	KeyRMSEps          = "norm.rms_eps"            // f32
	KeyRopeTheta       = "rope.theta"              // f32, sliding/uniform layers
	KeyRopeThetaGlobal = "rope.theta_global"       // f32, full layers of mixed models
	KeyRopePartial     = "rope.partial_factor"     // f32, fraction of pairs rotated on full layers
	KeyMergeInterval   = "arch.merge_interval"     // u32, arch1
	KeyBlockIterations = "arch.block_iterations"   // u32, arch5
	KeyLayerKinds      = "attn.layer_kinds"        // bytes, one per layer: 0 full, 1 sliding
	KeyKEqV            = "attn.k_eq_v"             // u32 0/1: full layers use v = k
	KeyTokenizerKind   = "tokenizer.kind"          // string: byte, llama2c, gpt2, hf-bpe, hf
	KeyTokenizerData   = "tokenizer.data"          // bytes: kind-specific payload
	KeyBOS             = "tokenizer.bos_id"        // u32
	KeyEOS             = "tokenizer.eos_id"        // u32
	KeyAddBOS          = "tokenizer.add_bos"       // u32 0/1: prompts start with BOS (tokenizer_config add_bos_token / post-processor)
	KeyEndOfTurn       = "tokenizer.eot_ids"       // u32s: ids generation stops at (EOS, end-of-turn tokens)
	KeyBOSToken        = "tokenizer.bos_token"     // string: BOS text, the chat template's bos_token
	KeyEOSToken        = "tokenizer.eos_token"     // string: EOS text, the chat template's eos_token
	KeyChatTemplate    = "tokenizer.chat_template" // string: Jinja chat template (tokenizer_config.json)
	KeyNUMAPlan        = "numa.plan"               // bytes: JSON shard plan
	KeyExecHeader      = "cflow.exec_header"       // bytes: an 88-byte GlobalHeader (.vflow)
	KeyLayerChecksums  = "check.layer_fnv64a"      // bytes: per-layer weight checksums (checksum.go)
)

type metaValue struct {
	typ MetaType
	raw []byte
}

// Metadata is the typed, versioned key-value section. Keys are unique and
// written in sorted order so files are byte-for-byte reproducible.
type Metadata struct {
	m map[string]metaValue
}

// NewMetadata returns an empty section.
func NewMetadata() *Metadata { return &Metadata{m: map[string]metaValue{}} }

// Clone returns an independent copy, so a writer can add its own keys
// without changing the caller's section.
func (md *Metadata) Clone() *Metadata {
	c := NewMetadata()
	for k, v := range md.m {
		c.m[k] = metaValue{v.typ, append([]byte(nil), v.raw...)}
	}
	return c
}

// Keys lists keys in sorted order (inspect prints them).
func (md *Metadata) Keys() []string {
	ks := make([]string, 0, len(md.m))
	for k := range md.m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// Type returns a key's type tag and whether it exists.
func (md *Metadata) Type(key string) (MetaType, bool) {
	v, ok := md.m[key]
	return v.typ, ok
}

func (md *Metadata) set(key string, t MetaType, raw []byte) { md.m[key] = metaValue{t, raw} }

// SetU32 and the other setters store a typed value, replacing any old one.
func (md *Metadata) SetU32(key string, v uint32) {
	md.set(key, MetaU32, binary.LittleEndian.AppendUint32(nil, v))
}
func (md *Metadata) SetF32(key string, v float32) {
	md.set(key, MetaF32, binary.LittleEndian.AppendUint32(nil, math.Float32bits(v)))
}
func (md *Metadata) SetString(key, v string) { md.set(key, MetaString, []byte(v)) }
func (md *Metadata) SetBytes(key string, v []byte) {
	md.set(key, MetaBytes, append([]byte(nil), v...))
}
func (md *Metadata) SetU32s(key string, v []uint32) {
	b := make([]byte, 0, 4*len(v))
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, x)
	}
	md.set(key, MetaU32s, b)
}
func (md *Metadata) SetF32s(key string, v []float32) {
	b := make([]byte, 0, 4*len(v))
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	md.set(key, MetaF32s, b)
}

func (md *Metadata) get(key string, t MetaType) ([]byte, bool) {
	v, ok := md.m[key]
	if !ok || v.typ != t {
		return nil, false
	}
	return v.raw, true
}

// U32 returns the value or def when absent (or of another type).
func (md *Metadata) U32(key string, def uint32) uint32 {
	if b, ok := md.get(key, MetaU32); ok {
		return binary.LittleEndian.Uint32(b)
	}
	return def
}

// F32 returns the value or def when absent.
func (md *Metadata) F32(key string, def float32) float32 {
	if b, ok := md.get(key, MetaF32); ok {
		return math.Float32frombits(binary.LittleEndian.Uint32(b))
	}
	return def
}

// String returns the value or def when absent.
func (md *Metadata) String(key, def string) string {
	if b, ok := md.get(key, MetaString); ok {
		return string(b)
	}
	return def
}

// Bytes returns the raw value (nil when absent); callers must not modify it.
func (md *Metadata) Bytes(key string) []byte {
	b, _ := md.get(key, MetaBytes)
	return b
}

// U32s returns a decoded copy of a u32 array (nil when absent).
func (md *Metadata) U32s(key string) []uint32 {
	b, ok := md.get(key, MetaU32s)
	if !ok {
		return nil
	}
	out := make([]uint32, len(b)/4)
	for i := range out {
		out[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	return out
}

// F32s returns a decoded copy of an f32 array (nil when absent).
func (md *Metadata) F32s(key string) []float32 {
	b, ok := md.get(key, MetaF32s)
	if !ok {
		return nil
	}
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

// MarshalBinary encodes the section: magic, u32 version, u32 count, then per
// entry u16 key length, key, u8 type, u32 value length, value.
func (md *Metadata) MarshalBinary() ([]byte, error) {
	b := []byte(MetaMagic)
	b = binary.LittleEndian.AppendUint32(b, MetaVersion)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(md.m)))
	for _, k := range md.Keys() {
		v := md.m[k]
		if len(k) > math.MaxUint16 {
			return nil, fmt.Errorf("metadata key of %d bytes is too long", len(k))
		}
		b = binary.LittleEndian.AppendUint16(b, uint16(len(k)))
		b = append(b, k...)
		b = append(b, byte(v.typ))
		b = binary.LittleEndian.AppendUint32(b, uint32(len(v.raw)))
		b = append(b, v.raw...)
	}
	return b, nil
}

// ParseMetadata decodes a section that starts at file offset base; errors
// name the absolute offset. Values are copied out of b.
func ParseMetadata(b []byte, base int64) (*Metadata, error) {
	bad := func(off int, format string, a ...any) error {
		return &FormatError{Offset: base + int64(off), What: "metadata: " + fmt.Sprintf(format, a...)}
	}
	if len(b) < 12 {
		return nil, bad(0, "section of %d bytes is shorter than its 12-byte preamble", len(b))
	}
	if string(b[0:4]) != MetaMagic {
		return nil, bad(0, "bad magic %q", b[0:4])
	}
	if v := binary.LittleEndian.Uint32(b[4:]); v != MetaVersion {
		return nil, bad(4, "version %d, this reader handles %d", v, MetaVersion)
	}
	n := binary.LittleEndian.Uint32(b[8:])
	if int64(n) > int64(len(b)/7) {
		return nil, bad(8, "%d entries cannot fit in %d bytes", n, len(b))
	}
	md := NewMetadata()
	off := 12
	for i := uint32(0); i < n; i++ {
		if len(b)-off < 2 {
			return nil, bad(off, "entry %d truncated", i)
		}
		kl := int(binary.LittleEndian.Uint16(b[off:]))
		off += 2
		if len(b)-off < kl+5 {
			return nil, bad(off, "entry %d key of %d bytes runs past the section", i, kl)
		}
		key := string(b[off : off+kl])
		off += kl
		t := MetaType(b[off])
		vl := int64(binary.LittleEndian.Uint32(b[off+1:]))
		off += 5
		if vl > int64(len(b)-off) {
			return nil, bad(off, "value of %q (%d bytes) runs past the section", key, vl)
		}
		raw := b[off : off+int(vl)]
		switch t {
		case MetaU32, MetaF32:
			if vl != 4 {
				return nil, bad(off, "%q: scalar of %d bytes, want 4", key, vl)
			}
		case MetaU32s, MetaF32s:
			if vl%4 != 0 {
				return nil, bad(off, "%q: array of %d bytes is not a multiple of 4", key, vl)
			}
		case MetaString, MetaBytes:
		default:
			return nil, bad(off-5, "%q: unknown type %d", key, t)
		}
		if _, dup := md.m[key]; dup {
			return nil, bad(off, "duplicate key %q", key)
		}
		// A copy, never an alias of b: metadata is read everywhere
		// (tokenizer, chat template, analyze, engine set-up) outside any
		// GuardFault, so it must survive the file being truncated under
		// its mapping (tokenizer and analyze tests hold this).
		md.set(key, t, append([]byte(nil), raw...))
		off += int(vl)
	}
	if off != len(b) {
		return nil, bad(off, "%d trailing bytes after the last entry", len(b)-off)
	}
	return md, nil
}
