package cflowfmt

// The format's types, constants and functions are defined once, in the
// tile-image core both formats share (internal/tileimage); these names make
// them cflowfmt's public API, with their documentation, so every package
// outside the two formats imports cflowfmt alone. The helpers only the two
// readers and writers need (the model builder, the check walk, the tile
// sink, …) are not re-exported.

import (
	"encoding/json"

	"github.com/cflow-dev/cflow/archspec"
	"github.com/cflow-dev/cflow/internal/tileimage"
	"github.com/cflow-dev/cflow/quant"
)

// ParseExpert walks one expert's range: only expert matrices of that layer
// and expert, each tile validated.
func ParseExpert(data []byte, r Range, h *Header, layer, e int) ([]MappedTile, error) {
	return tileimage.ParseExpert(data, r, h, layer, e)
}

// Loc says where a tile was found: its layer-table entry, slot and, inside
// an expert bank, the expert (-1 otherwise). Layer == NumLayers is the
// vocabulary entry.
type Loc = tileimage.Loc

// LayerSums are the per-layer weight checksums stored under
// KeyLayerChecksums: entry l (l = NumLayers for the vocabulary) is the sum,
// modulo 2⁶⁴, of FNV-1a-64 over each of the layer's tiles as stored
// (16-byte header, scales, data). A sum of per-tile hashes does not depend
// on the order tiles are written or walked, so one definition serves the
// layer-major .cflow and the stage-major .vflow. Without it a flipped bit in
// weight data is invisible to inspect --check: every byte of a Q4 tile is a
// valid code.
type LayerSums = tileimage.LayerSums

// NewLayerSums has one zero entry per layer plus the vocabulary entry.
func NewLayerSums(layers int) LayerSums { return tileimage.NewLayerSums(layers) }

// TileSum is the hash a stored tile adds to its layer's entry: FNV-1a-64
// over its header as th encodes it, its scales and its data. A writer fed
// many tiles computes it off its own goroutine (WriteTileSum), since the
// hash is as costly as copying the bytes and the sums do not depend on the
// order tiles are hashed in.
func TileSum(th *TileHeader, t *quant.Tile) uint64 { return tileimage.TileSum(th, t) }

// TileSums sets out[i] to TileSum(&ths[i], &ts[i]) for every tile, hashing
// runs of same-size tiles (a stripe's) about four times as fast.
func TileSums(ths []TileHeader, ts []quant.Tile, out []uint64) { tileimage.TileSums(ths, ts, out) }

// StoredSums decodes KeyLayerChecksums; ok is false for files written before
// checksums existed, which still load (inspect --check says so).
func StoredSums(md *Metadata) (s LayerSums, ok bool) { return tileimage.StoredSums(md) }

// HeaderInfo is the GlobalHeader with named fields and enum names, as
// inspect prints it; the JSON names are the on-disk field names, so a
// script finds e.g. .header.hidden_size and .header.quant_type.
type HeaderInfo = tileimage.HeaderInfo

// MetaInfo is one metadata entry; blobs (tokenizer data, the exec header,
// the shard plan) are summarised by size, not printed.
type MetaInfo = tileimage.MetaInfo

// LayerInfo is one layer's byte accounting by stream.
type LayerInfo = tileimage.LayerInfo

// TileStat counts the tiles of one matrix kind.
type TileStat = tileimage.TileStat

// Description is everything inspect shows about a model file, in one
// JSON-friendly value; both formats produce it (vflowfmt adds its group
// table around it).
type Description = tileimage.Description

// DescribeMeta summarises a metadata section; the NUMA plan is returned
// separately as JSON (or quoted text if it is not valid JSON).
func DescribeMeta(md *Metadata) ([]MetaInfo, json.RawMessage) { return tileimage.DescribeMeta(md) }

// TileInfo is one line of inspect --tiles.
type TileInfo = tileimage.TileInfo

// ListTiles collects every tile header a walk visits, in walk order.
func ListTiles(walk func(func(Loc, *MappedTile) error) error) ([]TileInfo, error) {
	return tileimage.ListTiles(walk)
}

