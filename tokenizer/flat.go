package tokenizer

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
)

// The flat form of an HF tokenizer (tokenizer.data for kind "hf"), all
// little-endian:
//
//	"CFTK" u32 version(2)
//	u32 n, pipeline JSON (n bytes)             normalizer, pre-tokenizer, decoder, post ids, model flags
//	u32 added, per added token: u32 id, u8 flags (1 special, 2 lstrip, 4 rstrip, 8 single_word,
//	    16 normalized), u32 length, content bytes
//	    (version 1 had no such section: its added tokens were in the JSON, which parses slower)
//	u32 ids, u32 offsets[ids+1], piece bytes   piece table by id (offsets[ids] bytes)
//	u32 sorted[count], count = u32 before it   ids sorted by piece bytes
//	u32 merges, u64 keys[merges], u64 vals[merges]   (a<<32|b) → (rank<<32|merged), sorted by key
//
// Opening it copies arrays and parses a few kilobytes of JSON: no map of
// 262k pieces is rebuilt, which is what made every start take seconds.
var flatMagic = [4]byte{'C', 'F', 'T', 'K'}

const flatVersion = 2

// Compile turns tokenizer.json (and tokenizer_config.json, nil when
// absent) into the flat form, checking that the runtime can run it.
func Compile(tokenizerJSON, configJSON []byte) ([]byte, error) {
	var cfg *Config
	if configJSON != nil {
		var err error
		if cfg, err = ParseConfig(configJSON); err != nil {
			return nil, err
		}
	}
	p, err := parseTokenizerJSON(tokenizerJSON, cfg)
	if err != nil {
		return nil, err
	}
	if _, err := newHF(p.pipe, p.v, p.m, -1, -1); err != nil {
		return nil, err
	}
	return marshalFlat(p.pipe, p.v, p.m)
}

func marshalFlat(pipe pipeline, v *vocab, m *merges) ([]byte, error) {
	added := pipe.AddedTokens
	pipe.AddedTokens = nil
	pj, err := json.Marshal(pipe)
	if err != nil {
		return nil, err
	}
	le := binary.LittleEndian
	b := make([]byte, 0, 16+len(pj)+4*len(v.off)+len(v.data)+4*len(v.sorted)+16*len(m.keys))
	b = append(b, flatMagic[:]...)
	b = le.AppendUint32(b, flatVersion)
	b = le.AppendUint32(b, uint32(len(pj)))
	b = append(b, pj...)
	b = le.AppendUint32(b, uint32(len(added)))
	for _, a := range added {
		b = le.AppendUint32(b, uint32(a.ID))
		b = append(b, a.flags())
		b = le.AppendUint32(b, uint32(len(a.Content)))
		b = append(b, a.Content...)
	}
	b = le.AppendUint32(b, uint32(v.size()))
	for _, o := range v.off {
		b = le.AppendUint32(b, o)
	}
	b = append(b, v.data...)
	b = le.AppendUint32(b, uint32(len(v.sorted)))
	for _, s := range v.sorted {
		b = le.AppendUint32(b, s)
	}
	b = le.AppendUint32(b, uint32(len(m.keys)))
	for _, k := range m.keys {
		b = le.AppendUint64(b, k)
	}
	for _, x := range m.vals {
		b = le.AppendUint64(b, x)
	}
	return b, nil
}

// flatReader reads the flat form with bounds checks: a truncated or
// corrupt payload is an error naming the offset, never a panic.
type flatReader struct {
	b   []byte
	off int
	err error
}

func (r *flatReader) need(n int, what string) bool {
	if r.err != nil {
		return false
	}
	if n < 0 || len(r.b)-r.off < n {
		r.err = fmt.Errorf("tokenizer data: %s at byte %d runs past the end (%d bytes)", what, r.off, len(r.b))
		return false
	}
	return true
}

func (r *flatReader) u32(what string) uint32 {
	if !r.need(4, what) {
		return 0
	}
	v := binary.LittleEndian.Uint32(r.b[r.off:])
	r.off += 4
	return v
}

func (r *flatReader) bytes(n int, what string) []byte {
	if !r.need(n, what) {
		return nil
	}
	v := r.b[r.off : r.off+n]
	r.off += n
	return v
}

func (r *flatReader) u32s(n int, what string) []uint32 {
	raw := r.bytes(4*n, what)
	if raw == nil {
		return nil
	}
	out := make([]uint32, n)
	for i := range out {
		out[i] = binary.LittleEndian.Uint32(raw[4*i:])
	}
	return out
}

