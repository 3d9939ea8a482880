"""quant_replay.replay against an independent scalar transcription of
quant/encode.go, plus hand-checked rounding cases."""
import common  # noqa: F401  (puts golden/ on sys.path)
import math
import struct
import unittest

import numpy as np

from cflow_ref import quant_replay


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def f16(x):
    return float(np.float16(x))   # round to nearest even


def scalar(w, kind):
    """quant.Encode + Tile.Weight element by element in plain Python floats
    (f64 arithmetic rounded to f32 after each op: exact for / and *)."""
    div, off, lo, hi = quant_replay.KINDS[kind]
    rows, cols = w.shape
    out = np.zeros_like(w)
    for r in range(rows):
        for g0 in range(0, cols, 32):
            block = [float(v) for v in w[r, g0:g0 + 32]] + [0.0] * max(0, g0 + 32 - cols)
            m = max(abs(v) for v in block)
            s = f32(m / div)
            sc = f16(s)
            for j, v in enumerate(block[:cols - g0]):
                if s == 0:
                    q = off
                else:
                    x = f32(v / s)
                    q = min(hi, max(lo, math.copysign(math.floor(abs(x) + 0.5), x) + off))
                out[r, g0 + j] = f32(f32(sc) * (q - off))
    return out


class QuantReplay(unittest.TestCase):
    def test_matches_scalar(self):
        rng = np.random.default_rng(0)
        for shape in [(2, 44), (3, 70), (1, 31)]:
            w = (rng.standard_normal(shape) ** 3).astype(np.float32)
            w[0, :5] = 0
            for kind in ("q4", "q8"):
                a, b = quant_replay.replay(w, kind), scalar(w, kind)
                self.assertTrue(np.array_equal(a.view(np.uint32), b.view(np.uint32)), (shape, kind))

    def test_half_away_from_zero(self):
        # max 0.875 → s = 0.125 exactly; 0.0625 / s = 0.5 → 1, -0.1875 / s = -1.5 → -2
        w = np.zeros((1, 32), dtype=np.float32)
        w[0, :4] = [0.875, 0.0625, -0.1875, 0.3125]
        got = quant_replay.replay(w, "q4")[0, :4].tolist()
        self.assertEqual(got, [0.875, 0.125, -0.25, 0.375])

    def test_zero_group_and_clip(self):
        w = np.zeros((1, 40), dtype=np.float32)
        w[0, 35] = -3.0
        for kind in ("q4", "q8"):
            got = quant_replay.replay(w, kind)
            self.assertTrue(np.all(got[0, :32] == 0))
            self.assertAlmostEqual(float(got[0, 35]), -3.0, delta=3.0 / 100)

    def test_which_tensors(self):
        from cflow_ref.weights import is_quantized
        self.assertTrue(is_quantized("model.embed_tokens.weight", (10, 4)))
        self.assertTrue(is_quantized("model.layers.0.moe.experts.3.down_proj.weight", (4, 8)))
        self.assertFalse(is_quantized("model.layers.0.moe.router.weight", (8, 4)))
        self.assertFalse(is_quantized("model.layers.0.block_sparse_moe.gate.weight", (8, 4)))
        self.assertFalse(is_quantized("model.norm.weight", (4,)))


if __name__ == "__main__":
    unittest.main()
