package convert

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/nlpodyssey/safetensors"
)

// maxSTHeader bounds the JSON header so a corrupt length cannot make us
// allocate gigabytes; the reference implementation uses the same limit.
const maxSTHeader = 100_000_000

type stEntry struct {
	Dtype       string    `json:"dtype"`
	Shape       []int64   `json:"shape"`
	DataOffsets [2]uint64 `json:"data_offsets"`
}

// parseSafetensors validates a whole safetensors file held in b (normally a
// mapping) and returns its tensors. Every failure names the file and the
// byte offset or tensor, because "invalid header" on a 5 GB shard is no help.
// The header is checked here first, then handed to nlpodyssey/safetensors,
// whose views alias b.
func parseSafetensors(file string, b []byte) (map[string]*tensor, error) {
	size := uint64(len(b))
	if size < 8 {
		return nil, fmt.Errorf("%s: truncated safetensors: %d bytes, the header length alone needs 8", file, size)
	}
	n := binary.LittleEndian.Uint64(b)
	if n > maxSTHeader {
		return nil, fmt.Errorf("%s: offset 0: header length %d exceeds the %d-byte limit", file, n, maxSTHeader)
	}
	if n > size-8 {
		return nil, fmt.Errorf("%s: truncated safetensors: header length %d at offset 0 runs past the end of the file (%d bytes)", file, n, size)
	}
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(b[8 : 8+n]))
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("%s: offset 8: header is not a JSON object: %v", file, err)
	}
	if k, dup := duplicateKey(b[8 : 8+n]); dup {
		return nil, fmt.Errorf("%s: offset 8: header names key %q twice; refusing to guess which one is meant", file, k)
	}
	dataLen := size - 8 - n
	type named struct {
		name string
		e    stEntry
	}
	var ents []named
	for name, msg := range raw {
		if name == "__metadata__" {
			continue
		}
		var e stEntry
		if err := json.Unmarshal(msg, &e); err != nil {
			return nil, fmt.Errorf("%s: tensor %s: bad header entry: %v", file, name, err)
		}
		if e.DataOffsets[1] < e.DataOffsets[0] {
			return nil, fmt.Errorf("%s: tensor %s: data_offsets [%d, %d] are reversed", file, name, e.DataOffsets[0], e.DataOffsets[1])
		}
		if e.DataOffsets[1] > dataLen {
			return nil, fmt.Errorf("%s: truncated safetensors: tensor %s data_offsets end %d (file offset %d) is past the end of the file (%d bytes)",
				file, name, e.DataOffsets[1], 8+n+e.DataOffsets[1], size)
		}
		ents = append(ents, named{name, e})
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].e.DataOffsets[0] < ents[j].e.DataOffsets[0] })
	st, err := safetensors.Deserialize(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", file, err)
	}
	out := make(map[string]*tensor, len(ents))
	var scan []*tensor
	for _, ne := range ents {
		view, ok := st.Tensor(ne.name)
		if !ok {
			return nil, fmt.Errorf("%s: tensor %s: listed in the header but not found by the reader", file, ne.name)
		}
		var dt dtype
		switch view.DType() {
		case safetensors.F32:
			dt = dtF32
		case safetensors.F16:
			dt = dtF16
		case safetensors.BF16:
			dt = dtBF16
		default:
			// Only fail when the tensor is used: checkpoints may carry
			// integer buffers (e.g. position ids) the converter never reads.
			out[ne.name] = &tensor{name: ne.name, file: file, dt: 255, shape: []int{}}
			out[ne.name].unsupported = view.DType().String()
			continue
		}
		shape := make([]int, len(view.Shape()))
		for i, s := range view.Shape() {
			if s > 1<<40 {
				return nil, fmt.Errorf("%s: tensor %s: dimension %d of %d is absurd", file, ne.name, i, s)
			}
			shape[i] = int(s)
		}
		t, err := newTensor(ne.name, file, dt, shape, view.Data())
		if err != nil {
			if len(shape) > 2 {
				// Same policy as dtypes: refuse only if used.
				out[ne.name] = &tensor{name: ne.name, file: file, dt: dt, shape: shape, data: view.Data(), unsupported: fmt.Sprintf("%d-D shape %v", len(shape), shape)}
				continue
			}
			return nil, err
		}
		out[ne.name] = t
		scan = append(scan, t)
	}
	// Every value is checked for finiteness, in file order, on every core.
	if err := checkFiniteAll(scan, locateIn(file, b)); err != nil {
		return nil, err
	}
	return out, nil
}

// duplicateKey reports the first key that appears twice in one JSON object
// anywhere in b (encoding/json silently keeps the last one, so a header
// naming a tensor twice would convert whichever came second).
func duplicateKey(b []byte) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	var walk func() (string, bool)
	walk = func() (string, bool) {
		tok, err := dec.Token()
		if err != nil {
			return "", false
		}
		switch tok {
		case json.Delim('{'):
			seen := map[string]bool{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return "", false
				}
				k, _ := kt.(string)
				if seen[k] {
					return k, true
				}
				seen[k] = true
				if d, ok := walk(); ok {
					return d, true
				}
			}
			dec.Token() // '}'
		case json.Delim('['):
			for dec.More() {
				if d, ok := walk(); ok {
					return d, true
				}
			}
			dec.Token() // ']'
		}
		return "", false
	}
	return walk()
}
