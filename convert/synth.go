package convert

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/cflow-dev/cflow/internal/fileio"
	"github.com/cflow-dev/cflow/quant"
)

// Geometry is a Llama-shaped model size for synthetic checkpoints.
type Geometry struct {
	Hidden, Layers, FFN, Heads, KVHeads, Vocab int
}

// geometries are the named sizes `cflowc dev synth --geometry` accepts:
// "tinyllama" is TinyLlama-1.1B (2.2 GB in f16), the throughput benchmark;
// "tiny" is for quick checks.
var geometries = map[string]Geometry{
	"tinyllama": {Hidden: 2048, Layers: 22, FFN: 5632, Heads: 32, KVHeads: 4, Vocab: 32000},
	"tiny":      {Hidden: 256, Layers: 2, FFN: 688, Heads: 8, KVHeads: 2, Vocab: 1000},
}

// SynthOptions describe a synthetic Llama checkpoint.
type SynthOptions struct {
	Geometry Geometry
	DType    string // F16 (default), BF16 or F32
	Seed     uint64
	Shards   int // > 1 writes model-0000i-of-0000n.safetensors and an index
	// Progress, when set, is called as weight bytes are written with the
	// bytes done so far and the total (the CLI draws a bar from it).
	Progress func(done, total int64)
}

// withProgress makes every tensor's Fill report the bytes it writes.
func withProgress(ts []STTensor, report func(done, total int64)) {
	if report == nil {
		return
	}
	var total, done int64
	for i := range ts {
		n, _ := ts[i].size()
		total += n
	}
	for i := range ts {
		fill := ts[i].Fill
		ts[i].Fill = func(w io.Writer) error {
			return fill(writerFunc(func(p []byte) (int, error) {
				n, err := w.Write(p)
				done += int64(n)
				report(done, total)
				return n, err
			}))
		}
	}
}

type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// Synthesize writes config.json and seeded random weights for an untied
// LlamaForCausalLM into dir. Values are uniform-magnitude random numbers
// in ±[2^-7, 2^-3) built directly from PRNG bits (norm weights near 1), so
// gigabytes are produced at disk speed; they exercise conversion
// throughput, not model quality.
func Synthesize(dir string, o SynthOptions) error {
	g := o.Geometry
	if g.Hidden <= 0 || g.Layers <= 0 || g.Heads <= 0 || g.KVHeads <= 0 || g.Hidden%g.Heads != 0 || g.FFN <= 0 || g.Vocab <= 0 {
		return fmt.Errorf("synth: bad geometry %+v", g)
	}
	dt, err := synthDType(o.DType)
	if err != nil {
		return err
	}
	hd := g.Hidden / g.Heads
	var ts []STTensor
	add := func(name string, norm bool, shape ...int) {
		ts = append(ts, randomTensor(name, dt, o.Seed, norm, shape...))
	}
	add("model.embed_tokens.weight", false, g.Vocab, g.Hidden)
	for l := 0; l < g.Layers; l++ {
		p := fmt.Sprintf("model.layers.%d.", l)
		add(p+"input_layernorm.weight", true, g.Hidden)
		add(p+"self_attn.q_proj.weight", false, g.Heads*hd, g.Hidden)
		add(p+"self_attn.k_proj.weight", false, g.KVHeads*hd, g.Hidden)
		add(p+"self_attn.v_proj.weight", false, g.KVHeads*hd, g.Hidden)
		add(p+"self_attn.o_proj.weight", false, g.Hidden, g.Heads*hd)
		add(p+"post_attention_layernorm.weight", true, g.Hidden)
		add(p+"mlp.gate_proj.weight", false, g.FFN, g.Hidden)
		add(p+"mlp.up_proj.weight", false, g.FFN, g.Hidden)
		add(p+"mlp.down_proj.weight", false, g.Hidden, g.FFN)
	}
	add("model.norm.weight", true, g.Hidden)
	add("lm_head.weight", false, g.Vocab, g.Hidden)

	withProgress(ts, o.Progress)
	torch := map[string]string{"F16": "float16", "BF16": "bfloat16", "F32": "float32"}[dt]
	cfg := map[string]any{
		"architectures": []string{"LlamaForCausalLM"}, "model_type": "llama",
		"hidden_size": g.Hidden, "intermediate_size": g.FFN, "num_hidden_layers": g.Layers,
		"num_attention_heads": g.Heads, "num_key_value_heads": g.KVHeads, "vocab_size": g.Vocab,
		"max_position_embeddings": 2048, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
		"tie_word_embeddings": false, "hidden_act": "silu", "bos_token_id": 1, "eos_token_id": 2,
		"torch_dtype": torch, "_name_or_path": fmt.Sprintf("synthetic-llama-seed%d", o.Seed),
	}
	return writeCheckpoint(dir, cfg, ts, o.Shards)
}

