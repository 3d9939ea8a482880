package vflowfmt

import (
	"encoding/binary"

	"github.com/cflow-dev/cflow/archspec"
	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/internal/tileimage"
)

// File is an open .vflow file: both headers, metadata, groups, the
// vocabulary ranges, the expert index and the Model built from the tiles'
// own headers.
type File struct {
	Path   string
	Header Header          // the 64-byte VFlowHeader
	Exec   cflowfmt.Header // the execution header from metadata (offset fields zero)
	Meta   *cflowfmt.Metadata
	Groups []Group
	Vocab  [3]cflowfmt.Range // SlotEmbed, SlotLMHead, SlotFinalNorm
	// Experts[l][e] is expert e of layer l from the expert index.
	Experts [][]cflowfmt.Range
	Size    int64
	Model   *cflowfmt.Model
	data    []byte
}

// Close releases the mapping; idempotent.
func (f *File) Close() error { return f.Model.Close() }

// FileModel makes File a tileimage.Image.
func (f *File) FileModel() *cflowfmt.Model { return f.Model }

// Open maps a .vflow file read-only and validates it like cflowfmt.Open:
// header, metadata and execution header, group table, vocabulary ranges,
// expert index and every non-expert tile. Errors for malformed bytes are
// *cflowfmt.FormatError with File and Offset set.
func Open(path string) (*File, error) {
	return tileimage.OpenMapped(path, parse)
}

// OpenBytes parses an image already in memory (tests, fuzzing, and files
// read by other means); name is used in errors. The Model aliases b.
func OpenBytes(b []byte, name string) (*File, error) {
	return tileimage.ParseImage(b, name, parse, func() error { return nil })
}

func getRange(b []byte) (uint64, uint64) {
	return binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint64(b[8:])
}