func (r *flatReader) u64s(n int, what string) []uint64 {
	raw := r.bytes(8*n, what)
	if raw == nil {
		return nil
	}
	out := make([]uint64, n)
	for i := range out {
		out[i] = binary.LittleEndian.Uint64(raw[8*i:])
	}
	return out
}

// OpenFlat opens the flat form. bos/eos are the file's special ids (−1
// when none).
func OpenFlat(data []byte, bos, eos int) (*HF, error) {
	r := &flatReader{b: data}
	if magic := r.bytes(4, "magic"); r.err == nil && string(magic) != string(flatMagic[:]) {
		return nil, errors.New("tokenizer data: not a flat tokenizer (bad magic)")
	}
	version := r.u32("version")
	if r.err == nil && version != 1 && version != flatVersion {
		return nil, fmt.Errorf("tokenizer data: version %d, this build reads 1 and %d", version, flatVersion)
	}
	pj := r.bytes(int(r.u32("pipeline length")), "pipeline")
	var added []addedToken
	if version >= 2 {
		na := int(r.u32("added token count"))
		if r.err == nil && na > len(data) {
			return nil, fmt.Errorf("tokenizer data: %d added tokens", na)
		}
		added = make([]addedToken, 0, max(na, 0))
		for i := 0; i < na && r.err == nil; i++ {
			id := r.u32("added token id")
			fl := r.bytes(1, "added token flags")
			content := r.bytes(int(r.u32("added token length")), "added token")
			if r.err == nil {
				added = append(added, addedFromFlags(int(id), fl[0], string(content)))
			}
		}
	}
	n := int(r.u32("id count"))
	if r.err == nil && n > 1<<24 {
		return nil, fmt.Errorf("tokenizer data: %d ids", n)
	}
	v := &vocab{off: r.u32s(n+1, "piece offsets")}
	if r.err == nil {
		for i := 1; i <= n; i++ {
			if v.off[i] < v.off[i-1] {
				return nil, fmt.Errorf("tokenizer data: piece offsets decrease at id %d", i-1)
			}
		}
		if v.off[0] != 0 {
			return nil, errors.New("tokenizer data: first piece offset is not 0")
		}
		v.data = r.bytes(int(v.off[n]), "piece bytes")
	}
	cnt := int(r.u32("sorted count"))
	if r.err == nil && cnt > n {
		return nil, fmt.Errorf("tokenizer data: %d sorted ids for %d ids", cnt, n)
	}
	v.sorted = r.u32s(cnt, "sorted ids")
	nm := int(r.u32("merge count"))
	if r.err == nil && nm > len(data) {
		return nil, fmt.Errorf("tokenizer data: %d merges", nm)
	}
	m := &merges{keys: r.u64s(nm, "merge keys"), vals: r.u64s(nm, "merge values")}
	if r.err != nil {
		return nil, r.err
	}
	for _, s := range v.sorted {
		if int(s) >= n {
			return nil, fmt.Errorf("tokenizer data: sorted id %d outside %d ids", s, n)
		}
	}
	for i, k := range m.keys {
		a, b, merged := int(k>>32), int(uint32(k)), int(uint32(m.vals[i]))
		if a >= n || b >= n || merged >= n || i > 0 && m.keys[i-1] >= k {
			return nil, fmt.Errorf("tokenizer data: merge %d is corrupt", i)
		}
	}
	var pipe pipeline
	if err := json.Unmarshal(pj, &pipe); err != nil {
		return nil, fmt.Errorf("tokenizer data: pipeline: %w", err)
	}
	if version >= 2 {
		pipe.AddedTokens = added
	}
	for _, id := range append(append([]int{}, pipe.Prefix...), pipe.Suffix...) {
		if id < 0 || id >= n {
			return nil, fmt.Errorf("tokenizer data: post-processor id %d outside %d ids", id, n)
		}
	}
	if pipe.Unk >= n {
		return nil, fmt.Errorf("tokenizer data: unk id %d outside %d ids", pipe.Unk, n)
	}
	return newHF(pipe, v, m, bos, eos)
}

// ParseJSON opens tokenizer.json directly (the slow path: seconds for a
// 262k vocabulary). Files converted before the flat form carry this.
func ParseJSON(tokenizerJSON []byte, cfg *Config, bos, eos int) (*HF, error) {
	p, err := parseTokenizerJSON(tokenizerJSON, cfg)
	if err != nil {
		return nil, err
	}
	return newHF(p.pipe, p.v, p.m, bos, eos)
}
