package engine

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/engine/numa"
	"github.com/cflow-dev/cflow/engine/pool"
	"github.com/cflow-dev/cflow/internal/fileio"
)

// numaState is a multi-node engine's execution state: per node a pinned
// worker group (in e.pool.Groups()), node-local scratch, and who owns what.
type numaState struct {
	topo *numa.Topology
	// scratch[n][o] is node n's buffer for output o of a matvec (Q/K/V or
	// gate/up index), in node n's memory: each stripe accumulates its column
	// tiles there and publishes its rows once.
	scratch [][3][]float32
	// owner gives a non-expert tile's node (−1: replicated, split by the
	// engine); experts[l][x] is the node that runs layer l's expert x.
	owner   func(p *matPlan, o int, t *mtile) int
	experts [][]int
	arenas  []*numa.Arena
	jobs    []*pool.Job
	// batchScratch[n] is node n's partial sums for a batch's columns and
	// batchYs[n] its items' column views (numaMatvecLanes; Go heap, grown
	// on first use, not node-placed).
	batchScratch [][]float32
	batchYs      [][][]float32
}

// NUMAReport says how the engine runs on the machine's (or a simulated)
// NUMA topology, for run's summary line and for tests.
type NUMAReport struct {
	Nodes    int    // worker groups; 1 is the plain path
	Topology string // in CFLOW_NUMA_TOPOLOGY syntax
	Source   string // where the topology came from
	// PlanNodes is the node count the file's shard plan was cut for (0: no
	// plan). Mode is "plain", "in-place" (the plan matches: shards bound
	// where they lie in the mapping) or "copy" (re-planned at load: each
	// node's tiles copied into node-local memory).
	PlanNodes int
	Mode      string
	Threads   []int // pinned workers per node
	// Requests are placement calls made; Bytes the weight bytes they cover;
	// Skipped those naming memory nodes the machine lacks (a simulated
	// topology); Failed those the kernel refused.
	Requests, Applied, Skipped, Failed int
	Bytes                              int64
	// CopyBytes of the node copies (mode "copy") and CopyHugeBytes of them
	// on 2 MiB pages once copied: a multi-node decode reads the copies, not
	// the model mapping bench reports, and small pages cost it TLB misses.
	CopyBytes, CopyHugeBytes int64
	Notes                    []string
}

// NUMA reports the engine's topology, plan use and placement.
func (e *Engine) NUMA() NUMAReport { return e.numaRep }

// String is the one-line summary cflowc run prints.
func (r NUMAReport) String() string {
	var b strings.Builder
	if r.Nodes <= 1 {
		b.WriteString("numa: 1 node, plain path")
		if r.PlanNodes > 1 {
			fmt.Fprintf(&b, " (file planned for %d nodes; its plan is unused)", r.PlanNodes)
		}
	} else {
		fmt.Fprintf(&b, "numa: %d nodes %s (%s), threads %v; ", r.Nodes, r.Topology, r.Source, r.Threads)
		switch {
		case r.PlanNodes == 0:
			b.WriteString("file has no plan")
		default:
			fmt.Fprintf(&b, "file planned for %d", r.PlanNodes)
		}
		if r.Mode == "in-place" {
			b.WriteString(": shards bound in place (mbind)")
		} else {
			b.WriteString(": re-planned, tiles copied to node-local memory")
			if r.CopyBytes > 0 {
				fmt.Fprintf(&b, " (%s on 2 MiB pages)", fileio.HugePages{Huge: r.CopyHugeBytes, Size: r.CopyBytes})
			}
		}
		fmt.Fprintf(&b, "; %d ranges, %.1f MiB: %d applied, %d skipped (no such memory node), %d failed",
			r.Requests, float64(r.Bytes)/(1<<20), r.Applied, r.Skipped, r.Failed)
	}
	for _, n := range r.Notes {
		b.WriteString("; " + n)
	}
	return b.String()
}

func (r *NUMAReport) note(format string, a ...any) {
	r.Notes = append(r.Notes, fmt.Sprintf(format, a...))
}

// startPool starts the plain pool on one node, or the NUMA groups and
// placement on several.
func (e *Engine) startPool(opt Options, threads int) error {
	topo := opt.NUMA
	if topo == nil {
		var err error
		if topo, err = numa.Detect(); err != nil {
			return fmt.Errorf("runtime: %w", err)
		}
	} else if topo.Source == "" {
		topo.Source = "Options"
	}
	rep := NUMAReport{Nodes: len(topo.Nodes), Topology: topo.String(), Source: topo.Source, Mode: "plain"}
	fp, ok, err := cflowfmt.ReadNUMAPlan(e.m.Meta)
	switch {
	case err != nil:
		rep.note("shard plan unreadable (%v)", err)
		fp = nil
	case ok:
		rep.PlanNodes = fp.Nodes
	}
	if len(topo.Nodes) <= 1 {
		e.pool = pool.New(threads)
		e.numaRep = rep
		return nil
	}
	e.numaRep = rep
	if err := e.startNUMA(opt, topo, fp); err != nil {
		if e.pool != nil {
			e.pool.Close()
		}
		e.closeNUMA()
		return err
	}
	return nil
}

