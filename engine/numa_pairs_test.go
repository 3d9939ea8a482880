package engine

import (
	"slices"
	"sync"
	"testing"

	"github.com/cflow-dev/cflow/archspec"
	"github.com/cflow-dev/cflow/quant"
)

// TestNUMAPairedSameBits: on two simulated nodes, an engine on a pairing
// kernel walks each node's stripes two at a time (numaMatvec), with the
// bits of the one-stripe walk on the same topology, for every
// architecture: each step's logits and observation, and a one-column feed
// (a server with one client decoding), which takes the same walk.
func TestNUMAPairedSameBits(t *testing.T) {
	k := pairKernel(t)
	for _, c := range append(archCases(), wideCase()) {
		tm := c.build(quant.Q4_0, 23)
		paired := newNUMAEngineOn(t, tm.m, twoNodes(t), nil, k)
		single := newNUMAEngineOn(t, tm.m, twoNodes(t), nil, k)
		if paired.numa == nil || !paired.pairs {
			t.Fatalf("%s: not a pairing multi-node engine (numa %v, pairs %v)", c.name, paired.numa != nil, paired.pairs)
		}
		single.pairs = false
		stepsSameBits(t, c.name+" on 2 nodes", paired, single)
		qp, qs := paired.NewSequence(), single.NewSequence()
		for i, tok := range testTokens[:4] {
			a, err := paired.StepFeeds([]Feed{{Seq: qp, Toks: []int{tok}, Logits: true}})
			if err != nil {
				t.Fatal(err)
			}
			b, err := single.StepFeeds([]Feed{{Seq: qs, Toks: []int{tok}, Logits: true}})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(a[0], b[0]) {
				t.Fatalf("%s, token %d: one-column feed's logits differ with pairing on", c.name, i)
			}
		}
	}
}

// TestNUMAPairedReads: per node, a paired token reads the tiles the
// one-stripe walk reads, each once, as two forward streams, and in another
// order than the one-stripe walk (something was paired), and so does a
// one-column feed. The nodes' groups
// run at once, so reads are told apart by the node that owns the tile.
func TestNUMAPairedReads(t *testing.T) {
	k := pairKernel(t)
	tm := wideCase().build(quant.Q4_0, 5)
	paired := newNUMAEngineOn(t, tm.m, twoNodes(t), nil, k)
	single := newNUMAEngineOn(t, tm.m, twoNodes(t), nil, k)
	single.pairs = false
	type log struct {
		sync.Mutex
		offs []int64
	}
	record := func(e *Engine) *log {
		l := &log{}
		e.readHook = func(off int64, m archspec.MatrixID) {
			if m != archspec.MatEmbed {
				l.Lock()
				l.offs = append(l.offs, off)
				l.Unlock()
			}
		}
		return l
	}
	lp, ls := record(paired), record(single)
	for _, tok := range testTokens[:2] {
		lp.offs, ls.offs = lp.offs[:0], ls.offs[:0]
		if _, err := paired.Step(tok); err != nil {
			t.Fatal(err)
		}
		if _, err := single.Step(tok); err != nil {
			t.Fatal(err)
		}
		po, so := byNode(t, paired, lp.offs), byNode(t, single, ls.offs)
		differ := false
		for g := range po {
			if backwardReads(so[g], 1) != 0 || backwardReads(po[g], 2) != 0 {
				t.Fatalf("node %d: backward reads: one stripe %d, paired (two streams) %d", g, backwardReads(so[g], 1), backwardReads(po[g], 2))
			}
			differ = differ || !slices.Equal(po[g], so[g])
			slices.Sort(po[g])
			slices.Sort(so[g])
			if !slices.Equal(po[g], so[g]) {
				t.Fatalf("node %d: the paired walk reads other tiles than the one-stripe walk", g)
			}
		}
		if !differ {
			t.Fatal("paired reads come in the one-stripe order on every node: nothing was paired")
		}
	}
	// A one-column feed (a server with one client decoding) is paired too.
	lp.offs, ls.offs = lp.offs[:0], ls.offs[:0]
	for _, e := range []*Engine{paired, single} {
		if _, err := e.StepFeeds([]Feed{{Seq: e.NewSequence(), Toks: []int{5}, Logits: true}}); err != nil {
			t.Fatal(err)
		}
	}
	po, so := byNode(t, paired, lp.offs), byNode(t, single, ls.offs)
	if slices.EqualFunc(po, so, slices.Equal) {
		t.Fatal("a one-column feed reads in the one-stripe order: nothing was paired")
	}
}

// byNode splits a token's tile reads, in the order each was made, by the
// node whose stripes hold the tile (every non-expert plan's split).
func byNode(t *testing.T, e *Engine, offs []int64) [][]int64 {
	t.Helper()
	node := map[int64]int{}
	for _, p := range e.plans() {
		if p.numa == nil {
			t.Fatal("a plan the token ran was never split over the nodes")
		}
		for g, ss := range p.numa.nodes {
			for _, s := range ss {
				for _, tl := range s.tiles {
					node[tl.Offset] = g
				}
			}
		}
	}
	out := make([][]int64, len(e.numa.topo.Nodes))
	for _, off := range offs {
		g, ok := node[off]
		if !ok {
			t.Fatalf("a read at %d of no node's stripe", off)
		}
		out[g] = append(out[g], off)
	}
	return out
}
