package vflowfmt

import (
	"errors"
	"fmt"

	"github.com/cflow-dev/cflow/archspec"
	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/internal/tileimage"
	"github.com/cflow-dev/cflow/quant"
)

// Writer streams a .vflow file. Regions are written in this order: group
// stages in increasing (group, stage) order (skipped stages are empty),
// then, in any order, the vocabulary slots (BeginVocab) and the experts
// (BeginExpert). Inside a stage, tiles go layer by layer (layer_id never
// decreases); within a layer, the .cflow slot order: norms, Q/K/V
// interleaved by stripe, O (attention); norm, gate/up interleaved, down
// (dense); norm, router (MoE). The header, group table and expert index
// are reserved at Create and back-patched by Close. Nothing appears at the
// path unless Close succeeds.
type Writer struct {
	s      *tileimage.TileSink
	x      cflowfmt.Header // execution header
	vh     Header
	groups []Group
	vocab  [3]cflowfmt.Range
	index  []cflowfmt.Range // layer*E + e
	err    error
	sumsAt int64 // file offset of the checksum table's value, patched at Close

	phase      int // 0 nothing open yet, 1 group stages, 2 vocab/experts
	kind       int // what is open: 0 none, 1 stage, 2 vocab, 3 expert
	group, st  int
	lastLayer  int
	layer, idx int   // vocab slot in idx for kind 2; expert (layer, idx) for kind 3
	rs, re     int64 // first tile start and last tile end of the open region
}

const (
	openNone = iota
	openStage
	openVocab
	openExpert
)

// Create starts a .vflow file at path for execution header h (its Version
// may be 0; the offset fields are ignored and stored as zero) and metadata
// md (nil: none). The groups follow md's cflowfmt.KeyLayerKinds (see
// ComputeGroups); Groups lists them.
func Create(path string, h cflowfmt.Header, md *cflowfmt.Metadata) (*Writer, error) {
	fail := func(err error) (*Writer, error) { return nil, fmt.Errorf("vflowfmt: create %s: %w", path, err) }
	if h.Version == 0 {
		h.Version = cflowfmt.Version
	}
	h.MetadataOffset, h.MetadataLength, h.LayerTableOffset = 0, 0, 0
	if err := h.Validate(); err != nil {
		return fail(err)
	}
	if err := h.CheckWidths(); err != nil {
		return fail(err)
	}
	meta := cflowfmt.NewMetadata()
	if md != nil {
		b, err := md.MarshalBinary()
		if err != nil {
			return fail(err)
		}
		if meta, err = cflowfmt.ParseMetadata(b, 0); err != nil {
			return fail(err)
		}
	}
	if err := cflowfmt.CheckMetadata(&h, meta); err != nil {
		return fail(err)
	}
	xb, _ := h.MarshalBinary()
	meta.SetBytes(cflowfmt.KeyExecHeader, xb)
	mb, sumsAt, err := tileimage.ReserveSums(meta, int(h.NumLayers))
	if err != nil {
		return fail(err)
	}
	if len(mb) > 1<<31 {
		return fail(fmt.Errorf("metadata of %d bytes exceeds 2 GiB", len(mb)))
	}
	groups := GroupsFor(&h, meta)
	vh := headerFor(&h, len(groups))
	vh.MetadataOffset = HeaderSize
	vh.MetadataLength = uint32(len(mb))
	vh.GroupTableOffset = uint64(cflowfmt.AlignUp(HeaderSize + int64(len(mb))))
	indexLen := int64(h.NumLayers) * int64(h.NumExperts) * IndexEntrySize
	dataStart := cflowfmt.AlignUp(int64(vh.GroupTableOffset) + int64(len(groups))*GroupDescSize + VocabDescSize)
	if indexLen > 0 {
		vh.ExpertIndexOffset = uint64(dataStart)
		dataStart = cflowfmt.AlignUp(dataStart + indexLen)
	}
	s, err := tileimage.CreateTileSink(path)
	if err != nil {
		return fail(err)
	}
	s.TrackSums(int(h.NumLayers))
	s.Zeros(HeaderSize)
	s.Write(mb)
	s.Zeros(dataStart - s.Offset())
	if err := s.Err(); err != nil {
		s.Abort()
		return nil, err
	}
	return &Writer{s: s, x: h, vh: vh, groups: groups, sumsAt: HeaderSize + int64(sumsAt),
		index: make([]cflowfmt.Range, int(h.NumLayers)*int(h.NumExperts)), group: -1}, nil
}

// Groups returns the vertical groups the file is written in (the caller
// iterates them for BeginGroupStage).
func (w *Writer) Groups() []Group { return append([]Group(nil), w.groups...) }

// Offset is the current end of the file.
func (w *Writer) Offset() int64 { return w.s.Offset() }

func (w *Writer) fail(err error) error {
	if w.err == nil {
		w.err = err
	}
	return w.err
}

