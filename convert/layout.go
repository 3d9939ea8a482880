package convert

import (
	"fmt"

	"github.com/cflow-dev/cflow/archspec"
	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/engine/plan"
	"github.com/cflow-dev/cflow/quant"
	"github.com/cflow-dev/cflow/vflowfmt"
)

type opKind uint8

const (
	opBeginSlot opKind = iota
	opNorm
	opTile
	opBeginExpert
	opEndSlot
	opBeginStage // .vflow: group stage; layer holds the group index
	opBeginVocab // .vflow: vocabulary slot
	opMark       // a layer's part of a .vflow stage starts (offsets restart)
)

// op is one writer call in file order. The layout produces ops; the
// emitter quantizes tile ops in parallel and replays all ops in order.
type op struct {
	kind   opKind
	layer  int
	slot   int
	expert int
	th     cflowfmt.TileHeader
	q      quant.Type
	t      *tensor
	r0, c0 int   // block origin in t
	rel    int64 // byte offset from the slot start (norms and non-expert tiles)
	seq    int   // position in the op stream
}

// mat is one matrix of a slot, resolved and shape-checked.
type mat struct {
	id     archspec.MatrixID
	layer  int
	expert int
	t      *tensor
	policy string
	shards []shard
}

// layouter enumerates the whole file's ops. It runs twice: once to check
// every tensor and build the NUMA plan before the output exists, once to
// drive the writer.
type layouter struct {
	c       *checkpoint
	s       *modelSpec
	pl      *planner
	nm      naming
	visit   func(*op) error
	seq     int
	rel     int64
	tiles   int // tile index within the current slot
	curSlot int
	rec     *cflowfmt.NUMAPlan
	// groups, when set, selects .vflow order: per vertical group its
	// attention, dense and MoE stages (each layer in turn), then the
	// vocabulary slots, then every layer's experts.
	groups []vflowfmt.Group
}

func (ly *layouter) emit(o *op) error {
	o.seq = ly.seq
	ly.seq++
	return ly.visit(o)
}

// run walks plan.Layout order, then the vocabulary entry (.cflow), or the
// group/stage order of .vflow.
func (ly *layouter) run() error {
	if ly.groups != nil {
		return ly.runVFlow()
	}
	h := &ly.s.h
	for _, st := range ly.s.steps {
		var err error
		switch st.Stream {
		case plan.Attn:
			err = ly.attn(st.Layer)
		case plan.Dense:
			err = ly.dense(st.Layer)
		case plan.MoE:
			err = ly.moe(st.Layer)
		}
		if err != nil {
			return err
		}
	}
	v := int(h.NumLayers)
	for _, vs := range ly.vocabSlots() {
		if err := ly.slot(v, vs.slot, vs.body); err != nil {
			return err
		}
	}
	return nil
}

type vocabSlot struct {
	slot int
	body func() error
}

func (ly *layouter) vocabSlots() []vocabSlot {
	v := int(ly.s.h.NumLayers)
	out := []vocabSlot{{cflowfmt.SlotEmbed, func() error { return ly.single(v, archspec.MatEmbed) }}}
	if !ly.s.h.Has(cflowfmt.FlagTiedEmbed) {
		out = append(out, vocabSlot{cflowfmt.SlotLMHead, func() error { return ly.single(v, archspec.MatLMHead) }})
	}
	return append(out, vocabSlot{cflowfmt.SlotFinalNorm, func() error { return ly.norm(v, archspec.MatFinalNorm) }})
}

// mark starts a layer's share of a .vflow region: relative offsets and
// tile indices restart there, matching Model.Layers[l].Streams[slot].
func (ly *layouter) mark(l, slot int) error {
	ly.rel, ly.tiles, ly.curSlot = 0, 0, slot
	return ly.emit(&op{kind: opMark, layer: l, slot: slot})
}

