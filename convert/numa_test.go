package convert

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/cflow-dev/cflow/archspec"
	"github.com/cflow-dev/cflow/cflowfmt"
	"github.com/cflow-dev/cflow/quant"
)

// TestNUMAPlanInvariants converts three architectures for 1–4 nodes and
// checks the stored plan against the file itself:
//   - coverage: each split matrix's shards tile its shape exactly once;
//     replicated ones give every node the whole matrix;
//   - contiguity: the bytes of a node's shard hold only that node's tiles,
//     and every tile of the node's shard lies inside them;
//   - balance: heads, stripes, vocab stripes and experts differ by ≤ 1
//     between nodes;
//   - portability: the file opens and passes Check whatever N was.
func TestNUMAPlanInvariants(t *testing.T) {
	for _, arch := range []string{"llama", "gemma4", "arch2_4_combined"} {
		fx := writeFixture(t, filepath.Join(t.TempDir(), arch), arch, "F16")
		for n := 1; n <= 4; n++ {
			out := filepath.Join(t.TempDir(), "m.cflow")
			if _, err := Convert(context.Background(), fx.dir, out, Options{Quant: quant.Q4_0, NUMANodes: n}); err != nil {
				t.Fatalf("%s N=%d: %v", arch, n, err)
			}
			f := openChecked(t, out)
			checkTilesAgainstTruth(t, fx, walk(t, f), quant.Q4_0)
			p, ok, err := cflowfmt.ReadNUMAPlan(f.Meta)
			if err != nil || !ok || p.Nodes != n {
				t.Fatalf("%s N=%d: plan %v %v %v", arch, n, p, ok, err)
			}
			checkPlan(t, f, p, arch)
			if testing.Verbose() && n == 3 && arch == "gemma4" {
				for _, ms := range p.Matrices[:12] {
					t.Logf("%+v", ms)
				}
			}
		}
	}
}

