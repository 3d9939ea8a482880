"""Regenerate every golden artifact: fixtures, traces, quant replay vectors.

    /usr/bin/python3 -m cflow_ref.generate [--out DIR] [--only NAME ...]

(run from golden/; `make golden` does it and checks determinism). Output is
a pure function of the code, the seeds and models/stories260K.bin.
"""
import argparse
import os

import numpy as np
import torch

from . import fixtures, model_io, quant_vectors, trace

GOLDEN = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
N_GENERATE = 18


def prompt_for(name):
    """BOS then five fixed-seed tokens (stories260k: BOS and llama2.c's first
    four greedy tokens)."""
    if name == "stories260k":
        return [1, 461, 461, 401, 401]
    cfg = fixtures.SPECS[name][0]
    rng = np.random.default_rng(fixtures.SPECS[name][2] + 1000)
    return [1] + [int(t) for t in rng.integers(3, cfg["vocab_size"], size=5)]


def write_traces(name, root):
    path = os.path.join(root, "fixtures", name)
    for w in model_io.WEIGHTS:
        m = model_io.load(path, w)
        p = prompt_for(name)
        gen, steps = trace.run(m, p, N_GENERATE)
        text = trace.dumps(name, m.cfg.architecture, w, p, gen, steps)
        os.makedirs(os.path.join(root, "traces"), exist_ok=True)
        with open(os.path.join(root, "traces", "%s_%s.json" % (name, w)), "w") as f:
            f.write(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default=GOLDEN)
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--no-quant-vectors", action="store_true")
    a = ap.parse_args()
    torch.set_num_threads(1)
    names = a.only or fixtures.FIXTURES
    for n in names:
        fixtures.write(n, os.path.join(a.out, "fixtures"))
        write_traces(n, a.out)
        print("golden: %s" % n, flush=True)
    if not a.no_quant_vectors and not a.only:
        quant_vectors.write(a.out)
        print("golden: testdata/quant_replay.json", flush=True)


if __name__ == "__main__":
    main()
