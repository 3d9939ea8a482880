package cflowfmt

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cflow-dev/cflow/archspec"
	"github.com/cflow-dev/cflow/internal/tileimage"
	"github.com/cflow-dev/cflow/quant"
)

// Writer streams a .cflow file: tiles go to disk as they are written, only
// the layer table (a few KB) and one expert table are held in memory. The
// file appears at its path only when Close succeeds; any error poisons the
// writer and Close/Abort remove the temp file.
//
// Usage: Create; for each (layer, slot) in any order BeginSlot, WriteTile /
// WriteNorm (and BeginExpert inside SlotExpertBank), EndSlot; Close.
type Writer struct {
	s     *tileimage.TileSink
	h     Header
	md    *Metadata
	table [][SlotsPerLayer]Range
	done  [][SlotsPerLayer]bool
	err   error

	open        bool
	layer, slot int
	start, end  int64 // first tile start and last tile end of the open slot (0,0 = empty)

	sumsAt int64 // file offset of the KeyLayerChecksums value, patched at Close

	experts []Range // expert ranges of the open bank
	expert  int     // current expert, -1 before the first BeginExpert
}

// Create starts a .cflow file at path. h supplies the geometry; its
// Version (0 or 5), MetadataOffset/Length and LayerTableOffset are filled
// in by the writer. md may be nil (an empty section is written).
func Create(path string, h Header, md *Metadata) (*Writer, error) {
	if h.Version == 0 {
		h.Version = Version
	}
	if err := h.Validate(); err != nil {
		return nil, fmt.Errorf("cflowfmt: create %s: header: %w", path, err)
	}
	if err := h.CheckWidths(); err != nil {
		return nil, fmt.Errorf("cflowfmt: create %s: %w", path, err)
	}
	if md == nil {
		md = NewMetadata()
	}
	if err := CheckMetadata(&h, md); err != nil {
		return nil, fmt.Errorf("cflowfmt: create %s: %w", path, err)
	}
	md = md.Clone()
	mb, sumsAt, err := tileimage.ReserveSums(md, int(h.NumLayers))
	if err != nil {
		return nil, fmt.Errorf("cflowfmt: create %s: %w", path, err)
	}
	if len(mb) > 1<<31 {
		return nil, fmt.Errorf("cflowfmt: create %s: metadata of %d bytes exceeds 2 GiB", path, len(mb))
	}
	s, err := tileimage.CreateTileSink(path)
	if err != nil {
		return nil, fmt.Errorf("cflowfmt: create %s: %w", path, err)
	}
	h.MetadataOffset = HeaderSize
	h.MetadataLength = uint32(len(mb))
	s.TrackSums(int(h.NumLayers))
	s.Zeros(HeaderSize)
	s.Write(mb)
	if err := s.Err(); err != nil {
		s.Abort()
		return nil, err
	}
	n := int(h.NumLayers) + 1
	return &Writer{s: s, h: h, md: md, sumsAt: HeaderSize + int64(sumsAt), table: make([][SlotsPerLayer]Range, n), done: make([][SlotsPerLayer]bool, n)}, nil
}

func (w *Writer) fail(err error) error {
	if w.err == nil {
		w.err = err
	}
	return w.err
}

func (w *Writer) errorf(format string, a ...any) error {
	return w.fail(fmt.Errorf("cflowfmt: "+format, a...))
}

// Offset is the current end of the file (where the next byte would go).
func (w *Writer) Offset() int64 { return w.s.Offset() }

// BeginSlot starts stream slot `slot` of layer `layer`; layer == NumLayers
// is the vocabulary entry (SlotEmbed, SlotLMHead, SlotFinalNorm). Each slot
// may be written once, in any order. An open slot is ended first.
// BeginSlot(l, SlotExpertBank) also reserves layer l's SlotExpertTable just
// before the bank; SlotExpertTable cannot be begun directly.
func (w *Writer) BeginSlot(layer, slot int) error {
	if w.err != nil {
		return w.err
	}
	if err := w.EndSlot(); err != nil {
		return err
	}
	L := int(w.h.NumLayers)
	switch {
	case layer < 0 || layer > L:
		return w.errorf("BeginSlot: layer %d outside 0..%d", layer, L)
	case layer == L && (slot < SlotEmbed || slot > SlotFinalNorm):
		return w.errorf("BeginSlot: vocabulary entry slot %d, want SlotEmbed, SlotLMHead or SlotFinalNorm", slot)
	case layer < L && (slot < 0 || slot >= SlotsPerLayer):
		return w.errorf("BeginSlot: slot %d outside 0..%d", slot, SlotsPerLayer-1)
	case layer < L && slot == SlotExpertTable:
		return w.errorf("BeginSlot: SlotExpertTable is written by BeginSlot(layer, SlotExpertBank)")
	case layer < L && slot == SlotExpertBank && w.h.NumExperts == 0:
		return w.errorf("BeginSlot: layer %d expert bank, but the header has no experts", layer)
	case w.done[layer][slot]:
		return w.errorf("BeginSlot: layer %d slot %d written twice", layer, slot)
	}
	w.open, w.layer, w.slot, w.start, w.end = true, layer, slot, 0, 0
	if layer < L && slot == SlotExpertBank {
		if err := w.s.Pad(); err != nil {
			return w.fail(err)
		}
		n := int64(w.h.NumExperts) * 16
		w.table[layer][SlotExpertTable] = Range{Offset: w.s.Offset(), Length: n}
		if err := w.s.Zeros(n); err != nil {
			return w.fail(err)
		}
		w.experts = make([]Range, w.h.NumExperts)
		w.expert = -1
	}
	return nil
}