func (w *Writer) errorf(format string, a ...any) error {
	return w.fail(fmt.Errorf("vflowfmt: "+format, a...))
}

// end closes whatever region is open, recording its range.
func (w *Writer) end() error {
	r := cflowfmt.Range{Offset: w.rs, Length: w.re - w.rs}
	if w.re == w.rs {
		r = cflowfmt.Range{}
	}
	switch w.kind {
	case openStage:
		w.groups[w.group].Stages[w.st] = r
	case openVocab:
		w.vocab[w.idx] = r
	case openExpert:
		if r.Length == 0 {
			return w.errorf("layer %d expert %d has no tiles", w.layer, w.idx)
		}
		w.index[w.layer*int(w.x.NumExperts)+w.idx] = r
	}
	w.kind, w.rs, w.re = openNone, 0, 0
	return nil
}

// BeginGroupStage starts stage st (StageAttn, StageDense, StageMoE) of
// group g. Calls must come in increasing (group, stage) order and before
// any BeginVocab or BeginExpert.
func (w *Writer) BeginGroupStage(g, st int) error {
	if w.err != nil {
		return w.err
	}
	if err := w.end(); err != nil {
		return err
	}
	switch {
	case g < 0 || g >= len(w.groups) || st < 0 || st >= NumStages:
		return w.errorf("BeginGroupStage(%d, %d): %d groups, %d stages", g, st, len(w.groups), NumStages)
	case w.phase > 1:
		return w.errorf("BeginGroupStage(%d, %d) after the vocabulary or expert regions began", g, st)
	case g < w.group || g == w.group && st <= w.st:
		return w.errorf("BeginGroupStage(%d, %d) after (%d, %d): stages go in increasing order", g, st, w.group, w.st)
	}
	w.phase, w.kind, w.group, w.st, w.lastLayer = 1, openStage, g, st, 0
	return nil
}

// BeginVocab starts a vocabulary slot (cflowfmt.SlotEmbed, SlotLMHead,
// SlotFinalNorm); tiles carry layer_id = NumLayers.
func (w *Writer) BeginVocab(slot int) error {
	if w.err != nil {
		return w.err
	}
	if err := w.end(); err != nil {
		return err
	}
	if slot < cflowfmt.SlotEmbed || slot > cflowfmt.SlotFinalNorm {
		return w.errorf("BeginVocab(%d): want SlotEmbed, SlotLMHead or SlotFinalNorm", slot)
	}
	if w.vocab[slot].Length != 0 {
		return w.errorf("BeginVocab(%d) twice", slot)
	}
	w.phase, w.kind, w.idx = 2, openVocab, slot
	return nil
}

// BeginExpert starts expert e of layer l (gate, up, down tiles); any
// order, each (layer, expert) once, after the group stages.
func (w *Writer) BeginExpert(l, e int) error {
	if w.err != nil {
		return w.err
	}
	if err := w.end(); err != nil {
		return err
	}
	E := int(w.x.NumExperts)
	switch {
	case l < 0 || l >= int(w.x.NumLayers) || e < 0 || e >= E:
		return w.errorf("BeginExpert(%d, %d): %d layers × %d experts", l, e, w.x.NumLayers, E)
	case w.index[l*E+e].Length != 0:
		return w.errorf("BeginExpert(%d, %d) twice", l, e)
	}
	w.phase, w.kind, w.layer, w.idx = 2, openExpert, l, e
	return nil
}

// WriteTile appends a tile to the open region after the same checks as the
// .cflow writer (cflowfmt.Header.CheckTileData) plus: a stage takes only
// its matrices, from layers of its group, with layer_id never decreasing;
// an expert region only that layer's and expert's expert matrices.
func (w *Writer) WriteTile(th cflowfmt.TileHeader, t *quant.Tile) error {
	return w.writeTile(th, t, nil)
}

// WriteTileSum is WriteTile with the tile's checksum contribution
// (cflowfmt.TileSum of th and t) computed by the caller, so that a
// converter hashes its tiles on its quantizing goroutines rather than on
// the one that writes.
func (w *Writer) WriteTileSum(th cflowfmt.TileHeader, t *quant.Tile, sum uint64) error {
	return w.writeTile(th, t, &sum)
}

