package gguf

import (
	"fmt"
	"io"
	"math"
	"os"
	"sort"

	"github.com/cflow-dev/cflow/internal/fileio"
)

// FormatError is a malformed, truncated or hostile GGUF: Off is the byte
// offset of the field at fault, so a file can be inspected where the reader
// stopped (as debug/elf's FormatError does).
type FormatError struct {
	Off int64
	Msg string
}

func (e *FormatError) Error() string { return fmt.Sprintf("gguf: offset %d: %s", e.Off, e.Msg) }

// File is a parsed GGUF (v2 or v3): its metadata in file order, its tensor
// infos in file order and where their bytes lie. Parsing checks every count,
// length, offset and size against the file's size before it is used, so a
// File's tensors always lie inside the file, aligned, and do not overlap.
type File struct {
	Version   uint32
	Alignment int64 // general.alignment, or GGUF's default 32
	// DataOffset is where the tensor data section starts (aligned).
	DataOffset int64
	Size       int64
	KVs        []KV
	Tensors    []TensorInfo

	r      io.ReaderAt
	mapped []byte // the whole file when Open mapped it
	unmap  func() error
	kvs    map[string]int
	byName map[string]int
}

// TensorInfo is one tensor's header entry. Dims are ggml's ne: Dims[0] is
// the row length (the fastest-varying axis).
type TensorInfo struct {
	Name string
	Dims []uint64
	Type GGMLType
	// Offset is relative to the data section, as on disk; Size is the
	// tensor's byte size (rows × RowBytes(Dims[0])).
	Offset uint64
	Size   int64
	// HeaderOff is where the tensor's info starts in the file, for errors.
	HeaderOff int64
}

// Elements is the tensor's element count.
func (t *TensorInfo) Elements() uint64 {
	n := uint64(1)
	for _, d := range t.Dims {
		n *= d
	}
	return n
}

// Limits GGUF itself sets (ggml.h), refused above them as llama.cpp does.
const (
	maxDims    = 4  // GGML_MAX_DIMS
	maxNameLen = 63 // GGML_MAX_NAME - 1
	// DefaultAlignment is the data alignment of a file without
	// general.alignment.
	DefaultAlignment = 32
)