// BeginExpert starts expert e's tiles (gate, up, down) inside an open
// SlotExpertBank. Experts may come in any order, each once.
func (w *Writer) BeginExpert(e int) error {
	if w.err != nil {
		return w.err
	}
	if !w.open || w.layer == int(w.h.NumLayers) || w.slot != SlotExpertBank {
		return w.errorf("BeginExpert(%d) outside an expert bank slot", e)
	}
	if e < 0 || e >= int(w.h.NumExperts) {
		return w.errorf("BeginExpert: expert %d outside 0..%d", e, w.h.NumExperts-1)
	}
	if err := w.endExpert(); err != nil {
		return err
	}
	if w.experts[e].Length != 0 {
		return w.errorf("BeginExpert: layer %d expert %d written twice", w.layer, e)
	}
	w.expert = e
	w.experts[e] = Range{Offset: -1}
	return nil
}

func (w *Writer) endExpert() error {
	if w.expert < 0 {
		return nil
	}
	r := &w.experts[w.expert]
	if r.Offset < 0 {
		return w.errorf("layer %d expert %d has no tiles", w.layer, w.expert)
	}
	w.expert = -1
	return nil
}

// WriteTile appends one tile to the open slot, padding to TileAlign first.
// th must describe t exactly: layer_id the slot's layer (NumLayers in the
// vocabulary entry), expert_id NoExpert or the current expert, a matrix
// the slot allows, quant_group 32 for quantized tiles and 0 for F32, t's
// type TileQuant(th.Matrix, file quant), geometry within the header's tile
// size and the tile inside its matrix.
func (w *Writer) WriteTile(th TileHeader, t *quant.Tile) error {
	return w.writeTile(th, t, nil)
}

// WriteTileSum is WriteTile with the tile's checksum contribution
// (cflowfmt.TileSum of th and t) computed by the caller, so that a
// converter hashes its tiles on its quantizing goroutines rather than on
// the one that writes.
func (w *Writer) WriteTileSum(th TileHeader, t *quant.Tile, sum uint64) error {
	return w.writeTile(th, t, &sum)
}

