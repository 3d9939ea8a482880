"""The f32 reference on stories260K reproduces llama2.c's greedy tokens from BOS."""
import os
import unittest

import numpy as np

from common import GOLDEN, fixture
from cflow_ref import architectures, config, fixtures, llama2c, model_io, trace
from cflow_ref import weights as W

EXPECTED = [461, 461, 401, 401, 401, 461, 378, 455, 473, 456]


class Llama2cParity(unittest.TestCase):
    def test_committed_fixture(self):
        m = model_io.load(fixture("stories260k"), "f32")
        gen, _ = trace.run(m, [1], len(EXPECTED))
        self.assertEqual(gen, EXPECTED)

    @unittest.skipUnless(os.path.exists(fixtures.STORIES_BIN), "stories260K.bin not present")
    def test_direct_from_bin(self):
        cfg, t = llama2c.read(fixtures.STORIES_BIN)
        m = architectures.build(config.from_dict(cfg), W.to_torch(t))
        gen, _ = trace.run(m, [1], len(EXPECTED))
        self.assertEqual(gen, EXPECTED)

    def test_permute_is_split_half(self):
        # Per head, rows (re0, im0, re1, im1) → (re0, re1, im0, im1).
        w = np.arange(8, dtype=np.float32).reshape(8, 1)
        got = llama2c.permute(w, 2)[:, 0].tolist()
        self.assertEqual(got, [0, 2, 1, 3, 4, 6, 5, 7])


if __name__ == "__main__":
    unittest.main()
