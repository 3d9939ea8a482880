package convert

import (
	"context"
	"fmt"
	"sync"

	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/quant"
)

// sink is a format writer as the emitter drives it: region ops (slot,
// stage, vocabulary, expert starts) go through begin, tiles and norms
// straight to the writer. formats.go adapts cflowfmt.Writer and
// vflowfmt.Writer.
type sink interface {
	begin(o *op) error
	WriteTile(th cflowfmt.TileHeader, t *quant.Tile) error
	WriteNorm(layer int, m cflowfmt.MatrixID, v []float32) error
	Offset() int64
	Close() error
	Abort()
}

// job is a tile op travelling through the pipeline: workers fill tile, the
// writer waits on done and writes it in sequence.
type job struct {
	o    *op
	tile quant.Tile
	buf  *[]byte
	done chan struct{}
}

const maxTileBytes = quant.MaxTileRows * quant.MaxTileCols * 4

var tileBufs = sync.Pool{New: func() any { b := make([]byte, maxTileBytes); return &b }}

// emitter runs the ordered parallel pipeline: one producer walks the
// layout, `workers` goroutines convert and quantize tiles, and the calling
// goroutine writes results strictly in layout order. At most `window` tiles
// are in flight, which bounds memory to a few MB whatever the model size.
type emitter struct {
	ly       *layouter
	w        sink
	workers  int
	window   int
	lastUse  map[*tensor]int // seq of the last op reading each tensor
	progress func(inputBytes int64)

	slotStart int64
}

func (e *emitter) run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	order := make(chan *job, e.window)
	jobs := make(chan *job, e.window)
	var prodErr error
	go func() {
		defer close(order)
		defer close(jobs)
		e.ly.visit = func(o *op) error {
			j := &job{o: o, done: make(chan struct{})}
			select {
			case order <- j:
			case <-ctx.Done():
				return ctx.Err()
			}
			if o.kind != opTile {
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
		prodErr = e.ly.run()
	}()
	var wg sync.WaitGroup
	for i := 0; i < e.workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			scratch := make([]float32, quant.MaxTileRows*quant.MaxTileCols)
			for j := range jobs {
				encodeJob(j, scratch)
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
		case <-ctx.Done():
			// The producer may have stopped before handing j to a worker.
			werr = ctx.Err()
			continue
		}
		werr = e.write(j)
		if j.buf != nil {
			tileBufs.Put(j.buf)
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

func encodeJob(j *job, scratch []float32) {
	o := j.o
	rows, cols := int(o.th.Rows), int(o.th.Cols)
	j.buf = tileBufs.Get().(*[]byte)
	sb, db := o.q.ScaleBytes(rows, cols), o.q.DataBytes(rows, cols)
	b := *j.buf
	j.tile = quant.Tile{Type: o.q, Rows: rows, Cols: cols, Scales: b[:sb:sb], Data: b[sb : sb+db : sb+db]}
	if o.t.dt == dtF16 && o.q != quant.F32 {
		encodeF16(&j.tile, o.t, o.r0, o.c0)
		return
	}
	w := scratch[:rows*cols]
	o.t.block(w, o.r0, rows, o.c0, cols)
	encodeTile(&j.tile, w)
}

// write replays one op on the writer. It checks every non-expert tile's
// offset from its slot start against the layout's precomputed one, which
// the NUMA plan (written before any tile) relies on.
func (e *emitter) write(j *job) error {
	o := j.o
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
		if err := e.w.WriteNorm(o.layer, o.th.Matrix, o.t.vector()); err != nil {
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
	if err := e.w.WriteTile(o.th, &j.tile); err != nil {
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