func (ly *layouter) runVFlow() error {
	h := &ly.s.h
	bodies := [vflowfmt.NumStages]func(int) error{ly.attnBody, ly.denseBody, ly.moeBody}
	need := [vflowfmt.NumStages]bool{true, h.IntermediateSize > 0, h.NumExperts > 0}
	for gi, g := range ly.groups {
		for st := 0; st < vflowfmt.NumStages; st++ {
			if !need[st] {
				continue
			}
			if err := ly.emit(&op{kind: opBeginStage, layer: gi, slot: st}); err != nil {
				return err
			}
			for l := g.First; l < g.First+g.Count; l++ {
				if err := ly.mark(l, st); err != nil {
					return err
				}
				if err := bodies[st](l); err != nil {
					return err
				}
			}
		}
	}
	v := int(h.NumLayers)
	for _, vs := range ly.vocabSlots() {
		if err := ly.emit(&op{kind: opBeginVocab, slot: vs.slot}); err != nil {
			return err
		}
		if err := ly.mark(v, vs.slot); err != nil {
			return err
		}
		if err := vs.body(); err != nil {
			return err
		}
	}
	for l := 0; l < v && h.NumExperts > 0; l++ {
		if err := ly.bankBody(l); err != nil {
			return err
		}
	}
	return nil
}

func (ly *layouter) slot(l, slot int, body func() error) error {
	ly.rel, ly.tiles, ly.curSlot = 0, 0, slot
	if err := ly.emit(&op{kind: opBeginSlot, layer: l, slot: slot}); err != nil {
		return err
	}
	if err := body(); err != nil {
		return err
	}
	return ly.emit(&op{kind: opEndSlot, layer: l, slot: slot})
}

func (ly *layouter) attn(l int) error {
	return ly.slot(l, cflowfmt.SlotAttn, func() error { return ly.attnBody(l) })
}

func (ly *layouter) dense(l int) error {
	return ly.slot(l, cflowfmt.SlotDense, func() error { return ly.denseBody(l) })
}

func (ly *layouter) moe(l int) error {
	if err := ly.slot(l, cflowfmt.SlotMoE, func() error { return ly.moeBody(l) }); err != nil {
		return err
	}
	return ly.slot(l, cflowfmt.SlotExpertBank, func() error { return ly.bankBody(l) })
}

// attnBody: attn_norm, Q/K/V interleaved by stripe, O.
func (ly *layouter) attnBody(l int) error {
	if err := ly.norm(l, archspec.MatAttnNorm); err != nil {
		return err
	}
	ids := []archspec.MatrixID{archspec.MatQ, archspec.MatK}
	if ly.s.hasV(l) {
		ids = append(ids, archspec.MatV)
	}
	if err := ly.group(l, ids...); err != nil {
		return err
	}
	return ly.single(l, archspec.MatO)
}

// denseBody: ffn_norm, gate/up interleaved by stripe, down.
func (ly *layouter) denseBody(l int) error {
	if err := ly.norm(l, archspec.MatFFNNorm); err != nil {
		return err
	}
	if err := ly.group(l, archspec.MatGate, archspec.MatUp); err != nil {
		return err
	}
	return ly.single(l, archspec.MatDown)
}

// moeBody: the router's norm (Header.MoESlotNorm: moe_norm for styles with
// their own, ffn_norm when the MoE replaces the dense FFN, none when it
// shares the FFN's input), then the router.
func (ly *layouter) moeBody(l int) error {
	if id, ok := ly.s.h.MoESlotNorm(); ok {
		if err := ly.norm(l, id); err != nil {
			return err
		}
	}
	return ly.single(l, archspec.MatRouter)
}

// bankBody: every expert's gate, up and down, expert by expert.
func (ly *layouter) bankBody(l int) error {
	h := &ly.s.h
	{
		ec := ly.pl.experts()
		for n := 0; n < ly.pl.nodes; n++ {
			if ec[n] < ec[n+1] && ly.rec != nil {
				ly.rec.Experts = append(ly.rec.Experts, cflowfmt.ExpertShard{Layer: l, Node: n, Experts: [2]int{ec[n], ec[n+1]}})
			}
		}
		for e := 0; e < int(h.NumExperts); e++ {
			if err := ly.emit(&op{kind: opBeginExpert, layer: l, expert: e}); err != nil {
				return err
			}
			for _, id := range []archspec.MatrixID{archspec.MatExpertGate, archspec.MatExpertUp, archspec.MatExpertDown} {
				m, err := ly.resolve(l, id, e)
				if err != nil {
					return err
				}
				for _, st := range stripes(m, shard{-1, 0, m.t.rows, 0, m.t.cols}) {
					for _, o := range st {
						if err := ly.tile(m, o); err != nil {
							return err
						}
					}
				}
			}
		}
		return nil
	}
}