// Metadata keys of the features above.
const (
	KeyFeatures            = tileimage.KeyFeatures            // string: comma-separated feature names
	KeyAttnScale           = tileimage.KeyAttnScale           // f32
	KeyEmbedScale          = tileimage.KeyEmbedScale          // f32
	KeyRopeScaling         = tileimage.KeyRopeScaling         // string: linear, llama3
	KeyRopeScalingFactor   = tileimage.KeyRopeScalingFactor   // f32
	KeyRopeLowFreqFactor   = tileimage.KeyRopeLowFreqFactor   // f32, llama3
	KeyRopeHighFreqFactor  = tileimage.KeyRopeHighFreqFactor  // f32, llama3
	KeyRopeOriginalContext = tileimage.KeyRopeOriginalContext // u32, llama3
	KeyMoERouting          = tileimage.KeyMoERouting          // string: see archspec.RoutingSoftmaxTopK…
	KeyGlobalKVHeads       = tileimage.KeyGlobalKVHeads       // u32, full layers' KV heads
)

// LayerKey is the metadata key of layer l's vector (an f32 array).
func LayerKey(l int, vec string) string { return tileimage.LayerKey(l, vec) }

// Features returns the feature list of a file, refusing names this version
// does not implement. Without FlagFeatures it is empty.
func Features(h *Header, md *Metadata) (map[string]bool, error) { return tileimage.Features(h, md) }

// MaxInputWidth is the widest matrix input (columns) a file can hold:
// TileHeader.col_offset is a u16, so the last tile of a row must start
// below 65,536. Writers refuse wider inputs instead of wrapping offsets.
const (
	MaxInputWidth = tileimage.MaxInputWidth
)

// Magic opens every .cflow file (8 bytes).
const (
	Magic = tileimage.Magic
)

// Version is the only GlobalHeader version this package reads and writes.
const (
	Version = tileimage.Version
)

// HeaderSize and TileHeaderSize are fixed by the report; tests pin them.
const (
	HeaderSize     = tileimage.HeaderSize
	TileHeaderSize = tileimage.TileHeaderSize
)

// TileAlign is the alignment of every tile start, so an F32 payload can be
// viewed as []float32 without misaligned pointers.
const (
	TileAlign = tileimage.TileAlign
)

// Feature flag bits of GlobalHeader.FeatureFlags (the report's table).
const (
	FlagEmbedScale = tileimage.FlagEmbedScale // x = E[tok]·√d
	FlagVNorm      = tileimage.FlagVNorm      // RMSNorm without weight on each value vector
	FlagTiedEmbed  = tileimage.FlagTiedEmbed  // LM head is the embedding; no lm_head tiles
	FlagGELU       = tileimage.FlagGELU       // gelu_tanh instead of silu in every FFN and expert
	// FlagFeatures: the metadata's cflow.features lists computation features
	// (features.go) a reader must implement; readers that predate the bit
	// refuse the file instead of silently computing something else.
	FlagFeatures = tileimage.FlagFeatures
)

// Header is the decoded GlobalHeader: everything needed to size buffers and
// build the execution plan before any tile is read. Field order below is the
// on-disk order; see docs/FORMAT.md for offsets.
type Header = tileimage.Header

// MaxExperts is the largest expert count: TileHeader.expert_id is a u8 and
// 0xFF (NoExpert) marks non-expert tiles.
const (
	MaxExperts = tileimage.MaxExperts
)

// FormatError is what every reader in cflow returns for malformed input:
// which file, which byte offset, and what was wrong there. A file
// truncated under an open reader is one too, its Err the
// *fileio.FaultError of the read that faulted.
type FormatError = tileimage.FormatError

// MetaType is the type tag of a metadata value; values are on disk.
type MetaType = tileimage.MetaType

const (
	MetaU32    = tileimage.MetaU32
	MetaF32    = tileimage.MetaF32
	MetaString = tileimage.MetaString
	MetaBytes  = tileimage.MetaBytes
	MetaU32s   = tileimage.MetaU32s // little-endian u32 array
	MetaF32s   = tileimage.MetaF32s // little-endian f32 array
)

// MetaMagic and MetaVersion open the metadata section.
const (
	MetaMagic = tileimage.MetaMagic
)

const (
	MetaVersion = tileimage.MetaVersion
)