func (w *Writer) writeTile(th cflowfmt.TileHeader, t *quant.Tile, sum *uint64) error {
	if w.err != nil {
		return w.err
	}
	switch w.kind {
	case openNone:
		return w.errorf("WriteTile(%s) outside a region", th.Matrix)
	case openStage:
		g := &w.groups[w.group]
		l := int(th.Layer)
		switch {
		case !tileimage.SlotAllows(w.st, false, th.Matrix):
			return w.errorf("WriteTile: %s not allowed in the %s stage", th.Matrix, StageName(w.st))
		case l < g.First || l >= g.First+g.Count:
			return w.errorf("WriteTile: %s tile of layer %d in group %d (layers %d..%d)", th.Matrix, l, w.group, g.First, g.First+g.Count-1)
		case l < w.lastLayer:
			return w.errorf("WriteTile: %s tile of layer %d after layer %d in one stage", th.Matrix, l, w.lastLayer)
		}
		w.lastLayer = l
	case openVocab:
		if !tileimage.SlotAllows(w.idx, true, th.Matrix) {
			return w.errorf("WriteTile: %s not allowed in vocabulary slot %d", th.Matrix, w.idx)
		}
	case openExpert:
		if !th.Matrix.IsExpert() || int(th.Layer) != w.layer || int(th.Expert) != w.idx {
			return w.errorf("WriteTile: %s tile (layer %d, expert %d) in layer %d expert %d's region", th.Matrix, th.Layer, th.Expert, w.layer, w.idx)
		}
	}
	if err := w.x.CheckTileData(&th, t); err != nil {
		return w.errorf("WriteTile: %v", err)
	}
	var at int64
	var err error
	if sum != nil {
		at, err = w.s.WriteTileSum(&th, t, *sum)
	} else {
		at, err = w.s.WriteTile(&th, t)
	}
	if err != nil {
		return w.fail(err)
	}
	if w.rs == 0 {
		w.rs = at
	}
	w.re = w.s.Offset()
	return nil
}

// WriteNorm writes a norm vector as 1-row F32 tiles into the open region.
func (w *Writer) WriteNorm(layer int, m archspec.MatrixID, v []float32) error {
	if w.err != nil {
		return w.err
	}
	if !m.IsNorm() || len(v) != int(w.x.HiddenSize) {
		return w.errorf("WriteNorm: layer %d %s with %d values (want a norm of %d)", layer, m, len(v), w.x.HiddenSize)
	}
	ths, ts := tileimage.NormTiles(layer, m, v, int(w.x.TileCols))
	for i := range ths {
		if err := w.WriteTile(ths[i], &ts[i]); err != nil {
			return err
		}
	}
	return nil
}

// Close checks completeness (every group's attention stage, dense and MoE
// stages as the header requires, the vocabulary slots, every expert),
// back-patches header, group table and expert index, fsyncs and renames.
func (w *Writer) Close() error {
	if w.err == nil {
		w.end()
	}
	if w.err == nil {
		w.err = w.complete()
	}
	if w.err == nil {
		for i := range w.groups {
			g := &w.groups[i]
			for _, r := range g.Stages {
				if r.Length == 0 {
					continue
				}
				if g.Range.Length == 0 {
					g.Range.Offset = r.Offset
				}
				g.Range.Length = r.End() - g.Range.Offset
			}
		}
		hb, _ := w.vh.MarshalBinary()
		tb := make([]byte, len(w.groups)*GroupDescSize+VocabDescSize)
		for i := range w.groups {
			w.groups[i].put(tb[i*GroupDescSize:])
		}
		for s, r := range w.vocab {
			putRange(tb[len(w.groups)*GroupDescSize+16*s:], r)
		}
		ib := make([]byte, len(w.index)*IndexEntrySize)
		for i, r := range w.index {
			putRange(ib[i*IndexEntrySize:], r)
		}
		w.s.WriteAt(hb, 0)
		w.s.WriteAt(w.s.Sums().Bytes(), w.sumsAt)
		w.s.WriteAt(tb, int64(w.vh.GroupTableOffset))
		if len(ib) > 0 {
			w.s.WriteAt(ib, int64(w.vh.ExpertIndexOffset))
		}
		w.err = w.s.Err()
	}
	if w.err != nil {
		w.s.Abort()
		return w.err
	}
	if err := w.s.Commit(); err != nil {
		w.err = err
		return err
	}
	w.err = errors.New("vflowfmt: writer closed")
	return nil
}

func (w *Writer) complete() error {
	h := &w.x
	for i, g := range w.groups {
		need := [NumStages]bool{true, h.IntermediateSize > 0, h.NumExperts > 0}
		for s := range need {
			if need[s] != (g.Stages[s].Length > 0) {
				return fmt.Errorf("vflowfmt: close: group %d %s stage: required %v, written %v", i, StageName(s), need[s], g.Stages[s].Length > 0)
			}
		}
	}
	need := [3]bool{true, !h.Has(cflowfmt.FlagTiedEmbed), true}
	for s := range need {
		if need[s] != (w.vocab[s].Length > 0) {
			return fmt.Errorf("vflowfmt: close: vocabulary slot %d: required %v, written %v", s, need[s], w.vocab[s].Length > 0)
		}
	}
	for i, r := range w.index {
		if r.Length == 0 {
			E := int(h.NumExperts)
			return fmt.Errorf("vflowfmt: close: layer %d expert %d was not written", i/E, i%E)
		}
	}
	return nil
}

// Abort discards the output; nothing is left at the path.
func (w *Writer) Abort() {
	w.fail(errors.New("vflowfmt: writer aborted"))
	w.s.Abort()
}