// Open maps path and parses it. Tensor data (TensorData) aliases the
// mapping, so a model larger than memory is paged in as it is read; Close
// unmaps it.
func Open(path string) (*File, error) {
	b, _, unmap, err := fileio.MapFile(path)
	if err != nil {
		return nil, err
	}
	f, err := Parse(b)
	if err != nil {
		_ = unmap()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	f.unmap = unmap
	return f, nil
}

// Parse parses a GGUF held in memory; TensorData aliases b.
func Parse(b []byte) (*File, error) {
	f, err := NewFile(bytesReaderAt(b), int64(len(b)))
	if err != nil {
		return nil, err
	}
	f.mapped = b
	return f, nil
}

// NewFile parses the GGUF of size bytes that r holds. Only the header is
// read; TensorData reads a tensor's bytes on demand.
func NewFile(r io.ReaderAt, size int64) (*File, error) {
	c := &cursor{r: r, size: size}
	f := &File{Size: size, r: r, Alignment: DefaultAlignment, kvs: map[string]int{}, byName: map[string]int{}}
	if err := f.readHeader(c); err != nil {
		return nil, err
	}
	if err := f.readKVs(c); err != nil {
		return nil, err
	}
	if err := f.readTensorInfos(c); err != nil {
		return nil, err
	}
	if err := f.placeData(c.off); err != nil {
		return nil, err
	}
	return f, nil
}

// Close releases the mapping Open made; a File from Parse or NewFile has
// none.
func (f *File) Close() error {
	if f.unmap == nil {
		return nil
	}
	err := f.unmap()
	f.unmap, f.mapped = nil, nil
	return err
}

// Tensor returns the named tensor's info.
func (f *File) Tensor(name string) (*TensorInfo, bool) {
	i, ok := f.byName[name]
	if !ok {
		return nil, false
	}
	return &f.Tensors[i], true
}

// TensorData returns t's bytes: a slice of the mapping for Open and Parse
// (read-only), a fresh copy read from the ReaderAt for NewFile.
func (f *File) TensorData(t *TensorInfo) ([]byte, error) {
	lo := f.DataOffset + int64(t.Offset)
	if f.mapped != nil {
		return f.mapped[lo : lo+t.Size : lo+t.Size], nil
	}
	b := make([]byte, t.Size)
	if _, err := f.r.ReadAt(b, lo); err != nil {
		return nil, fmt.Errorf("gguf: tensor %s: %w", t.Name, err)
	}
	return b, nil
}

func (f *File) readHeader(c *cursor) error {
	magic, err := c.read(4, "magic")
	if err != nil {
		return err
	}
	if string(magic) != Magic {
		return &FormatError{0, fmt.Sprintf("not a GGUF file (magic %q)", magic)}
	}
	if f.Version, err = c.u32("version"); err != nil {
		return err
	}
	switch {
	case f.Version&0xFFFF == 0 && f.Version != 0:
		return &FormatError{4, fmt.Sprintf("version %#x: a big-endian GGUF, which this reader does not read", f.Version)}
	case f.Version == 1:
		return &FormatError{4, "GGUF v1 is not supported (v2 and v3 are)"}
	case f.Version != 2 && f.Version != 3:
		return &FormatError{4, fmt.Sprintf("unsupported GGUF version %d (v2 and v3 are)", f.Version)}
	}
	return nil
}

// minKVBytes and minTensorInfoBytes are the smallest on-disk sizes of one
// metadata entry (1-byte key, tag, 1-byte value) and one tensor info (empty
// name, no dims, type, offset): the counts are bounded by what the rest of
// the file can hold before anything is allocated for them.
const (
	minKVBytes         = 8 + 1 + 4 + 1
	minTensorInfoBytes = 8 + 4 + 4 + 8
)

func (f *File) readKVs(c *cursor) error {
	nt, err := c.u64("tensor count")
	if err != nil {
		return err
	}
	ntOff := c.off - 8
	nkv, err := c.u64("metadata count")
	if err != nil {
		return err
	}
	if nkv > uint64(c.left()/minKVBytes) {
		return &FormatError{c.off - 8, fmt.Sprintf("%d metadata entries cannot fit in the %d bytes left", nkv, c.left())}
	}
	f.KVs = make([]KV, 0, nkv)
	for i := uint64(0); i < nkv; i++ {
		off := c.off
		key, err := c.str("metadata key")
		if err != nil {
			return err
		}
		if key == "" {
			return &FormatError{off, fmt.Sprintf("metadata entry %d has an empty key", i)}
		}
		if _, dup := f.kvs[key]; dup {
			return &FormatError{off, fmt.Sprintf("duplicate metadata key %q", key)}
		}
		kv := KV{Key: key, Off: off}
		if kv.Value, err = c.value(key); err != nil {
			return err
		}
		f.kvs[key] = len(f.KVs)
		f.KVs = append(f.KVs, kv)
	}
	if kv := f.Lookup(KeyAlignment); kv != nil {
		a, ok := kv.Value.v.(uint32)
		if !ok || kv.Value.Type != TypeUint32 {
			return &FormatError{kv.Off, fmt.Sprintf("%s is %s, must be u32", KeyAlignment, kv.Value.TypeName())}
		}
		if a == 0 || a&(a-1) != 0 {
			return &FormatError{kv.Off, fmt.Sprintf("%s %d is not a power of two", KeyAlignment, a)}
		}
		f.Alignment = int64(a)
	}
	if nt > uint64(c.left()/minTensorInfoBytes) {
		return &FormatError{ntOff, fmt.Sprintf("%d tensors cannot fit in the %d bytes left after the metadata", nt, c.left())}
	}
	f.Tensors = make([]TensorInfo, 0, nt)
	return nil
}

// KeyAlignment is the metadata key that sets the data alignment.
const KeyAlignment = "general.alignment"

func (f *File) readTensorInfos(c *cursor) error {
	for i := 0; i < cap(f.Tensors); i++ {
		t := TensorInfo{HeaderOff: c.off}
		var err error
		if t.Name, err = c.str("tensor name"); err != nil {
			return err
		}
		if len(t.Name) > maxNameLen {
			return &FormatError{t.HeaderOff, fmt.Sprintf("tensor name %.80q is %d bytes, over ggml's %d", t.Name, len(t.Name), maxNameLen)}
		}
		if _, dup := f.byName[t.Name]; dup {
			return &FormatError{t.HeaderOff, fmt.Sprintf("duplicate tensor name %q", t.Name)}
		}
		nd, err := c.u32("dimension count")
		if err != nil {
			return err
		}
		if nd > maxDims {
			return &FormatError{c.off - 4, fmt.Sprintf("tensor %s has %d dimensions, over ggml's %d", t.Name, nd, maxDims)}
		}
		t.Dims = make([]uint64, nd)
		elems := uint64(1)
		for j := range t.Dims {
			if t.Dims[j], err = c.u64("dimension"); err != nil {
				return err
			}
			if t.Dims[j] > math.MaxInt64 {
				return &FormatError{c.off - 8, fmt.Sprintf("tensor %s dimension %d is %d, negative as ggml's int64", t.Name, j, int64(t.Dims[j]))}
			}
			if t.Dims[j] != 0 && elems > math.MaxInt64/t.Dims[j] {
				return &FormatError{c.off - 8, fmt.Sprintf("tensor %s has absurd dimensions %v: the element count overflows", t.Name, t.Dims[:j+1])}
			}
			elems *= t.Dims[j]
		}
		typ, err := c.u32("tensor type")
		if err != nil {
			return err
		}
		t.Type = GGMLType(typ)
		ti, ok := t.Type.info()
		if !ok {
			return &FormatError{c.off - 4, fmt.Sprintf("tensor %s has unknown ggml type %d", t.Name, typ)}
		}
		row := uint64(1)
		if nd > 0 {
			row = t.Dims[0]
		}
		if row%uint64(ti.block) != 0 {
			return &FormatError{c.off - 4, fmt.Sprintf("tensor %s: rows of %d elements are not whole %s blocks of %d", t.Name, row, ti.name, ti.block)}
		}
		// elems/block blocks of size bytes; elems < 2^63 and size ≤ 292,
		// so the product is bounded by the file size check that follows.
		blocks := elems / uint64(ti.block)
		if blocks > uint64(f.Size)/uint64(ti.size)+1 {
			return &FormatError{t.HeaderOff, fmt.Sprintf("tensor %s of %v %s is larger than the %d-byte file", t.Name, t.Dims, ti.name, f.Size)}
		}
		t.Size = int64(blocks * uint64(ti.size))
		if t.Offset, err = c.u64("tensor offset"); err != nil {
			return err
		}
		f.byName[t.Name] = len(f.Tensors)
		f.Tensors = append(f.Tensors, t)
	}
	return nil
}

// placeData aligns the data section after the header ending at end and
// checks every tensor lies inside the file, aligned, with no two sharing a
// byte.
func (f *File) placeData(end int64) error {
	f.DataOffset = end
	if len(f.Tensors) == 0 {
		return nil
	}
	f.DataOffset = (end + f.Alignment - 1) / f.Alignment * f.Alignment
	if f.DataOffset > f.Size {
		return &FormatError{end, fmt.Sprintf("the data section would start at %d, past the end of the %d-byte file", f.DataOffset, f.Size)}
	}
	room := uint64(f.Size - f.DataOffset)
	order := make([]int, len(f.Tensors))
	for i := range order {
		t := &f.Tensors[i]
		order[i] = i
		if t.Offset%uint64(f.Alignment) != 0 {
			return &FormatError{t.HeaderOff, fmt.Sprintf("tensor %s data offset %d is not a multiple of the alignment %d", t.Name, t.Offset, f.Alignment)}
		}
		if t.Offset > room || uint64(t.Size) > room-t.Offset {
			return &FormatError{t.HeaderOff, fmt.Sprintf("tensor %s (%d bytes at data offset %d) runs past the end of the file (%d data bytes)", t.Name, t.Size, t.Offset, room)}
		}
	}
	sort.Slice(order, func(a, b int) bool { return f.Tensors[order[a]].Offset < f.Tensors[order[b]].Offset })
	for k := 1; k < len(order); k++ {
		p, t := &f.Tensors[order[k-1]], &f.Tensors[order[k]]
		if p.Offset+uint64(p.Size) > t.Offset {
			return &FormatError{t.HeaderOff, fmt.Sprintf("tensor %s at data offset %d overlaps tensor %s (%d bytes at %d)", t.Name, t.Offset, p.Name, p.Size, p.Offset)}
		}
	}
	return nil
}

// IsGGUF reports whether path is a GGUF file (by its magic), so a command
// taking model files can tell one from a .cflow or .vflow.
func IsGGUF(path string) bool {
	fh, err := os.Open(path)
	if err != nil {
		return false
	}
	defer fh.Close()
	var b [4]byte
	_, err = io.ReadFull(fh, b[:])
	return err == nil && string(b[:]) == Magic
}
