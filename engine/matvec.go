package engine

import (
	"fmt"

	"github.com/cflow-dev/cflow/archspec"
	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/quant"
)

// stripe is one unit of parallel work: consecutive tiles (in file order) of
// one matrix that share an output row range. Summing a stripe's tiles in
// file order inside one goroutine is what makes results independent of the
// thread count.
type stripe struct {
	tiles []*cflowfmt.MappedTile
	out   int // index of the output buffer (Q=0, K=1, V=2 / gate=0, up=1)
	row   int
	rows  int
}

// matPlan is a stream's tiles grouped into stripes, walked once per call:
// a fused Q/K/V or gate/up plan dispatches each stripe to its output by the
// tiles' MatrixID, so one prepared activation serves every output.
type matPlan struct {
	stripes []stripe
	bytes   int64 // on-disk bytes of every tile, for byte accounting
	q4      bool  // every tile is Q4_0: the case matvec_pairs.go pairs
	outDims []int
	inDim   int
	// numa splits the stripes by owning node; nil until a multi-node
	// engine first runs the plan (and always nil on the plain path).
	numa *numaPlan
}

// buildPlan groups tiles into stripes. outs maps a MatrixID to its output
// index; dims gives each output's length. Tiles outside their matrix, of an
// unexpected matrix, or with broken byte arrays are refused here so the hot
// path never bounds-checks a malformed file.
func buildPlan(what string, tiles []cflowfmt.MappedTile, outs map[archspec.MatrixID]int, dims []int, inDim int) (*matPlan, error) {
	p := &matPlan{outDims: dims, inDim: inDim, q4: len(tiles) > 0}
	for i := range tiles {
		t := &tiles[i]
		o, ok := outs[t.Matrix]
		if !ok {
			return nil, fmt.Errorf("%s: tile %d at offset %d is matrix %v, not expected here", what, i, t.Offset, t.Matrix)
		}
		if err := t.Tile.Check(); err != nil {
			return nil, fmt.Errorf("%s: tile %d at offset %d: %w", what, i, t.Offset, err)
		}
		if int(t.RowOffset)+t.Tile.Rows > dims[o] || int(t.ColOffset)+t.Tile.Cols > inDim {
			return nil, fmt.Errorf("%s: tile %d at offset %d (%v rows %d+%d, cols %d+%d) exceeds the %dx%d matrix",
				what, i, t.Offset, t.Matrix, t.RowOffset, t.Tile.Rows, t.ColOffset, t.Tile.Cols, dims[o], inDim)
		}
		p.bytes += int64(t.Bytes())
		p.q4 = p.q4 && t.Tile.Type == quant.Q4_0
		n := len(p.stripes)
		if n > 0 && p.stripes[n-1].out == o && p.stripes[n-1].row == int(t.RowOffset) && p.stripes[n-1].rows == t.Tile.Rows {
			p.stripes[n-1].tiles = append(p.stripes[n-1].tiles, t)
			continue
		}
		p.stripes = append(p.stripes, stripe{tiles: []*cflowfmt.MappedTile{t}, out: o, row: int(t.RowOffset), rows: t.Tile.Rows})
	}
	p.mergeOverlaps()
	return p, nil
}

// mergeOverlaps folds stripes whose output rows overlap (a shard plan may
// split a stripe's columns into non-adjacent runs) into one work item, so no
// two workers ever write the same output element.
func (p *matPlan) mergeOverlaps() {
	for {
		merged := false
		for i := 0; i < len(p.stripes) && !merged; i++ {
			for j := i + 1; j < len(p.stripes); j++ {
				a, b := &p.stripes[i], &p.stripes[j]
				if a.out != b.out || a.row+a.rows <= b.row || b.row+b.rows <= a.row {
					continue
				}
				lo, hi := min(a.row, b.row), max(a.row+a.rows, b.row+b.rows)
				a.tiles = append(a.tiles, b.tiles...)
				a.row, a.rows = lo, hi-lo
				p.stripes = append(p.stripes[:j], p.stripes[j+1:]...)
				merged = true
				break
			}
		}
		if !merged {
			return
		}
	}
}

