"""The committed fixtures, traces and quant vectors are exactly what the code
generates now (and generation is deterministic), and every trace follows
TRACE.md's schema."""
import json
import os
import tempfile
import unittest

from common import GOLDEN, load_trace, trace_path
from cflow_ref import fixtures, generate, model_io, trace


class Pinned(unittest.TestCase):
    def test_fixtures_and_traces_regenerate_identically(self):
        with tempfile.TemporaryDirectory() as tmp:
            for name in generate.ALL:
                generate.write_fixture(name, tmp)
                generate.write_traces(name, tmp)
                fresh = generate.fixture_dir(tmp, name)
                self.assertEqual(sorted(os.listdir(fresh)),
                                 sorted(os.listdir(generate.fixture_dir(GOLDEN, name))), name)
                rels = [os.path.relpath(os.path.join(fresh, f), tmp) for f in os.listdir(fresh)] + \
                    [os.path.relpath(generate.trace_file(tmp, name, w), tmp) for w in model_io.WEIGHTS]
                for rel in rels:
                    with open(os.path.join(tmp, rel), "rb") as a, open(os.path.join(GOLDEN, rel), "rb") as b:
                        self.assertEqual(a.read(), b.read(), rel + " differs from a fresh generation")

    def test_trace_schema(self):
        for name in generate.ALL:
            for w in model_io.WEIGHTS:
                with self.subTest(name=name, weights=w):
                    t = load_trace(name, w)
                    self.assertEqual(t["schema"], trace.SCHEMA)
                    self.assertEqual(t["model"], name)
                    self.assertEqual(t["weights"], w)
                    P, G = t["prompt"], t["generated"]
                    self.assertGreaterEqual(len(P), 4)
                    self.assertGreaterEqual(len(G), 16)
                    self.assertEqual(len(t["steps"]), len(P) + len(G))
                    for i, s in enumerate(t["steps"]):
                        self.assertEqual(s["position"], i)
                        self.assertEqual(s["input_token"], (P + G)[i])
                        self.assertEqual(len(s["top_ids"]), 32)
                        self.assertEqual(s["argmax"], s["top_ids"][0])
                        lg = s["top_logits"]
                        for j in range(31):
                            self.assertTrue(lg[j] > lg[j + 1] or (lg[j] == lg[j + 1] and
                                                                  s["top_ids"][j] < s["top_ids"][j + 1]))
                        if i >= len(P) - 1 and i - len(P) + 1 < len(G):
                            self.assertEqual(G[i - len(P) + 1], s["argmax"])

    def test_quant_vectors_present(self):
        with open(os.path.join(GOLDEN, "testdata", "quant_replay.json")) as f:
            doc = json.load(f)
        self.assertEqual([x["name"] for x in doc["fixtures"]], fixtures.FIXTURES)


if __name__ == "__main__":
    unittest.main()
