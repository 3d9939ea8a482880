"""The training forward (golden/train/model.py, batched) equals the golden
reference's whole-sequence forward (cflow_ref forward_logits) on every
trained checkpoint present, so what was trained is what the spec defines.

    /usr/bin/python3 -m unittest discover -s golden/train -p 'test_*.py'
"""
import json
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(HERE), HERE]

import torch  # noqa: E402

import data  # noqa: E402
import model as M  # noqa: E402
from cflow_ref import model_io, safetensors_io  # noqa: E402

TRAINED = data.TRAINED


def load_training_model(path):
    with open(os.path.join(path, "config.json")) as f:
        cfg = json.load(f)
    m = M.Model(cfg)
    tensors, _ = safetensors_io.load(os.path.join(path, "model.safetensors"))
    m.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in tensors.items()})
    return m.eval()


class TestParity(unittest.TestCase):
    def test_training_forward_matches_reference(self):
        torch.set_num_threads(1)
        archs = data.trained_models()
        if not archs:
            self.skipTest("no trained checkpoints")
        _, test = data.split()
        ids = [data.BOS] + data.encode(test[:127])
        for arch in archs:
            with self.subTest(arch=arch):
                path = os.path.join(TRAINED, arch)
                ref = model_io.load(path, "f32").forward_logits(ids)
                with torch.no_grad():
                    got = load_training_model(path)(torch.tensor([ids]))[0]
                err = float((got - ref).abs().max() / ref.abs().max())
                self.assertLess(err, 1e-5, "%s: max |Δlogit| / max |logit| = %.2e" % (arch, err))


class TestProtocol(unittest.TestCase):
    def test_chunks(self):
        import eval as ev
        self.assertEqual(ev.chunks(list(range(7)), 4), [[0, 1, 2], [3, 4, 5], [6]])

    def test_split(self):
        train, test = data.split()
        with open(data.DATA, "rb") as f:
            whole = f.read()
        self.assertEqual(train + test, whole)
        self.assertTrue(train.endswith(b"\n\n"))
        self.assertAlmostEqual(len(train) / len(whole), 0.9, places=2)


if __name__ == "__main__":
    unittest.main()
