"""cflow_ref.trace_checkpoint (a trace for any checkpoint directory) gives
the pinned traces byte for byte, and refuses bad input with exit 2."""
import contextlib
import io
import os
import shutil
import tempfile
import unittest

import numpy as np

from common import fixture, load_trace, trace_path
from cflow_ref import safetensors_io, trace_checkpoint


def run(*argv):
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        rc = trace_checkpoint.main(list(argv))
    return rc, err.getvalue()


class TraceCheckpoint(unittest.TestCase):
    def test_reproduces_pinned_traces(self):
        for name, w in (("qwen3", "f32"), ("mistral", "q4_replay"), ("gemma4_mm", "q8_replay"),
                        ("llama", "f32")):
            with self.subTest(name=name, weights=w):
                tr = load_trace(name, w)
                with tempfile.TemporaryDirectory() as d:
                    out = os.path.join(d, "t.json")
                    rc, err = run(fixture(name), "--prompt", ",".join(map(str, tr["prompt"])),
                                  "--generate", str(len(tr["generated"])), "--weights", w, "--out", out)
                    self.assertEqual(rc, 0, err)
                    with open(out, "rb") as a, open(trace_path(name, w), "rb") as b:
                        self.assertEqual(a.read(), b.read())

    def test_refusals_exit_2_and_write_nothing(self):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "t.json")
            rc, err = run(fixture("qwen3"), "--prompt", "1,999", "--out", out)
            self.assertEqual(rc, 2)
            self.assertIn("outside the vocabulary", err)
            rc, err = run(fixture("qwen3"), "--prompt", "1,x", "--out", out)
            self.assertEqual((rc, "--prompt" in err), (2, True))
            rc, err = run(d, "--prompt", "1", "--out", out)
            self.assertEqual((rc, "no config.json" in err), (2, True))
            rc, err = run(fixture("qwen3"), "--prompt", "1", "--out",
                          os.path.join(fixture("qwen3"), "t.json"))
            self.assertEqual((rc, "inside the checkpoint" in err), (2, True))
            # an extra tensor the model does not use is named
            ck = os.path.join(d, "ck")
            shutil.copytree(fixture("qwen3"), ck)
            st = os.path.join(ck, "model.safetensors")
            t, _ = safetensors_io.load(st)
            t["model.layers.0.mlp.gate_proj.bias"] = np.zeros(100, dtype=np.float32)
            safetensors_io.save(st, t, "F32")
            rc, err = run(ck, "--prompt", "1", "--out", out)
            self.assertEqual(rc, 2)
            self.assertIn("mlp.gate_proj.bias", err)
            self.assertFalse(os.path.exists(out))


if __name__ == "__main__":
    unittest.main()
