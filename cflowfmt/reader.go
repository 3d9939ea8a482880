package cflowfmt

import (
	"encoding/binary"
	"fmt"

	"github.com/cflow-dev/cflow/internal/tileimage"
)

// File is an open .cflow file: the decoded header, metadata and layer table
// plus the Model built from them. Its tiles alias a read-only mapping that
// lives until Close.
type File struct {
	Path   string
	Header Header
	Meta   *Metadata
	// Table is the layer table: NumLayers+1 entries of SlotsPerLayer ranges;
	// the last entry is the vocabulary (SlotEmbed, SlotLMHead, SlotFinalNorm).
	Table [][SlotsPerLayer]Range
	// Experts[l] are layer l's expert ranges from its expert table.
	Experts [][]Range
	Size    int64
	Model   *Model
	data    []byte
}

// Close releases the mapping (also reachable as Model.Close); idempotent.
func (f *File) Close() error { return f.Model.Close() }

// FileModel makes File a tileimage.Image.
func (f *File) FileModel() *Model { return f.Model }

// Open maps a .cflow file read-only, validates header, metadata and layer
// table against the file size, walks every non-expert tile and returns the
// File with its Model. Errors for malformed bytes are *FormatError with
// File and Offset set.
func Open(path string) (*File, error) {
	return tileimage.OpenMapped(path, parse)
}

// OpenBytes parses an image already in memory (tests, fuzzing, and files
// read by other means); name is used in errors. The Model aliases b.
func OpenBytes(b []byte, name string) (*File, error) {
	return tileimage.ParseImage(b, name, parse, func() error { return nil })
}

func errAt(off int64, format string, a ...any) error {
	return &FormatError{Offset: off, What: fmt.Sprintf(format, a...)}
}

// tableEntryOffset is where layer l's entry sits in the layer table.
func (f *File) tableEntryOffset(l int) int64 {
	return int64(f.Header.LayerTableOffset) + int64(l)*SlotsPerLayer*16
}

func parse(data []byte, name string) (*File, error) {
	f := &File{Path: name, data: data, Size: int64(len(data))}
	h := &f.Header
	if err := h.UnmarshalBinary(data); err != nil {
		return nil, err
	}
	if err := h.CheckWidths(); err != nil {
		return nil, err
	}
	size := f.Size
	L := int(h.NumLayers)
	tableSize := int64(L+1) * SlotsPerLayer * 16
	mo, ml := int64(h.MetadataOffset), int64(h.MetadataLength)
	lt := int64(h.LayerTableOffset)
	switch {
	case h.MetadataOffset > uint64(size):
		return nil, errAt(60, "metadata offset %d beyond the %d-byte file", h.MetadataOffset, size)
	case ml > 0 && mo < HeaderSize:
		return nil, errAt(60, "metadata offset %d overlaps the header", mo)
	case ml > size-mo:
		return nil, errAt(68, "metadata (%d bytes at %d) runs past the %d-byte file", ml, mo, size)
	case h.LayerTableOffset > uint64(size) || lt < HeaderSize || lt%TileAlign != 0:
		return nil, errAt(72, "layer table offset %d: want an aligned offset in %d..%d", h.LayerTableOffset, HeaderSize, size)
	case lt+tableSize != size:
		return nil, errAt(min(size, lt+tableSize), "layer table of %d entries at %d ends at %d, file ends at %d (truncated or trailing bytes)", L+1, lt, lt+tableSize, size)
	case ml > 0 && mo+ml > lt:
		return nil, errAt(68, "metadata (%d bytes at %d) overlaps the layer table at %d", ml, mo, lt)
	}
	f.Meta = NewMetadata()
	if ml > 0 {
		md, err := ParseMetadata(data[mo:mo+ml], mo)
		if err != nil {
			return nil, err
		}
		f.Meta = md
	}
	if err := CheckMetadata(h, f.Meta); err != nil {
		return nil, errAt(mo, "%v", err)
	}
	lowest := max(int64(HeaderSize), mo+ml)
	if err := f.readTable(lowest); err != nil {
		return nil, err
	}
	b := tileimage.NewModelBuilder(name, *h, f.Meta)
	for l := 0; l <= L; l++ {
		slots := []int{SlotAttn, SlotDense, SlotMoE}
		if l == L {
			slots = []int{SlotEmbed, SlotLMHead, SlotFinalNorm}
		}
		for _, s := range slots {
			err := f.walkSlot(l, s, func(t MappedTile) error {
				if err := b.Add(t); err != nil {
					return errAt(t.Offset, "%v", err)
				}
				return nil
			})
			if err != nil {
				return nil, err
			}
		}
	}
	m, err := b.Finish(f.tableEntryOffset)
	if err != nil {
		return nil, err
	}
	for l := 0; l < L; l++ {
		m.Layers[l].Streams = f.Table[l]
		m.Layers[l].Experts = f.Experts[l]
	}
	m.ExpertTiles = tileimage.LazyExperts(name, data, &m.Header, func(l int) []Range { return f.Experts[l] })
	f.Model = m
	return f, nil
}

