package convert

import (
	"context"
	"fmt"
	"sync"

	"github.com/cflow-dev/cflow/archspec"
	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/internal/fileio"
	"github.com/cflow-dev/cflow/quant"
)

// sink is a format writer as the emitter drives it: region ops (slot,
// stage, vocabulary, expert starts) go through begin, tiles and norms
// straight to the writer. formats.go adapts cflowfmt.Writer and
// vflowfmt.Writer.
type sink interface {
	begin(o *op) error
	WriteTileSum(th cflowfmt.TileHeader, t *quant.Tile, sum uint64) error
	WriteNorm(layer int, m archspec.MatrixID, v []float32) error
	Offset() int64
	Close() error
	Abort()
}

// job is a run of ops travelling through the pipeline: either one
// non-tile op, or the consecutive tiles of one stripe of one matrix (same
// tensor, same rows), which a worker quantizes row by row so the
// checkpoint is read sequentially. The writer waits on done and writes
// them in sequence.
type job struct {
	ops   []*op
	tiles []quant.Tile
	sums  []uint64 // each tile's cflowfmt.TileSum, hashed by the worker
	bufs  []*[]byte
	err   error // a memory fault while reading the checkpoint, set before done closes
	done  chan struct{}
}

const maxTileBytes = quant.MaxTileRows * quant.MaxTileCols * 4

// emitter runs the ordered parallel pipeline: one producer walks the
// layout, `workers` goroutines convert and quantize stripes, and the
// calling goroutine writes results strictly in layout order. At most
// `window` jobs are in flight, which bounds memory to a few MB per worker
// whatever the model size.
type emitter struct {
	ly      *layouter
	w       sink
	workers int
	window  int
	lastUse map[*tensor]int // seq of the last op reading each tensor
	// locate names the input file and offset of a faulting address
	// (checkpoint.locate), for the fault guards of workers and writer.
	locate   func(addr uintptr) (string, int64)
	progress func(inputBytes int64)
	tileBufs sync.Pool // maxTileBytes buffers, recycled once a job is written

	slotStart int64
}

// sameStripe reports whether tile op o continues j's stripe.
func (j *job) sameStripe(o *op) bool {
	p := j.ops[0]
	return p.kind == opTile && p.t == o.t && p.r0 == o.r0 && p.th.Rows == o.th.Rows && p.th.Matrix == o.th.Matrix
}

func (e *emitter) run(ctx context.Context) error {
	e.tileBufs.New = func() any { b := make([]byte, maxTileBytes); return &b }
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	order := make(chan *job, e.window)
	jobs := make(chan *job, e.window)
	var prodErr error
	go func() {
		defer close(order)
		defer close(jobs)
		var pending *job
		send := func(j *job) error {
			select {
			case order <- j:
			case <-ctx.Done():
				return ctx.Err()
			}
			if j.ops[0].kind != opTile {
				close(j.done)
				return nil
			}
			select {
			case jobs <- j:
			case <-ctx.Done():
				return ctx.Err()
			}
			return nil
		}
		flush := func() error {
			if pending == nil {
				return nil
			}
			j := pending
			pending = nil
			return send(j)
		}
		e.ly.visit = func(o *op) error {
			if o.kind == opTile && pending != nil && pending.sameStripe(o) {
				pending.ops = append(pending.ops, o)
				return nil
			}
			if err := flush(); err != nil {
				return err
			}
			j := &job{ops: []*op{o}, done: make(chan struct{})}
			if o.kind == opTile {
				pending = j
				return nil
			}
			return send(j)
		}
		prodErr = e.ly.run()
		if prodErr == nil {
			prodErr = flush()
		}
	}()
	var wg sync.WaitGroup
	for i := 0; i < e.workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			scratch := make([]float32, quant.MaxTileRows*quant.MaxTileCols)
			for j := range jobs {
				// A fault (the input truncated under us) fails this job;
				// the writer reports the first failed job in layout order.
				j.err = fileio.GuardFaultIn(e.locate, func() error { encodeJob(j, scratch, &e.tileBufs); return nil })
				close(j.done)
			}
		}()
	}
	var werr error
	for j := range order {
		if werr != nil {
			continue // drain; a worker may still own j
		}
		select {
		case <-j.done:
			werr = j.err
		case <-ctx.Done():
			// The producer may have stopped before handing j to a worker.
			werr = ctx.Err()
			continue
		}
		for i, o := range j.ops {
			if werr == nil {
				werr = e.write(j, i, o)
			}
		}
		for _, b := range j.bufs {
			e.tileBufs.Put(b)
		}
		if werr != nil {
			cancel()
		}
	}
	wg.Wait()
	if werr != nil {
		return werr
	}
	if prodErr != nil {
		return prodErr
	}
	return ctx.Err()
}