func parse(data []byte, name string) (*File, error) {
	f := &File{Path: name, data: data, Size: int64(len(data))}
	vh := &f.Header
	if err := vh.UnmarshalBinary(data); err != nil {
		return nil, err
	}
	size := uint64(len(data))
	mo, ml := vh.MetadataOffset, uint64(vh.MetadataLength)
	G := uint64(vh.GroupCount)
	gt := vh.GroupTableOffset
	gtLen := G*GroupDescSize + VocabDescSize
	switch {
	case mo < HeaderSize || mo > size || ml > size-mo:
		return nil, errAt(40, "metadata (%d bytes at %d) outside the %d-byte file", ml, mo, size)
	case ml == 0:
		return nil, errAt(36, "no metadata: a .vflow must carry %s", cflowfmt.KeyExecHeader)
	case gt%cflowfmt.TileAlign != 0 || gt < mo+ml || gt > size || gtLen > size-gt:
		return nil, errAt(48, "group table (%d bytes at %d) misplaced: want aligned, after the metadata, inside the %d-byte file", gtLen, gt, size)
	}
	md, err := cflowfmt.ParseMetadata(data[mo:mo+ml], int64(mo))
	if err != nil {
		return nil, err
	}
	f.Meta = md
	xb := md.Bytes(cflowfmt.KeyExecHeader)
	if len(xb) != cflowfmt.HeaderSize {
		return nil, errAt(int64(mo), "metadata %s: want %d bytes, got %d", cflowfmt.KeyExecHeader, cflowfmt.HeaderSize, len(xb))
	}
	x := &f.Exec
	if err := x.UnmarshalBinary(xb); err != nil {
		return nil, errAt(int64(mo), "metadata %s: %v", cflowfmt.KeyExecHeader, err)
	}
	if err := x.CheckWidths(); err != nil {
		return nil, errAt(int64(mo), "metadata %s: %v", cflowfmt.KeyExecHeader, err)
	}
	if x.MetadataOffset != 0 || x.MetadataLength != 0 || x.LayerTableOffset != 0 {
		return nil, errAt(int64(mo), "metadata %s: offset fields must be zero in a .vflow", cflowfmt.KeyExecHeader)
	}
	if err := vh.agrees(x); err != nil {
		return nil, err
	}
	if err := cflowfmt.CheckMetadata(x, md); err != nil {
		return nil, errAt(int64(mo), "%v", err)
	}
	L, E := uint64(x.NumLayers), uint64(x.NumExperts)
	dataStart := cflowfmt.AlignUp(int64(gt + gtLen))
	ix := vh.ExpertIndexOffset
	ixLen := L * E * IndexEntrySize
	if E == 0 && ix != 0 {
		return nil, errAt(56, "expert index offset %d in a model without experts", ix)
	}
	if E > 0 {
		if ix%cflowfmt.TileAlign != 0 || ix < gt+gtLen || ix > size || ixLen > size-ix {
			return nil, errAt(56, "expert index (%d bytes at %d) misplaced: want aligned, after the group table, inside the file", ixLen, ix)
		}
		dataStart = cflowfmt.AlignUp(int64(ix + ixLen))
	}
	var spans []tileimage.Span
	// rng reads a (u64 offset, u64 length) entry at `at` and checks it.
	rng := func(at int64, what string) (cflowfmt.Range, error) {
		off, n := getRange(data[at:])
		switch {
		case n == 0 && off != 0:
			return cflowfmt.Range{}, errAt(at, "%s: empty range with offset %d", what, off)
		case n == 0:
			return cflowfmt.Range{}, nil
		case off < uint64(dataStart) || off > size || n > size-off:
			return cflowfmt.Range{}, errAt(at, "%s: range %d+%d outside the data area %d..%d", what, off, n, dataStart, size)
		case off%cflowfmt.TileAlign != 0:
			return cflowfmt.Range{}, errAt(at, "%s: offset %d not aligned", what, off)
		}
		return cflowfmt.Range{Offset: int64(off), Length: int64(n)}, nil
	}
	if err := f.readGroups(int64(gt), rng, &spans); err != nil {
		return nil, err
	}
	vocabAt := int64(gt + G*GroupDescSize)
	need := [3]bool{true, !x.Has(cflowfmt.FlagTiedEmbed), true}
	for s := range f.Vocab {
		at := vocabAt + 16*int64(s)
		r, err := rng(at, "vocabulary slot")
		if err != nil {
			return nil, err
		}
		if need[s] != (r.Length > 0) {
			return nil, errAt(at, "vocabulary slot %d: required %v, present %v", s, need[s], r.Length > 0)
		}
		f.Vocab[s] = r
		spans = append(spans, tileimage.Span{Range: r, At: at})
	}
	f.Experts = make([][]cflowfmt.Range, L)
	for l := range f.Experts {
		f.Experts[l] = make([]cflowfmt.Range, E)
		for e := range f.Experts[l] {
			at := int64(ix) + (int64(l)*int64(E)+int64(e))*IndexEntrySize
			r, err := rng(at, "expert index")
			if err != nil {
				return nil, err
			}
			if r.Length == 0 {
				return nil, errAt(at, "layer %d expert %d has an empty range", l, e)
			}
			f.Experts[l][e] = r
			spans = append(spans, tileimage.Span{Range: r, At: at})
		}
	}
	if err := tileimage.Disjoint(spans); err != nil {
		return nil, err
	}
	return f, f.build()
}