// want returns the shape a matrix must have.
func (ly *layouter) want(l int, id archspec.MatrixID) (rows, cols int) {
	h := &ly.s.h
	d, hd := int(h.HiddenSize), 0
	if l < int(h.NumLayers) {
		hd = ly.s.headDim(l)
	}
	switch id {
	case archspec.MatQ:
		return int(h.NumHeads) * hd, d
	case archspec.MatK, archspec.MatV:
		return h.Geometry(ly.s.md).KVHeads(ly.s.full(l)) * hd, d
	case archspec.MatO:
		return d, int(h.NumHeads) * hd
	case archspec.MatGate, archspec.MatUp:
		return int(h.IntermediateSize), d
	case archspec.MatDown:
		return d, int(h.IntermediateSize)
	case archspec.MatRouter:
		return int(h.NumExperts), d
	case archspec.MatExpertGate, archspec.MatExpertUp:
		return int(h.ExpertIntermediateSize), d
	case archspec.MatExpertDown:
		return d, int(h.ExpertIntermediateSize)
	case archspec.MatEmbed, archspec.MatLMHead:
		return int(h.VocabSize), d
	}
	return 1, d // norms
}

// resolve finds a matrix's tensor and checks its shape.
func (ly *layouter) resolve(l int, id archspec.MatrixID, expert int) (*mat, error) {
	name := ly.nm.name(l, id, expert)
	t, err := ly.c.get(name)
	if err != nil {
		return nil, err
	}
	r, c := ly.want(l, id)
	if t.rows != r || t.cols != c {
		what := fmt.Sprintf("[%d, %d]", r, c)
		if r == 1 {
			what = fmt.Sprintf("[%d]", c)
		}
		return nil, fmt.Errorf("%s: tensor %s: shape %v, but %s implies %s", t.file, name, t.shape, ly.s.cfgFile, what)
	}
	m := &mat{id: id, layer: l, expert: expert, t: t}
	if expert < 0 {
		m.policy, m.shards = ly.pl.split(l, id, r, c)
		for _, sh := range m.shards {
			if sh.r1 > r || sh.c1 > c {
				return nil, fmt.Errorf("internal: %s shard rows %d..%d cols %d..%d outside its [%d, %d] tensor %s", id, sh.r0, sh.r1, sh.c0, sh.c1, r, c, name)
			}
		}
	}
	return m, nil
}

// stripes lists a shard's tiles: 128-row stripes from the shard's first
// row, each with its 256-column tiles from the shard's first column.
func stripes(m *mat, sh shard) [][]*op {
	var out [][]*op
	for r := sh.r0; r < sh.r1; r += tileRows {
		var st []*op
		for c := sh.c0; c < sh.c1; c += tileCols {
			o := &op{kind: opTile, t: m.t, r0: r, c0: c, expert: m.expert}
			o.th = cflowfmt.TileHeader{Layer: uint16(m.layer), Matrix: m.id, Expert: cflowfmt.NoExpert,
				RowOffset: uint32(r), ColOffset: uint16(c),
				Rows: uint16(min(tileRows, sh.r1-r)), Cols: uint16(min(tileCols, sh.c1-c))}
			if m.expert >= 0 {
				o.th.Expert = uint8(m.expert)
			}
			st = append(st, o)
		}
		out = append(out, st)
	}
	return out
}

func (ly *layouter) tile(m *mat, o *op) error {
	o.layer = m.layer
	o.q = cflowfmt.TileQuant(m.id, ly.s.h.QuantType)
	if o.q != quant.F32 {
		o.th.QuantGroup = quant.GroupSize
	}
	o.rel = ly.rel
	ly.rel += cflowfmt.AlignUp(int64(cflowfmt.TileSize(o.q, int(o.th.Rows), int(o.th.Cols))))
	ly.tiles++
	return ly.emit(o)
}

