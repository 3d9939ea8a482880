"""golden/testdata/quant_replay.json: vectors for quant/golden_replay_test.go.

"cases": small matrices of awkward shapes (ties at exact half-steps, zero
rows and groups, f16-subnormal and f16-underflowing scales, short last
groups, a row crossing the 256-column tile edge) with their f32 inputs and
the Python Q4_0/Q8_0 dequantized values, all as uint32 bit patterns in hex.
"fixtures": per fixture, the sha256 of the replayed values of every matrix
the converter quantizes (is_quantized: 2-D, not the router), concatenated as
little-endian f32 in sorted tensor-name order, row-major.
"""
import hashlib
import json
import os

import numpy as np

from . import fixtures as fx
from . import quant_replay
from . import weights as W


def _cases():
    rng = np.random.default_rng(5)
    out = []
    out.append(("normal_3x44", rng.standard_normal((3, 44)).astype(np.float32)))
    m = np.zeros((7, 300), dtype=np.float32)
    m[0] = 0                                                    # all-zero row
    k = np.arange(300) % 15 - 7                                 # Q4 ties: max 0.875 → s = 0.125
    m[1] = (k * 0.0625).astype(np.float32)
    m[1, ::32] = 0.875
    j = np.arange(300) % 255 - 127                              # Q8 ties: max 127/128 → s = 2^-7
    m[2] = ((j + 0.5) * 2.0 ** -8).astype(np.float32)
    m[2, 1::32] = 127 * 2.0 ** -7
    m[3] = (rng.standard_normal(300) * 1e-7).astype(np.float32)  # f16-subnormal / zero scales
    m[3, 100:132] = (rng.standard_normal(32) * 1e-9).astype(np.float32)
    m[4] = (rng.standard_normal(300) * 1e3).astype(np.float32)   # large values
    m[5] = rng.standard_normal(300).astype(np.float32)
    m[5, 64:96] = 0                                             # one zero group in a live row
    m[5, 96:128] = -m[5, 96:128]
    m[6] = (rng.uniform(-1, 1, 300) ** 3).astype(np.float32)
    out.append(("awkward_7x300", m))
    out.append(("short_1x31", rng.standard_normal((1, 31)).astype(np.float32)))
    out.append(("two_groups_2x33", rng.standard_normal((2, 33)).astype(np.float32)))
    wide = rng.standard_normal((3, 520)).astype(np.float32)
    wide[:, 250:262] *= 50                                      # outliers across the tile edge
    out.append(("wide_3x520", wide))
    return out


def _hex(a):
    return ["%08x" % u for u in np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).ravel()]


def fixture_digest(path):
    _, tensors, _ = W.read_checkpoint(path)
    names = sorted(n for n, a in tensors.items() if W.is_quantized(n, a.shape))
    res = {"tensors": len(names)}
    for kind in ("q4", "q8"):
        h = hashlib.sha256()
        for n in names:
            h.update(quant_replay.replay(tensors[n], kind).astype("<f4").tobytes())
        res[kind + "_sha256"] = h.hexdigest()
    return res


def write(root):
    cases = []
    for name, w in _cases():
        cases.append({"name": name, "rows": int(w.shape[0]), "cols": int(w.shape[1]),
                      "w": _hex(w), "q4": _hex(quant_replay.replay(w, "q4")),
                      "q8": _hex(quant_replay.replay(w, "q8"))})
    fixtures = []
    for name in fx.FIXTURES:
        d = dict(name=name, dir="fixtures/" + name)
        d.update(fixture_digest(os.path.join(root, "fixtures", name)))
        fixtures.append(d)
    doc = {"about": __doc__.strip().split("\n\n")[0].replace("\n", " "),
           "group": quant_replay.GROUP, "cases": cases, "fixtures": fixtures}
    os.makedirs(os.path.join(root, "testdata"), exist_ok=True)
    with open(os.path.join(root, "testdata", "quant_replay.json"), "w") as f:
        f.write("{\n")
        f.write(' "about": %s,\n "group": %d,\n' % (json.dumps(doc["about"]), doc["group"]))
        f.write(' "cases": [\n' + ",\n".join("  " + json.dumps(c, separators=(",", ":")) for c in cases) + "\n ],\n")
        f.write(' "fixtures": [\n' + ",\n".join("  " + json.dumps(c, separators=(",", ":")) for c in fixtures) + "\n ]\n}\n")