// readGroups decodes the group table: groups tile the layers in order,
// each one attention kind agreeing with the metadata, stages in order
// inside the group's range, required stages present.
func (f *File) readGroups(gt int64, rng func(int64, string) (cflowfmt.Range, error), spans *[]tileimage.Span) error {
	x := &f.Exec
	kinds := f.Meta.Bytes(cflowfmt.KeyLayerKinds)
	need := [NumStages]bool{true, x.IntermediateSize > 0, x.NumExperts > 0}
	next := 0
	for i := 0; i < int(f.Header.GroupCount); i++ {
		at := gt + int64(i)*GroupDescSize
		b := f.data[at : at+GroupDescSize]
		le := binary.LittleEndian
		g := Group{First: int(le.Uint32(b)), Count: int(le.Uint32(b[4:])), Kind: b[8]}
		switch {
		case uint64(g.First) != uint64(next) || g.Count < 1 || uint64(g.First)+uint64(g.Count) > uint64(x.NumLayers):
			return errAt(at, "group %d covers layers %d+%d, want %d+(1..%d)", i, g.First, g.Count, next, int(x.NumLayers)-next)
		case g.Kind != archspec.LayerFull && g.Kind != archspec.LayerSliding:
			return errAt(at+8, "group %d has attention kind %d", i, g.Kind)
		case le.Uint64(b[8:])>>8 != 0:
			return errAt(at+9, "group %d reserved bytes are not zero", i)
		}
		for l := g.First; l < g.First+g.Count; l++ {
			k := byte(archspec.LayerFull)
			if kinds != nil {
				k = kinds[l]
			}
			if k != g.Kind {
				return errAt(at+8, "group %d has kind %d but layer %d is kind %d", i, g.Kind, l, k)
			}
		}
		next = g.First + g.Count
		var err error
		if g.Range, err = rng(at+16, "group range"); err != nil {
			return err
		}
		var first, last cflowfmt.Range
		for s := range g.Stages {
			sa := at + 32 + 16*int64(s)
			if g.Stages[s], err = rng(sa, "group stage"); err != nil {
				return err
			}
			r := g.Stages[s]
			if need[s] != (r.Length > 0) {
				return errAt(sa, "group %d %s stage: required %v, present %v", i, StageName(s), need[s], r.Length > 0)
			}
			if r.Length == 0 {
				continue
			}
			if last.Length > 0 && r.Offset < last.End() {
				return errAt(sa, "group %d %s stage starts at %d, before the previous stage ends (%d)", i, StageName(s), r.Offset, last.End())
			}
			if first.Length == 0 {
				first = r
			}
			last = r
			*spans = append(*spans, tileimage.Span{Range: r, At: sa})
		}
		if g.Range.Offset != first.Offset || g.Range.End() != last.End() {
			return errAt(at+16, "group %d range %d+%d, want %d..%d (its first stage to its last)", i, g.Range.Offset, g.Range.Length, first.Offset, last.End())
		}
		f.Groups = append(f.Groups, g)
	}
	if next != int(x.NumLayers) {
		return errAt(gt, "groups cover %d of %d layers", next, x.NumLayers)
	}
	return nil
}

// build walks every stage and vocabulary slot into a Model, recording each
// layer's span per stage as its Streams.
func (f *File) build() error {
	b := tileimage.NewModelBuilder(f.Path, f.Exec, f.Meta)
	m := b.Model()
	err := f.walkStages(func(loc cflowfmt.Loc, t *cflowfmt.MappedTile) error {
		if err := b.Add(*t); err != nil {
			return errAt(t.Offset, "%v", err)
		}
		if loc.Layer < len(m.Layers) {
			r := &m.Layers[loc.Layer].Streams[loc.Slot]
			if r.Length == 0 {
				r.Offset = t.Offset
			}
			r.Length = t.Offset + int64(t.Bytes()) - r.Offset
		}
		return nil
	})
	if err != nil {
		return err
	}
	gt := int64(f.Header.GroupTableOffset)
	m, err = b.Finish(func(l int) int64 {
		for i, g := range f.Groups {
			if l < g.First+g.Count {
				return gt + int64(i)*GroupDescSize
			}
		}
		return gt + int64(len(f.Groups))*GroupDescSize
	})
	if err != nil {
		return err
	}
	E := int(f.Exec.NumExperts)
	for l := range m.Layers {
		ly := &m.Layers[l]
		ly.Experts = f.Experts[l]
		if E > 0 {
			ly.Streams[cflowfmt.SlotExpertTable] = cflowfmt.Range{Offset: int64(f.Header.ExpertIndexOffset) + int64(l*E)*IndexEntrySize, Length: int64(E) * IndexEntrySize}
			lo, hi := ly.Experts[0].Offset, ly.Experts[0].End()
			for _, r := range ly.Experts {
				lo, hi = min(lo, r.Offset), max(hi, r.End())
			}
			ly.Streams[cflowfmt.SlotExpertBank] = cflowfmt.Range{Offset: lo, Length: hi - lo}
		}
	}
	m.ExpertTiles = tileimage.LazyExperts(f.Path, f.data, &m.Header, func(l int) []cflowfmt.Range { return f.Experts[l] })
	f.Model = m
	return nil
}

