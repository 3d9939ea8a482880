package convert

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/cflow-dev/cflow/quant"
)

// TestOutputBytesPinned holds the converter's output byte for byte on a few
// golden fixtures, one per input path that matters (a dense HF family, a
// sharded multimodal checkpoint read through its text_config, Qwen3-MoE's
// experts in f32, arch5's block iterations, Gemma 3's norms, Mixtral's
// experts; both formats, one and two NUMA nodes). The hashes are those of
// the converter before its input path became source → typed config →
// family (commit b32a191, issue 32 item 4), so a refactor of the input
// path that changes a byte fails here. A change of the format or of the
// metadata made on purpose re-pins: the failure prints the new hash.
func TestOutputBytesPinned(t *testing.T) {
	for _, c := range []struct {
		fixture string
		ext     string
		q       quant.Type
		nodes   int
		sha256  string
	}{
		{"fixtures/llama", ".cflow", quant.Q4_0, 1, "93d8bb7936edc6feb0db7fbe27352e29720864f50e8218769823bc3f13c7473f"},
		{"gemma4_text/fixtures/gemma4_mm", ".vflow", quant.Q8_0, 2, "5b94b1598ca0f2c2e9abd3a3f353d1249d31d8732bfd23823932734372e48a82"},
		{"families/fixtures/qwen3_moe", ".cflow", quant.F32, 1, "bcd4a7c7402a804106f48c93d31a2fc16a1fb2952193954399624c51c27096e6"},
		{"fixtures/arch5_fixed_point", ".vflow", quant.Q4_0, 1, "e2da2d45fba081a5fd98c5f89a56dac5684e465fcdad2a1e32dcaa6681f87776"},
		{"families/fixtures/gemma3", ".cflow", quant.Q8_0, 2, "c1330f5692fde0c1c2b30c56834a90055c35b2f42233ce293806cdab41ada945"},
		{"fixtures/mixtral", ".vflow", quant.Q4_0, 2, "97b4bb0ca17c716cc4e265eddac1ca07425aaaa91b66c04685da77b11379f4cd"},
	} {
		out := filepath.Join(t.TempDir(), "out"+c.ext)
		in := filepath.Join("../golden", c.fixture)
		if _, err := Convert(context.Background(), in, out, Options{Quant: c.q, NUMANodes: c.nodes}); err != nil {
			t.Fatalf("%s: %v", c.fixture, err)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		if got := hex.EncodeToString(sum[:]); got != c.sha256 {
			t.Errorf("%s → %s (%s, %d nodes): sha256 %s, pinned %s", c.fixture, c.ext, c.q, c.nodes, got, c.sha256)
		}
	}
}
