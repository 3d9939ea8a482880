package convert

import (
	"fmt"

	"github.com/cflow-dev/cflow/archspec"
	"github.com/cflow-dev/cflow/cflowfmt"
)

// arch5_fixed_point: PreNorm layers whose block of unique layers runs
// block_iterations times (spec, "arch5").
func init() {
	register(&family{name: "arch5_fixed_point", aliases: []string{"arch5"}, combine: archspec.PreNorm, names: nativeNames,
		newConfig: func() familyConfig {
			return &arch5Config{nativeConfig: *newNativeConfig(1e6, 1, false), BlockIterations: 3}
		}})
}

type arch5Config struct {
	nativeConfig
	BlockIterations int `json:"block_iterations"`
}

func (c *arch5Config) apply(s *modelSpec, ck *checkpoint) error {
	if err := c.nativeConfig.apply(s, ck); err != nil {
		return err
	}
	// Every iteration re-runs every layer with its own KV cache: the
	// count multiplies memory, so it is bounded like a layer count.
	bi := c.BlockIterations
	if bi == 0 || bi*int(s.h.NumLayers) > 4096 {
		return fmt.Errorf("%s: block_iterations %d must be ≥ 1 and at most 4096 passes in all (%d layers)", c.file, bi, s.h.NumLayers)
	}
	s.blockIters = bi
	s.md.SetU32(cflowfmt.KeyBlockIterations, uint32(bi))
	return nil
}