// covers reports whether every output row of every output is written by
// some stripe; a file with a missing stripe is refused at load.
func (p *matPlan) covers() bool {
	seen := make([][]bool, len(p.outDims))
	for i, d := range p.outDims {
		seen[i] = make([]bool, d)
	}
	for _, s := range p.stripes {
		for _, t := range s.tiles {
			for r := 0; r < t.Tile.Rows; r++ {
				seen[s.out][int(t.RowOffset)+r] = true
			}
		}
	}
	for _, sv := range seen {
		for _, ok := range sv {
			if !ok {
				return false
			}
		}
	}
	return true
}

// matvec computes every output of plan p from one prepared activation
// through the worker's runner: split across the pool for a lone token,
// one stripe walk for every waiting column in a batch (matvec_batch.go).
// outs are zeroed first, by the worker itself (a column in its own work
// across the pool, not serially on the driver). Its operands are copied
// into the worker's request and matvecJob, so a decode step's ~90 matvecs
// allocate neither a closure nor their variadic outs.
func (w *worker) matvec(p *matPlan, a *actVec, outs ...[]float32) {
	for _, o := range outs {
		clear(o)
	}
	w.outs = append(w.outs[:0], outs...)
	w.req = request{p: p, a: a, outs: w.outs}
	w.run.submit(w)
	clear(w.outs)
	w.req = request{}
}

// matvecNow runs a lone token's matvec (outs already zeroed) across the
// pool, or across the NUMA nodes' groups.
func (w *worker) matvecNow(p *matPlan, a *actVec, outs [][]float32) {
	j := w.mv
	j.load(p, a, w.readHook, outs)
	defer j.reset()
	if w.numa != nil {
		w.numaMatvec(p, a, j.outs)
		return
	}
	w.walkStripes(j, p)
}

// walkStripes runs plan p, loaded into matvecJob j, across the pool: two
// stripes per item where the kernel pairs p's tiles (matvec_pairs.go),
// one otherwise.
func (e *Engine) walkStripes(j *matvecJob, p *matPlan) {
	if e.pairsPlan(p) {
		e.pool.Run(pairCount(len(p.stripes)), j.pairItem)
		return
	}
	e.pool.Run(len(p.stripes), j.item)
}

// matvecJob holds the operands of the matvec an engine is running (one at
// a time); item, bound once when the engine is built, is the pool's loop
// body over them, so posting a matvec allocates nothing.
type matvecJob struct {
	p    *matPlan
	a    *actVec
	outs [][]float32
	hook func(off int64, m archspec.MatrixID)
	item func(i int)
	// pairItem is the loop body that walks stripes i and i+h at once
	// (matvec_pairs.go).
	pairItem func(i int)
}

func newMatvecJob() *matvecJob {
	j := &matvecJob{}
	j.item = j.stripe
	j.pairItem = j.pair
	return j
}

// load copies a matvec's operands into the job.
func (j *matvecJob) load(p *matPlan, a *actVec, hook func(off int64, m archspec.MatrixID), outs [][]float32) {
	j.p, j.a, j.hook = p, a, hook
	j.outs = append(j.outs[:0], outs...)
}

// reset drops the finished matvec's operands, so the job keeps no output
// or activation alive.
func (j *matvecJob) reset() {
	clear(j.outs)
	j.outs = j.outs[:0]
	j.p, j.a, j.hook = nil, nil, nil
}

// stripe computes stripe i of the running matvec, asking for the metadata
// of the tiles ahead as it goes (prefetch.go).
func (j *matvecJob) stripe(i int) {
	p := j.p
	walkStripe(&p.stripes[i], stripeAhead(p.stripes, i), j.a, j.outs[p.stripes[i].out], j.hook)
}

// walkStripe adds stripe s's tiles, in file order, times activation a into
// y (indexed by output row), prefetching the descriptors ahead (next: the
// following stripe's tiles) and reporting each read to hook. The plain and
// the NUMA matvec both walk a stripe this way.
func walkStripe(s *stripe, next []*cflowfmt.MappedTile, a *actVec, y []float32, hook func(off int64, m archspec.MatrixID)) {
	for k, t := range s.tiles {
		tileAhead(s.tiles, k, next)
		if hook != nil {
			hook(t.Offset, t.Matrix)
		}
		dotTile(&t.Tile, a, int(t.ColOffset), y[t.RowOffset:])
	}
}