// Well-known metadata keys. What the 88-byte header cannot hold lives here;
// the runtime reads only these names.
const (
	KeyArchitecture    = tileimage.KeyArchitecture    // string: spec architecture name
	KeyName            = tileimage.KeyName            // string: free text
	KeyRMSEps          = tileimage.KeyRMSEps          // f32
	KeyRopeTheta       = tileimage.KeyRopeTheta       // f32, sliding/uniform layers
	KeyRopeThetaGlobal = tileimage.KeyRopeThetaGlobal // f32, full layers of mixed models
	KeyRopePartial     = tileimage.KeyRopePartial     // f32, fraction of pairs rotated on full layers
	KeyMergeInterval   = tileimage.KeyMergeInterval   // u32, arch1
	KeyBlockIterations = tileimage.KeyBlockIterations // u32, arch5
	KeyLayerKinds      = tileimage.KeyLayerKinds      // bytes, one per layer: 0 full, 1 sliding
	KeyKEqV            = tileimage.KeyKEqV            // u32 0/1: full layers use v = k
	KeyTokenizerKind   = tileimage.KeyTokenizerKind   // string: byte, llama2c, gpt2, hf-bpe, hf
	KeyTokenizerData   = tileimage.KeyTokenizerData   // bytes: kind-specific payload
	KeyBOS             = tileimage.KeyBOS             // u32
	KeyEOS             = tileimage.KeyEOS             // u32
	KeyAddBOS          = tileimage.KeyAddBOS          // u32 0/1: prompts start with BOS (tokenizer_config add_bos_token / post-processor)
	KeyEndOfTurn       = tileimage.KeyEndOfTurn       // u32s: ids generation stops at (EOS, end-of-turn tokens)
	KeyBOSToken        = tileimage.KeyBOSToken        // string: BOS text, the chat template's bos_token
	KeyEOSToken        = tileimage.KeyEOSToken        // string: EOS text, the chat template's eos_token
	KeyChatTemplate    = tileimage.KeyChatTemplate    // string: Jinja chat template (tokenizer_config.json)
	KeyNUMAPlan        = tileimage.KeyNUMAPlan        // bytes: JSON shard plan
	KeyExecHeader      = tileimage.KeyExecHeader      // bytes: an 88-byte GlobalHeader (.vflow)
	KeyLayerChecksums  = tileimage.KeyLayerChecksums  // bytes: per-layer weight checksums (checksum.go)
)

// Metadata is the typed, versioned key-value section. Keys are unique and
// written in sorted order so files are byte-for-byte reproducible.
type Metadata = tileimage.Metadata

// NewMetadata returns an empty section.
func NewMetadata() *Metadata { return tileimage.NewMetadata() }

// ParseMetadata decodes a section that starts at file offset base; errors
// name the absolute offset. Values are copied out of b.
func ParseMetadata(b []byte, base int64) (*Metadata, error) { return tileimage.ParseMetadata(b, base) }

// Range is a byte span of a file: the unit of the layer table, the expert
// offset table and the group table.
type Range = tileimage.Range

// Stream slots of a layer-table entry. Each slot is a contiguous run of
// aligned tiles (or, for SlotExpertTable, the (u64 offset, u64 length)
// array), so a reader can walk it without knowing the architecture.
const (
	SlotAttn        = tileimage.SlotAttn        // attn_norm, Q/K/V interleaved by stripe, O
	SlotDense       = tileimage.SlotDense       // ffn_norm, gate/up interleaved by stripe, down
	SlotMoE         = tileimage.SlotMoE         // moe_norm (or ffn_norm when no dense FFN), router
	SlotExpertTable = tileimage.SlotExpertTable // NumExperts × (u64 offset, u64 length)
	SlotExpertBank  = tileimage.SlotExpertBank  // every expert's gate, up, down tiles
	SlotsPerLayer   = tileimage.SlotsPerLayer
)

// Slots of the final (vocabulary) entry of the layer table.
const (
	SlotEmbed     = tileimage.SlotEmbed
	SlotLMHead    = tileimage.SlotLMHead
	SlotFinalNorm = tileimage.SlotFinalNorm
)

// Layer is one layer's weights as the runtime consumes them, independent of
// which file format they came from. Tile slices are in file order; their
// bytes alias the mapping.
type Layer = tileimage.Layer

// Model is what both readers (cflowfmt.Open, vflowfmt.Open) hand the
// runtime: the header, the metadata and every non-expert tile indexed by
// layer and role. Expert tiles are parsed lazily through ExpertTiles.
type Model = tileimage.Model

// NUMAPlan is the shard plan stored as JSON under KeyNUMAPlan. The
// converter writes it and the runtime obeys it, so the one definition lives
// with the format. A runtime with the same node count binds each node to its
// byte ranges; any other runtime re-plans, since the file is just tiles.
//
// Tile and byte ranges are relative to the start of the matrix's stream slot
// (Model.Layers[l].Streams[slot].Offset, or the vocabulary entry's slot), so
// the plan does not depend on where the writer puts the metadata.
type NUMAPlan = tileimage.NUMAPlan

// MatrixShards is one non-expert matrix's policy and per-node ranges.
// Layer is NumLayers for the embedding, LM head and final norm.
type MatrixShards = tileimage.MatrixShards