// synthDType checks a synthetic checkpoint's dtype name (f16 when empty)
// and returns its safetensors spelling.
func synthDType(name string) (string, error) {
	dt := strings.ToUpper(name)
	if dt == "" {
		dt = "F16"
	}
	if dt != "F16" && dt != "BF16" && dt != "F32" {
		return "", fmt.Errorf("synth: dtype %q, want f16, bf16 or f32", name)
	}
	return dt, nil
}

// ErrTooManyShards is returned (wrapped, naming the limit) when a
// synthetic checkpoint is asked for more shards than it has tensors: a
// shard holds whole tensors, so the extra shards would be empty files
// that a loader may refuse, and a user who asked for N shards expects N
// files that each hold something. Nothing is written.
var ErrTooManyShards = errors.New("more shards than tensors")

// writeCheckpoint writes config.json and the tensors into dir (made if
// missing), as one model.safetensors or, with shards > 1,
// model-0000i-of-0000n.safetensors files and their index. The tensors are
// split evenly by count, in order, so every shard holds at least one;
// more shards than tensors is ErrTooManyShards, found before anything is
// written.
func writeCheckpoint(dir string, cfg map[string]any, ts []STTensor, shards int) error {
	shards = max(1, shards)
	if shards > len(ts) {
		return fmt.Errorf("%w: %d shards for a checkpoint of %d tensors (at most %d: a shard holds whole tensors, at least one)", ErrTooManyShards, shards, len(ts), len(ts))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	cb, _ := json.MarshalIndent(cfg, "", "  ")
	if err := fileio.WriteFileAtomic(filepath.Join(dir, "config.json"), cb); err != nil {
		return err
	}
	if shards == 1 {
		return WriteSafetensors(filepath.Join(dir, "model.safetensors"), ts)
	}
	wm := map[string]string{}
	for i := 0; i < shards; i++ {
		part := ts[i*len(ts)/shards : (i+1)*len(ts)/shards]
		name := fmt.Sprintf("model-%05d-of-%05d.safetensors", i+1, shards)
		for _, t := range part {
			wm[t.Name] = name
		}
		if err := WriteSafetensors(filepath.Join(dir, name), part); err != nil {
			return err
		}
	}
	return writeIndex(dir, wm)
}

func fnv64(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// fillRandom streams n values: each 16-bit draw gives a sign, one of four
// binades and 10 mantissa bits; norms draw around 1.
func fillRandom(w io.Writer, dt string, n int, seed uint64, norm bool) error {
	x := seed | 1
	buf := make([]byte, 1<<20)
	es := 2
	if dt == "F32" {
		es = 4
	}
	for n > 0 {
		k := min(n, len(buf)/es)
		b := buf[:k*es]
		for i := 0; i < k; i += 4 {
			// xorshift64*: one 64-bit draw, four values.
			x ^= x >> 12
			x ^= x << 25
			x ^= x >> 27
			r := x * 2685821657736338717
			for j := 0; j < 4 && i+j < k; j++ {
				v := uint16(r >> (16 * j))
				var f float32
				h := v&0x83ff | uint16(8+(v>>10)&3)<<10 // ±[2^-7, 2^-3)
				if norm {
					h = 0x3c00 | v&0x3ff // [1, 2)
				}
				switch dt {
				case "F16":
					binary.LittleEndian.PutUint16(b[2*(i+j):], h)
					continue
				}
				f = quant.F16ToF32(h)
				if dt == "BF16" {
					binary.LittleEndian.PutUint16(b[2*(i+j):], uint16(math.Float32bits(f)>>16))
				} else {
					binary.LittleEndian.PutUint32(b[4*(i+j):], math.Float32bits(f))
				}
			}
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
		n -= k
	}
	return nil
}

// GeometryByName looks up a size `cflowc dev synth --geometry` accepts
// (GeometryNames lists them).
func GeometryByName(name string) (Geometry, bool) {
	g, ok := geometries[name]
	return g, ok
}

// GeometryNames lists the geometries' names for help text.
func GeometryNames() []string {
	var out []string
	for k := range geometries {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// randomTensor is a seeded random tensor streamed on demand: its seed mixes
// the checkpoint seed with the tensor name, so every tensor is reproducible
// on its own. norm tensors are drawn around 1 (RMSNorm weights).
func randomTensor(name, dtype string, seed uint64, norm bool, shape ...int) STTensor {
	seed ^= fnv64(name)
	return STTensor{Name: name, DType: dtype, Shape: shape, Fill: func(w io.Writer) error {
		n := 1
		for _, s := range shape {
			n *= s
		}
		return fillRandom(w, dtype, n, seed, norm)
	}}
}