// readTable decodes the layer table and each expert table, checking every
// range lies between lowest and the layer table, is aligned, and overlaps
// no other range; required slots must be non-empty and others empty.
func (f *File) readTable(lowest int64) error {
	h := &f.Header
	L := int(h.NumLayers)
	lt := int64(h.LayerTableOffset)
	le := binary.LittleEndian
	f.Table = make([][SlotsPerLayer]Range, L+1)
	var spans []tileimage.Span
	for l := 0; l <= L; l++ {
		need := requiredSlots(h, l)
		for s := 0; s < SlotsPerLayer; s++ {
			at := f.tableEntryOffset(l) + int64(s)*16
			off, n := le.Uint64(f.data[at:]), le.Uint64(f.data[at+8:])
			switch {
			case n == 0 && off != 0:
				return errAt(at, "layer %d slot %d: empty range with offset %d", l, s, off)
			case n == 0 && need[s]:
				return errAt(at, "layer %d slot %d is empty but the header requires it", l, s)
			case n != 0 && !need[s]:
				return errAt(at, "layer %d slot %d has %d bytes but the header has no such stream", l, s, n)
			case n == 0:
				continue
			case off < uint64(lowest) || off > uint64(lt) || n > uint64(lt)-off:
				return errAt(at, "layer %d slot %d: range %d+%d outside the tile area %d..%d", l, s, off, n, lowest, lt)
			case off%TileAlign != 0:
				return errAt(at, "layer %d slot %d: offset %d not %d-byte aligned", l, s, off, TileAlign)
			}
			r := Range{Offset: int64(off), Length: int64(n)}
			f.Table[l][s] = r
			spans = append(spans, tileimage.Span{Range: r, At: at})
		}
	}
	if err := tileimage.Disjoint(spans); err != nil {
		return err
	}
	f.Experts = make([][]Range, L)
	E := int(h.NumExperts)
	for l := 0; l < L && E > 0; l++ {
		tr, bank := f.Table[l][SlotExpertTable], f.Table[l][SlotExpertBank]
		if tr.Length != int64(E)*16 {
			return errAt(f.tableEntryOffset(l)+SlotExpertTable*16, "layer %d expert table is %d bytes, want %d", l, tr.Length, E*16)
		}
		ex := make([]Range, E)
		var es []tileimage.Span
		for e := 0; e < E; e++ {
			at := tr.Offset + int64(e)*16
			off, n := le.Uint64(f.data[at:]), le.Uint64(f.data[at+8:])
			switch {
			case n == 0:
				return errAt(at, "layer %d expert %d has an empty range", l, e)
			case off < uint64(bank.Offset) || off > uint64(bank.End()) || n > uint64(bank.End())-off:
				return errAt(at, "layer %d expert %d: range %d+%d outside the bank %d+%d", l, e, off, n, bank.Offset, bank.Length)
			case off%TileAlign != 0:
				return errAt(at, "layer %d expert %d: offset %d not aligned", l, e, off)
			}
			ex[e] = Range{Offset: int64(off), Length: int64(n)}
			es = append(es, tileimage.Span{Range: ex[e], At: at})
		}
		if err := tileimage.Disjoint(es); err != nil {
			return err
		}
		f.Experts[l] = ex
	}
	return nil
}

// walkSlot parses every tile of a non-expert slot, checking the slot allows
// its matrix and its layer_id names the entry, and calls fn on each.
func (f *File) walkSlot(l, s int, fn func(MappedTile) error) error {
	r := f.Table[l][s]
	vocab := l == int(f.Header.NumLayers)
	for off := r.Offset; off < r.End(); {
		t, next, err := tileimage.ParseTile(f.data, off, r.End(), &f.Header)
		if err != nil {
			return err
		}
		if !tileimage.SlotAllows(s, vocab, t.Matrix) || int(t.Layer) != l {
			return errAt(off, "%s tile of layer %d in layer %d slot %d", t.Matrix, t.Layer, l, s)
		}
		if err := fn(t); err != nil {
			return err
		}
		off = next
	}
	return nil
}