// encodeJob quantizes a stripe's tiles into pooled buffers and hashes
// each for the file's checksums, so the writer only copies bytes.
func encodeJob(j *job, scratch []float32, bufs *sync.Pool) {
	quantizeJob(j, scratch, bufs)
	ths := make([]cflowfmt.TileHeader, len(j.ops))
	for i, o := range j.ops {
		ths[i] = o.th
	}
	j.sums = make([]uint64, len(j.tiles))
	cflowfmt.TileSums(ths, j.tiles, j.sums)
}

func quantizeJob(j *job, scratch []float32, bufs *sync.Pool) {
	j.tiles = make([]quant.Tile, len(j.ops))
	j.bufs = make([]*[]byte, len(j.ops))
	for i, o := range j.ops {
		rows, cols := int(o.th.Rows), int(o.th.Cols)
		j.bufs[i] = bufs.Get().(*[]byte)
		sb, db := o.q.ScaleBytes(rows, cols), o.q.DataBytes(rows, cols)
		b := *j.bufs[i]
		j.tiles[i] = quant.Tile{Type: o.q, Rows: rows, Cols: cols, Scales: b[:sb:sb], Data: b[sb : sb+db : sb+db]}
	}
	if o := j.ops[0]; o.t.dt == dtF16 && o.q != quant.F32 {
		encodeF16Stripe(j)
		return
	}
	for i, o := range j.ops {
		t := &j.tiles[i]
		if o.t.carries(t, o.c0) {
			o.t.copyBlocks(t, o.r0, o.c0)
			continue
		}
		w := scratch[:t.Rows*t.Cols]
		o.t.block(w, o.r0, t.Rows, o.c0, t.Cols)
		quant.EncodeInto(t, w, t.Cols)
	}
}

// encodeF16Stripe walks the stripe row by row across all its tiles, so
// each checkpoint row is read front to back once.
func encodeF16Stripe(j *job) {
	for r := 0; r < int(j.ops[0].th.Rows); r++ {
		for i, oi := range j.ops {
			quant.EncodeRowF16(&j.tiles[i], r, oi.t.rowF16(oi.r0+r, oi.c0, j.tiles[i].Cols))
		}
	}
}

// write replays one op on the writer. It checks every non-expert tile's
// offset from its slot start against the layout's precomputed one, which
// the NUMA plan (written before any tile) relies on.
func (e *emitter) write(j *job, i int, o *op) error {
	switch o.kind {
	case opBeginSlot, opMark:
		if err := e.w.begin(o); err != nil {
			return err
		}
		// The writer pads before each tile, so the region's first tile
		// starts at the next aligned offset.
		e.slotStart = cflowfmt.AlignUp(e.w.Offset())
		return nil
	case opEndSlot, opBeginExpert, opBeginStage, opBeginVocab:
		return e.w.begin(o)
	case opNorm:
		if err := e.checkRel(o); err != nil {
			return err
		}
		var v []float32
		if err := fileio.GuardFaultIn(e.locate, func() error { v = o.t.vector(); return nil }); err != nil {
			return err
		}
		if err := e.w.WriteNorm(o.layer, o.th.Matrix, v); err != nil {
			return fmt.Errorf("tensor %s: %w", o.t.name, err)
		}
		e.done(o, o.t.bytes())
		return nil
	}
	if o.expert < 0 {
		if err := e.checkRel(o); err != nil {
			return err
		}
	}
	if err := e.w.WriteTileSum(o.th, &j.tiles[i], j.sums[i]); err != nil {
		return fmt.Errorf("tensor %s rows %d.. cols %d..: %w", o.t.name, o.r0, o.c0, err)
	}
	e.done(o, int64(o.th.Rows)*int64(o.th.Cols)*int64(o.t.dt.size()))
	return nil
}

func (e *emitter) checkRel(o *op) error {
	if got := cflowfmt.AlignUp(e.w.Offset()) - e.slotStart; got != o.rel {
		return fmt.Errorf("internal: %s tile at slot offset %d, the NUMA plan expected %d", o.th.Matrix, got, o.rel)
	}
	return nil
}

func (e *emitter) done(o *op, n int64) {
	if e.lastUse[o.t] == o.seq {
		release(o.t.data)
	}
	if e.progress != nil {
		e.progress(n)
	}
}
