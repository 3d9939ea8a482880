package convert

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// shardTensors reads a safetensors file's header by hand (8-byte length,
// JSON) and returns its tensor names.
func shardTensors(t *testing.T, path string) []string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var hdr map[string]json.RawMessage
	if err := json.Unmarshal(raw[8:8+binary.LittleEndian.Uint64(raw)], &hdr); err != nil {
		t.Fatal(err)
	}
	var names []string
	for n := range hdr {
		if n != "__metadata__" {
			names = append(names, n)
		}
	}
	return names
}

// TestSynthShardsNeverEmpty (issue 19 follow-up): dev synth --shards N
// writes exactly N shard files, each holding at least one tensor and all
// tensors once, for every N up to the tensor count (the ceil(n/N)-per-shard
// split left the last shards empty, e.g. 8 shards of the tiny geometry's
// 21 tensors); N above the count is ErrTooManyShards with nothing written.
func TestSynthShardsNeverEmpty(t *testing.T) {
	g, _ := GeometryByName("tiny")
	tensors := 1 + 9*g.Layers + 2 // embedding, 9 per layer, final norm, lm_head
	for _, n := range []int{2, 8, tensors - 1, tensors} {
		dir := filepath.Join(t.TempDir(), "ck")
		if err := Synthesize(dir, SynthOptions{Geometry: g, Seed: 1, Shards: n}); err != nil {
			t.Fatalf("%d shards: %v", n, err)
		}
		seen := map[string]bool{}
		for i := 1; i <= n; i++ {
			names := shardTensors(t, filepath.Join(dir, fmt.Sprintf("model-%05d-of-%05d.safetensors", i, n)))
			if len(names) == 0 {
				t.Fatalf("%d shards: shard %d holds no tensor", n, i)
			}
			for _, name := range names {
				if seen[name] {
					t.Fatalf("%d shards: %s twice", n, name)
				}
				seen[name] = true
			}
		}
		if len(seen) != tensors {
			t.Fatalf("%d shards hold %d tensors, want %d", n, len(seen), tensors)
		}
		if extra, _ := filepath.Glob(filepath.Join(dir, fmt.Sprintf("model-*-of-%05d.safetensors", n))); len(extra) != n {
			t.Fatalf("%d shards: %d shard files", n, len(extra))
		}
	}
	dir := filepath.Join(t.TempDir(), "ck")
	err := Synthesize(dir, SynthOptions{Geometry: g, Seed: 1, Shards: tensors + 1})
	if !errors.Is(err, ErrTooManyShards) {
		t.Fatalf("%d shards of %d tensors: %v, want ErrTooManyShards", tensors+1, tensors, err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("refused synth created %s", dir)
	}
}