// norm emits a norm vector; the writer stores it as 1-row F32 tiles of at
// most 256 columns, which the relative offsets account for.
func (ly *layouter) norm(l int, id archspec.MatrixID) error {
	m, err := ly.resolve(l, id, -1)
	if err != nil {
		return err
	}
	start, t0 := ly.rel, ly.tiles
	o := &op{kind: opNorm, layer: l, t: m.t, rel: ly.rel, th: cflowfmt.TileHeader{Layer: uint16(l), Matrix: id}}
	for c := 0; c < m.t.cols; c += tileCols {
		ly.rel += cflowfmt.AlignUp(int64(cflowfmt.TileSize(quant.F32, 1, min(tileCols, m.t.cols-c))))
		ly.tiles++
	}
	ly.record(m, []shardSpan{{shard: m.shards[0], tiles: [2]int{t0, ly.tiles}, bytes: [2]int64{start, ly.rel}}})
	return ly.emit(o)
}

// single emits one matrix shard by shard.
func (ly *layouter) single(l int, id archspec.MatrixID) error {
	return ly.group(l, id)
}

// group emits matrices interleaved by output stripe. Replicated members go
// first as one interleaved run; then, node by node, the node's stripes of
// every split member, interleaved, so each node's share is one contiguous
// byte range.
func (ly *layouter) group(l int, ids ...archspec.MatrixID) error {
	ms := make([]*mat, len(ids))
	for i, id := range ids {
		m, err := ly.resolve(l, id, -1)
		if err != nil {
			return err
		}
		ms[i] = m
	}
	spans := make([][]shardSpan, len(ms))
	run := func(node int) error {
		type part struct {
			mi int
			st [][]*op
		}
		var parts []part
		for i, m := range ms {
			for _, sh := range m.shards {
				if sh.node == node {
					parts = append(parts, part{i, stripes(m, sh)})
					spans[i] = append(spans[i], shardSpan{shard: sh, tiles: [2]int{-1, -1}, bytes: [2]int64{-1, -1}})
				}
			}
		}
		for k := 0; ; k++ {
			any := false
			for _, p := range parts {
				if k >= len(p.st) {
					continue
				}
				any = true
				sp := &spans[p.mi][len(spans[p.mi])-1]
				for _, o := range p.st[k] {
					if sp.tiles[0] < 0 {
						sp.tiles[0], sp.bytes[0] = ly.tiles, ly.rel
					}
					if err := ly.tile(ms[p.mi], o); err != nil {
						return err
					}
					sp.tiles[1], sp.bytes[1] = ly.tiles, ly.rel
				}
			}
			if !any {
				return nil
			}
		}
	}
	for node := -1; node < ly.pl.nodes; node++ {
		if err := run(node); err != nil {
			return err
		}
	}
	for i, m := range ms {
		ly.record(m, spans[i])
	}
	return nil
}

type shardSpan struct {
	shard shard
	tiles [2]int
	bytes [2]int64
}

func (ly *layouter) record(m *mat, spans []shardSpan) {
	if ly.rec == nil {
		return
	}
	e := cflowfmt.MatrixShards{Layer: m.layer, Matrix: m.id.String(), Slot: ly.curSlot, Policy: m.policy}
	for _, sp := range spans {
		nodes := []int{sp.shard.node}
		if sp.shard.node < 0 {
			nodes = nodes[:0]
			for n := 0; n < ly.pl.nodes; n++ {
				nodes = append(nodes, n)
			}
		}
		for _, n := range nodes {
			e.Shards = append(e.Shards, cflowfmt.Shard{Node: n, Rows: [2]int{sp.shard.r0, sp.shard.r1}, Cols: [2]int{sp.shard.c0, sp.shard.c1},
				Tiles: sp.tiles, Bytes: sp.bytes})
		}
	}
	ly.rec.Matrices = append(ly.rec.Matrices, e)
}