// Shard is what one node owns of a matrix: the element block, the tile
// index range [from, to) within the slot and the byte range [from, to) from
// the slot start. For interleaved groups (Q/K/V, gate/up) a node's range may
// contain its own tiles of the group's other members, never another node's.
// Replicated matrices list every node with the same ranges.
type Shard = tileimage.Shard

// ExpertShard assigns experts [from, to) of a layer to a node.
type ExpertShard = tileimage.ExpertShard

// Policies a MatrixShards may name (after NUMA-Torch's NUMA-TP).
const (
	// PolicyColumn splits output rows: each node owns whole heads or stripes.
	PolicyColumn = tileimage.PolicyColumn
	// PolicyRow splits input columns; nodes produce partial sums reduced once
	// per block.
	PolicyRow = tileimage.PolicyRow
	// PolicyReplicated gives every node the whole matrix (norms, router,
	// K/V when there are fewer KV heads than nodes).
	PolicyReplicated = tileimage.PolicyReplicated
	// PolicyVocab splits the embedding and LM head by vocabulary rows.
	PolicyVocab = tileimage.PolicyVocab
)

// ReadNUMAPlan decodes the plan from a file's metadata; ok is false when the
// file has none.
func ReadNUMAPlan(md *Metadata) (p *NUMAPlan, ok bool, err error) { return tileimage.ReadNUMAPlan(md) }

// ShardCuts splits total items, in whole units of unit items, into n
// contiguous balanced runs (earlier runs take the remainder): run i is
// [c[i], c[i+1]). The converter plans with it and the runtime re-plans with
// it, so a re-planned file splits the way a converted one would.
func ShardCuts(total, unit, n int) []int { return tileimage.ShardCuts(total, unit, n) }

// NoExpert is TileHeader.Expert for tiles outside an expert bank.
const (
	NoExpert = tileimage.NoExpert
)

// TileHeader is the report's 16-byte tile header, field for field.
// QuantGroup is 32 for quantized tiles and 0 for F32 tiles, which makes
// every tile self-describing given the file's quant type.
type TileHeader = tileimage.TileHeader

// ParseTileHeader decodes b[:16]; it does not validate.
func ParseTileHeader(b []byte) TileHeader { return tileimage.ParseTileHeader(b) }

// TileQuant is the quant type of a tile in a file of type fileQuant.
func TileQuant(m archspec.MatrixID, fileQuant quant.Type) quant.Type {
	return tileimage.TileQuant(m, fileQuant)
}

// TileSize is the on-disk size of a tile (header, scales, data), before the
// padding that aligns the next tile to TileAlign.
func TileSize(q quant.Type, rows, cols int) int { return tileimage.TileSize(q, rows, cols) }

// AlignUp rounds off up to the next multiple of TileAlign.
func AlignUp(off int64) int64 { return tileimage.AlignUp(off) }

// MappedTile is one tile as the runtime sees it: the decoded header plus
// slices that alias the file mapping (no copy). Offset is the tile's byte
// offset in the file, kept for read-order accounting and error messages.
type MappedTile = tileimage.MappedTile

// MaxPasses bounds the layer passes of one token (layers × block
// iterations): the same limit as the layer count, because every pass owns a
// KV cache and a plan step. A file or config claiming more is refused before
// anything is sized from it, so one large number cannot exhaust memory.
const (
	MaxPasses = tileimage.MaxPasses
)

// MaxNUMANodes bounds a shard plan's node count (the converter's
// --numa-nodes and the stored plan): beyond it a plan only multiplies the
// replicated tiles.
const (
	MaxNUMANodes = tileimage.MaxNUMANodes
)

// CheckMetadata is the one validation of what the header and metadata say
// about execution, run by both readers at Open (so run, verify, bench,
// analyze, export and inspect --check refuse the same files) and by both
// writers at Create: attn.layer_kinds has one byte (0 or 1) per layer;
// every well-known key has its declared type; block iterations, merge
// interval, norm epsilon, RoPE bases and partial factor are in range; the
// delays and combine style form a defined schedule (CheckSchedule); a NUMA
// shard plan parses.
func CheckMetadata(h *Header, md *Metadata) error { return tileimage.CheckMetadata(h, md) }

// CheckSchedule rejects delay / combine-style / iteration combinations that
// have no defined semantics (spec, "Execution plan"). The header check and
// runtime/plan both call it, so a file the plan would refuse never passes
// Open or inspect --check.
func CheckSchedule(style archspec.CombineStyle, layers, iters, denseDelay, expertDelay int, hasDense, hasMoE bool) error {
	return tileimage.CheckSchedule(style, layers, iters, denseDelay, expertDelay, hasDense, hasMoE)
}