func (w *Writer) writeTile(th TileHeader, t *quant.Tile, sum *uint64) error {
	if w.err != nil {
		return w.err
	}
	if !w.open {
		return w.errorf("WriteTile(%s) outside a slot", th.Matrix)
	}
	vocab := w.layer == int(w.h.NumLayers)
	bank := !vocab && w.slot == SlotExpertBank
	wantExpert := uint8(NoExpert)
	if bank {
		if w.expert < 0 {
			return w.errorf("WriteTile(%s) in layer %d's expert bank before BeginExpert", th.Matrix, w.layer)
		}
		wantExpert = uint8(w.expert)
	}
	switch {
	case !tileimage.SlotAllows(w.slot, vocab, th.Matrix):
		return w.errorf("WriteTile: matrix %s not allowed in layer %d slot %d", th.Matrix, w.layer, w.slot)
	case int(th.Layer) != w.layer:
		return w.errorf("WriteTile: %s tile has layer_id %d in layer %d's slot", th.Matrix, th.Layer, w.layer)
	case th.Expert != wantExpert:
		return w.errorf("WriteTile: %s tile has expert_id %d, want %d", th.Matrix, th.Expert, wantExpert)
	}
	if err := w.h.CheckTileData(&th, t); err != nil {
		return w.errorf("WriteTile: layer %d: %v", w.layer, err)
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
	if w.start == 0 {
		w.start = at
	}
	w.end = w.s.Offset()
	if bank {
		r := &w.experts[w.expert]
		if r.Offset < 0 {
			r.Offset = at
		}
		r.Length = w.end - r.Offset
	}
	return nil
}

// WriteNorm writes a norm vector (length d) as 1-row F32 tiles of at most
// TileCols columns into the open slot.
func (w *Writer) WriteNorm(layer int, m archspec.MatrixID, v []float32) error {
	if w.err != nil {
		return w.err
	}
	if !m.IsNorm() {
		return w.errorf("WriteNorm: %s is not a norm", m)
	}
	if len(v) != int(w.h.HiddenSize) {
		return w.errorf("WriteNorm: layer %d %s has %d values, want %d", layer, m, len(v), w.h.HiddenSize)
	}
	ths, ts := tileimage.NormTiles(layer, m, v, int(w.h.TileCols))
	for i := range ths {
		if err := w.WriteTile(ths[i], &ts[i]); err != nil {
			return err
		}
	}
	return nil
}

// EndSlot closes the open slot (no-op when none is open). For an expert
// bank it checks every expert was written and back-patches the table.
func (w *Writer) EndSlot() error {
	if w.err != nil {
		return w.err
	}
	if !w.open {
		return nil
	}
	if w.layer < int(w.h.NumLayers) && w.slot == SlotExpertBank {
		if err := w.endExpert(); err != nil {
			return err
		}
		tb := make([]byte, 0, 16*len(w.experts))
		for e, r := range w.experts {
			if r.Length == 0 {
				return w.errorf("layer %d expert bank: expert %d was not written", w.layer, e)
			}
			tb = binary.LittleEndian.AppendUint64(tb, uint64(r.Offset))
			tb = binary.LittleEndian.AppendUint64(tb, uint64(r.Length))
		}
		if err := w.s.WriteAt(tb, w.table[w.layer][SlotExpertTable].Offset); err != nil {
			return w.fail(err)
		}
		w.done[w.layer][SlotExpertTable] = true
		w.experts = nil
	}
	if w.end > w.start {
		w.table[w.layer][w.slot] = Range{Offset: w.start, Length: w.end - w.start}
	}
	w.done[w.layer][w.slot] = true
	w.open = false
	return nil
}

// requiredSlots lists which slots a complete file has, from the header
// alone; Close and the readers enforce it.
func requiredSlots(h *Header, layer int) (need [SlotsPerLayer]bool) {
	if layer == int(h.NumLayers) {
		need[SlotEmbed] = true
		need[SlotLMHead] = !h.Has(FlagTiedEmbed)
		need[SlotFinalNorm] = true
		return
	}
	need[SlotAttn] = true
	need[SlotDense] = h.IntermediateSize > 0
	need[SlotMoE] = h.NumExperts > 0
	need[SlotExpertTable] = h.NumExperts > 0
	need[SlotExpertBank] = h.NumExperts > 0
	return
}

// Close ends the open slot, checks every required slot was written,
// appends the layer table, writes the header, fsyncs and renames the temp
// file to the target. On any error the temp file is removed.
func (w *Writer) Close() error {
	if w.err == nil {
		w.EndSlot()
	}
	if w.err == nil {
		for l := range w.table {
			need := requiredSlots(&w.h, l)
			for s := range need {
				if need[s] && w.table[l][s].Length == 0 {
					w.errorf("close: layer %d slot %d is empty (required by the header)", l, s)
				} else if !need[s] && w.table[l][s].Length != 0 {
					w.errorf("close: layer %d slot %d has tiles the header does not call for", l, s)
				}
			}
		}
	}
	if w.err == nil {
		w.s.Pad()
		w.h.LayerTableOffset = uint64(w.s.Offset())
		tb := make([]byte, 0, len(w.table)*SlotsPerLayer*16)
		for _, e := range w.table {
			for _, r := range e {
				tb = binary.LittleEndian.AppendUint64(tb, uint64(r.Offset))
				tb = binary.LittleEndian.AppendUint64(tb, uint64(r.Length))
			}
		}
		w.s.Write(tb)
		hb, _ := w.h.MarshalBinary()
		if err := w.s.WriteAt(hb, 0); err != nil {
			w.fail(err)
		} else if err := w.s.WriteAt(w.s.Sums().Bytes(), w.sumsAt); err != nil {
			w.fail(err)
		}
	}
	if w.err != nil {
		w.s.Abort()
		return w.err
	}
	if err := w.s.Commit(); err != nil {
		w.err = err
		return err
	}
	w.err = errors.New("cflowfmt: writer closed")
	return nil
}

// Abort discards everything written; nothing is left at the path. Safe
// after Close (then it does nothing).
func (w *Writer) Abort() {
	w.fail(errors.New("cflowfmt: writer aborted"))
	w.s.Abort()
}