func checkPlan(t *testing.T, f *cflowfmt.File, p *cflowfmt.NUMAPlan, arch string) {
	t.Helper()
	h := &f.Header
	L := int(h.NumLayers)
	slotTiles := func(l, s int) []cflowfmt.MappedTile {
		var out []cflowfmt.MappedTile
		f.Walk(func(loc cflowfmt.Loc, mt *cflowfmt.MappedTile) error {
			if loc.Layer == l && loc.Slot == s && loc.Expert < 0 {
				out = append(out, *mt)
			}
			return nil
		})
		return out
	}
	type key struct {
		l int
		m string
	}
	seen := map[key]bool{}
	for _, ms := range p.Matrices {
		seen[key{ms.Layer, ms.Matrix}] = true
		var rows, cols int
		tiles := slotTiles(ms.Layer, ms.Slot)
		var mine []cflowfmt.MappedTile
		for _, mt := range tiles {
			if mt.Matrix.String() == ms.Matrix {
				mine = append(mine, mt)
				rows = max(rows, int(mt.RowOffset)+int(mt.TileHeader.Rows))
				cols = max(cols, int(mt.ColOffset)+int(mt.TileHeader.Cols))
			}
		}
		if len(mine) == 0 {
			t.Fatalf("%s: plan entry %+v has no tiles", arch, ms)
		}
		start := f.Table[ms.Layer][ms.Slot].Offset
		owner := func(mt cflowfmt.MappedTile) int { // node whose shard holds the tile, -1 if none
			for _, sh := range ms.Shards {
				if int(mt.RowOffset) >= sh.Rows[0] && int(mt.RowOffset)+int(mt.TileHeader.Rows) <= sh.Rows[1] &&
					int(mt.ColOffset) >= sh.Cols[0] && int(mt.ColOffset)+int(mt.TileHeader.Cols) <= sh.Cols[1] {
					return sh.Node
				}
			}
			return -1
		}
		area := 0
		perNode := map[int]int{}
		for _, sh := range ms.Shards {
			perNode[sh.Node]++
			a := (sh.Rows[1] - sh.Rows[0]) * (sh.Cols[1] - sh.Cols[0])
			if ms.Policy == cflowfmt.PolicyReplicated {
				if a != rows*cols {
					t.Fatalf("%s: replicated %s layer %d: node %d gets %v×%v", arch, ms.Matrix, ms.Layer, sh.Node, sh.Rows, sh.Cols)
				}
				continue
			}
			area += a
			if sh.Cols[0]%32 != 0 {
				t.Fatalf("%s: %s layer %d cut at column %d", arch, ms.Matrix, ms.Layer, sh.Cols[0])
			}
			// Contiguity, both directions.
			lo, hi := start+sh.Bytes[0], start+sh.Bytes[1]
			for _, mt := range tiles {
				in := mt.Offset >= lo && mt.Offset < hi
				if mt.Matrix.String() == ms.Matrix && owner(mt) == sh.Node && !in {
					t.Fatalf("%s: %s layer %d node %d tile at %d outside its range [%d,%d)", arch, ms.Matrix, ms.Layer, sh.Node, mt.Offset, lo, hi)
				}
				if in && mt.Matrix.IsNorm() {
					t.Fatalf("%s: norm tile inside node %d's %s range", arch, sh.Node, ms.Matrix)
				}
			}
			for _, other := range p.Matrices {
				if other.Layer != ms.Layer || other.Slot != ms.Slot {
					continue
				}
				for _, mt := range tiles {
					if mt.Matrix.String() != other.Matrix || mt.Offset < lo || mt.Offset >= hi {
						continue
					}
					for _, osh := range other.Shards {
						if other.Policy != cflowfmt.PolicyReplicated && osh.Node != sh.Node &&
							int(mt.RowOffset) >= osh.Rows[0] && int(mt.RowOffset) < osh.Rows[1] &&
							int(mt.ColOffset) >= osh.Cols[0] && int(mt.ColOffset) < osh.Cols[1] {
							t.Fatalf("%s: node %d's %s range holds node %d's %s tile", arch, sh.Node, ms.Matrix, osh.Node, other.Matrix)
						}
					}
					if other.Policy == cflowfmt.PolicyReplicated {
						t.Fatalf("%s: node %d's %s range holds replicated %s", arch, sh.Node, ms.Matrix, other.Matrix)
					}
				}
			}
		}
		for _, mt := range mine {
			if owner(mt) == -1 && ms.Policy != cflowfmt.PolicyReplicated {
				t.Fatalf("%s: %s layer %d tile %+v in no shard", arch, ms.Matrix, ms.Layer, mt.TileHeader)
			}
		}
		if ms.Policy != cflowfmt.PolicyReplicated && area != rows*cols {
			t.Fatalf("%s: %s layer %d: shards cover %d of %d weights", arch, ms.Matrix, ms.Layer, area, rows*cols)
		}
		if ms.Policy == cflowfmt.PolicyReplicated && len(ms.Shards) != p.Nodes {
			t.Fatalf("%s: replicated %s lists %d nodes", arch, ms.Matrix, len(ms.Shards))
		}
		// Balance in the unit the policy splits by.
		unit := map[string]int{cflowfmt.PolicyColumn: 128, cflowfmt.PolicyVocab: 128, cflowfmt.PolicyRow: 128}[ms.Policy]
		if ms.Matrix == "q" || ms.Matrix == "k" || ms.Matrix == "v" {
			unit = h.Geometry(f.Meta).HeadDimFor(f.Meta.Bytes(cflowfmt.KeyLayerKinds) == nil || f.Meta.Bytes(cflowfmt.KeyLayerKinds)[ms.Layer] == archspec.LayerFull)
		}
		if ms.Matrix == "o" {
			continue // follows the Q heads, rounded to 32 columns
		}
		if unit > 0 {
			lo, hi := 1<<30, 0
			for _, sh := range ms.Shards {
				n := (sh.Rows[1] - sh.Rows[0] + unit - 1) / unit
				if ms.Policy == cflowfmt.PolicyRow {
					n = (sh.Cols[1] - sh.Cols[0] + unit - 1) / unit
				}
				lo, hi = min(lo, n), max(hi, n)
			}
			if len(ms.Shards) < p.Nodes {
				lo = 0
			}
			if hi-lo > 1 {
				t.Fatalf("%s: %s layer %d unbalanced over %d nodes: %d..%d units", arch, ms.Matrix, ms.Layer, p.Nodes, lo, hi)
			}
		}
	}
	for l := 0; l < L; l++ {
		for _, m := range []string{"attn_norm", "q", "k", "o"} {
			if !seen[key{l, m}] {
				t.Fatalf("%s: plan misses layer %d %s", arch, l, m)
			}
		}
	}
	if !seen[key{L, "embed"}] {
		t.Fatalf("%s: plan misses the embedding", arch)
	}
	if h.NumExperts > 0 {
		for l := 0; l < L; l++ {
			cnt := map[int]int{}
			next := 0
			for _, es := range p.Experts {
				if es.Layer == l {
					if es.Experts[0] != next {
						t.Fatalf("%s: layer %d experts not contiguous: %+v", arch, l, p.Experts)
					}
					next = es.Experts[1]
					cnt[es.Node] = es.Experts[1] - es.Experts[0]
				}
			}
			if next != int(h.NumExperts) {
				t.Fatalf("%s: layer %d experts cover %d of %d", arch, l, next, h.NumExperts)
			}
			lo, hi := 1<<30, 0
			for n := 0; n < p.Nodes; n++ {
				lo, hi = min(lo, cnt[n]), max(hi, cnt[n])
			}
			if hi-lo > 1 {
				t.Fatalf("%s: layer %d experts unbalanced: %v", arch, l, cnt)
			}
		}
	}
}
