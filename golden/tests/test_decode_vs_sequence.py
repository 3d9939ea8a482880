"""Token-by-token decode (KV caches, delay queues, selected experts only)
agrees with the whole-sequence forward (causal mask, spec transcription,
every expert evaluated) for every fixture and weight kind."""
import unittest

import numpy as np

from common import fixture, load_trace
from cflow_ref import generate, model_io


class DecodeVsSequence(unittest.TestCase):
    def check(self, name, weights):
        m = model_io.load(fixture(name), weights)
        tr = load_trace(name, weights)
        tokens = tr["prompt"] + tr["generated"]
        seq = m.sequence(tokens)
        state = m.new_state()
        for i, tok in enumerate(tokens):
            out = m.step(state, tok)
            a, b = out.logits[0].numpy(), seq.logits[i].numpy()
            scale = max(1.0, float(np.abs(b).max()))
            self.assertLess(float(np.abs(a - b).max()) / scale, 1e-5, "%s %s step %d logits" % (name, weights, i))
            np.testing.assert_allclose(out.residual_norms[0], seq.residual_norms[i], rtol=1e-5,
                                       err_msg="%s %s step %d residual norms" % (name, weights, i))
            np.testing.assert_allclose(out.pre_lm_head_norm[0], seq.pre_lm_head_norm[i], rtol=1e-5)
            self.assertEqual(len(out.residual_norms[0]), m.cfg.num_passes)

    def test_all_fixtures(self):
        for name in generate.ALL:
            for w in model_io.WEIGHTS:
                with self.subTest(fixture=name, weights=w):
                    self.check(name, w)


if __name__ == "__main__":
    unittest.main()