// startNUMA starts one pinned group per node, decides who owns which
// tiles (the file's plan when it matches the node count, else a re-plan),
// places the weights and builds every non-expert matrix's node split.
func (e *Engine) startNUMA(opt Options, topo *numa.Topology, fp *cflowfmt.NUMAPlan) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer e.loadFaultAsError(&err)
	rep := &e.numaRep
	M := len(topo.Nodes)
	st := &numaState{topo: topo, scratch: make([][3][]float32, M), jobs: make([]*pool.Job, M)}
	e.numa = st
	allowed, err := numa.Allowed()
	if err != nil {
		return fmt.Errorf("runtime: %w", err)
	}
	ok := map[int]bool{}
	for _, c := range allowed {
		ok[c] = true
	}
	rep.Threads = topo.SplitThreads(opt.Threads)
	// Every pinned worker spins on its own thread and needs its own P, and
	// the caller one more; fewer Ps would make workers and caller trade Ps
	// through thread hand-offs on every matvec.
	need := 1
	for _, n := range rep.Threads {
		need += n
	}
	if have := runtime.GOMAXPROCS(0); have < need {
		runtime.GOMAXPROCS(need)
		rep.note("GOMAXPROCS raised from %d to %d (one per pinned worker, one for the caller)", have, need)
	}
	var groups []*pool.Pool
	defer func() {
		if e.pool == nil { // a group failed to start: stop the others
			for _, g := range groups {
				g.Close()
			}
		}
	}()
	for i, n := range topo.Nodes {
		var cpus []int
		for _, c := range n.CPUs {
			if ok[c] {
				cpus = append(cpus, c)
			}
		}
		var pin func() error
		switch {
		case len(cpus) == 0:
			rep.note("node %d's CPUs %s are not available to this process (allowed %s): its workers run unpinned",
				n.ID, numa.FormatCPUList(n.CPUs), numa.FormatCPUList(allowed))
		default:
			if len(cpus) < len(n.CPUs) {
				rep.note("node %d pinned to CPUs %s only (of %s)", n.ID, numa.FormatCPUList(cpus), numa.FormatCPUList(n.CPUs))
			}
			pin = func() error { return numa.Pin(cpus) }
		}
		g, err := pool.NewGroup(rep.Threads[i], pin)
		if err != nil {
			return fmt.Errorf("runtime: node %d: %w", n.ID, err)
		}
		groups = append(groups, g)
	}
	e.pool = pool.NewFront(groups)
	placer := opt.Placer
	if placer == nil {
		placer = numa.NewKernel()
	}
	pl := &placement{e: e, placer: placer, base: mappingBase(e.m)}
	matched := false
	if fp != nil && fp.Nodes == M {
		owners, reqs, err := e.fileOwners(fp)
		if err != nil {
			rep.note("file plan does not match its tiles (%v): re-planned", err)
		} else {
			matched = true
			st.owner = func(_ *matPlan, _ int, t *mtile) int { return owners[t.Offset] }
			pl.inPlace = reqs
		}
	}
	if !matched {
		st.owner = replanOwner(M)
	}
	st.experts = e.expertOwners(fp, matched, M)
	for _, p := range e.plans() {
		p.numa = st.split(p, M)
	}
	if matched {
		rep.Mode = "in-place"
		if pl.base == 0 {
			rep.note("tiles are not in one file mapping: in-place placement skipped")
		} else {
			pl.bindInPlace()
		}
	} else {
		rep.Mode = "copy"
		if err := pl.copyTiles(); err != nil {
			return err
		}
	}
	pl.bindExperts(st.experts)
	return pl.scratch()
}

// plans lists every non-expert matrix plan once (a tied LM head is the
// embedding's plan).
func (e *Engine) plans() []*matPlan {
	var out []*matPlan
	for _, lp := range e.layers {
		for _, p := range []*matPlan{lp.qkv, lp.o, lp.gateUp, lp.down, lp.router} {
			if p != nil {
				out = append(out, p)
			}
		}
	}
	return append(out, e.lm)
}

// closeNUMA releases node-local memory after the groups have stopped.
func (e *Engine) closeNUMA() {
	if e.numa == nil {
		return
	}
	for _, a := range e.numa.arenas {
		a.Free()
	}
	e.numa.arenas = nil
}

// onNode runs f(0..n−1) on node g's workers and waits: load-time work
// (copies, first touches) done by the threads that will read the memory.
// A worker's memory fault (the file truncated under the copy) is re-raised
// in the caller, where startNUMA turns it into New's error.
func (e *Engine) onNode(g, n int, f func(i int)) {
	gp := e.pool.Groups()[g]
	j := gp.Post(n, f)
	gp.Finish(j)
	j.Raise()
}