// walkStages parses every stage tile (checking matrix, group membership
// and layer order) and then every vocabulary tile, calling fn with
// Loc{layer, stage or vocab slot, -1}.
func (f *File) walkStages(fn func(cflowfmt.Loc, *cflowfmt.MappedTile) error) error {
	walk := func(r cflowfmt.Range, ok func(*cflowfmt.MappedTile) error, slot int) error {
		for off := r.Offset; off < r.End(); {
			t, next, err := tileimage.ParseTile(f.data, off, r.End(), &f.Exec)
			if err != nil {
				return err
			}
			if err := ok(&t); err != nil {
				return err
			}
			if err := fn(cflowfmt.Loc{Layer: int(t.Layer), Slot: slot, Expert: -1}, &t); err != nil {
				return err
			}
			off = next
		}
		return nil
	}
	for gi, g := range f.Groups {
		for s, r := range g.Stages {
			last := g.First
			err := walk(r, func(t *cflowfmt.MappedTile) error {
				l := int(t.Layer)
				switch {
				case !tileimage.SlotAllows(s, false, t.Matrix):
					return errAt(t.Offset, "%s tile in group %d's %s stage", t.Matrix, gi, StageName(s))
				case l < last || l >= g.First+g.Count:
					return errAt(t.Offset, "%s tile of layer %d in group %d's %s stage (layers %d..%d, in order; previous tile layer %d)", t.Matrix, l, gi, StageName(s), g.First, g.First+g.Count-1, last)
				}
				last = l
				return nil
			}, s)
			if err != nil {
				return err
			}
		}
	}
	for s, r := range f.Vocab {
		err := walk(r, func(t *cflowfmt.MappedTile) error {
			if !tileimage.SlotAllows(s, true, t.Matrix) {
				return errAt(t.Offset, "%s tile in vocabulary slot %d", t.Matrix, s)
			}
			return nil
		}, s)
		if err != nil {
			return err
		}
	}
	return nil
}

// Walk calls fn for every tile in file-table order: group stages (Loc has
// the tile's layer and the stage as Slot), vocabulary slots (Layer =
// NumLayers), then each layer's experts (Slot = cflowfmt.SlotExpertBank).
func (f *File) Walk(fn func(cflowfmt.Loc, *cflowfmt.MappedTile) error) error {
	if err := f.walkStages(fn); err != nil {
		return f.named(err)
	}
	for l, ex := range f.Experts {
		for e, r := range ex {
			ts, err := cflowfmt.ParseExpert(f.data, r, &f.Exec, l, e)
			if err != nil {
				return f.named(err)
			}
			for i := range ts {
				if err := fn(cflowfmt.Loc{Layer: l, Slot: cflowfmt.SlotExpertBank, Expert: e}, &ts[i]); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (f *File) named(err error) error {
	if fe, ok := err.(*cflowfmt.FormatError); ok && fe.File == "" {
		fe.File = f.Path
	}
	return err
}

// Check reads every tile, experts included, and validates padding and the
// exact coverage of every matrix, as cflowfmt's File.Check does.
func (f *File) Check() error {
	return f.named(tileimage.CheckWalk(&f.Exec, f.Meta, f.data, f.Walk))
}
