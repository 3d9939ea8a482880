package convert

import (
	"fmt"

	"github.com/cflow-dev/cflow/cflowfmt"
)

// arch5_fixed_point: PreNorm layers whose block of unique layers runs
// block_iterations times (spec, "arch5").
func init() {
	register(&family{name: "arch5_fixed_point", aliases: []string{"arch5"}, combine: cflowfmt.PreNorm, names: nativeNames,
		configure: func(s *modelSpec, c *checkpoint) error {
			if err := nativeConfigure(s, c); err != nil {
				return err
			}
			bi, err := c.cfg.int("block_iterations", 3)
			if err != nil {
				return err
			}
			// Every iteration re-runs every layer with its own KV cache: the
			// count multiplies memory, so it is bounded like a layer count.
			if bi == 0 || bi*int(s.h.NumLayers) > 4096 {
				return fmt.Errorf("%s: block_iterations %d must be ≥ 1 and at most 4096 passes in all (%d layers)", c.cfg.file, bi, s.h.NumLayers)
			}
			s.blockIters = bi
			s.md.SetU32(cflowfmt.KeyBlockIterations, uint32(bi))
			return nil
		}})
}
