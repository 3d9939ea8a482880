"""Regenerate every golden artifact: fixtures, traces, quant replay vectors.

    /usr/bin/python3 -m cflow_ref.generate [--out DIR] [--only NAME ...]

(run from golden/; `make golden` does it and checks determinism). Output is
a pure function of the code, the seeds and models/stories260K.bin.
"""
import argparse
import os

import numpy as np
import torch

from . import family_fixtures, fixtures, model_io, quant_vectors, trace

GOLDEN = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
N_GENERATE = 18
# Family traces: BOS + 7 seeded tokens, then 16 greedy ones (24 steps as for
# the others): random tied models soon repeat one token when decoding greedily,
# so more of the 24 inputs come from the seeded prompt.
FAMILY_PROMPT, FAMILY_GENERATE = 7, 16
# The real HF families live apart (golden/families/{fixtures,traces}) so the
# Go tests that walk golden/fixtures and golden/traces pick them up only once
# the converter knows the families (FAMILIES.md).
FAMILIES = "families"
ALL = fixtures.FIXTURES + family_fixtures.FIXTURES


# Real Gemma 4 (issue 20) apart again until its converter lands: no Go test
# walks golden/gemma4_text yet.
GEMMA4_TEXT = "gemma4_text"


def is_family(name):
    return name in family_fixtures.SPECS


def base(root, name):
    """Where a fixture's fixtures/ and traces/ directories are under root."""
    if name in family_fixtures.GEMMA4:
        return os.path.join(root, GEMMA4_TEXT)
    return os.path.join(root, FAMILIES) if is_family(name) else root


def fixture_dir(root, name):
    return os.path.join(base(root, name), "fixtures", name)


def trace_file(root, name, weights):
    return os.path.join(base(root, name), "traces", "%s_%s.json" % (name, weights))


def prompt_for(name):
    """BOS then five fixed-seed tokens (families: seven; stories260k: BOS and
    llama2.c's first four greedy tokens)."""
    if name == "stories260k":
        return [1, 461, 461, 401, 401]
    spec = family_fixtures.SPECS[name] if is_family(name) else fixtures.SPECS[name]
    cfg = spec[0].get("text_config") or spec[0]
    rng = np.random.default_rng(spec[2] + 1000)
    n = FAMILY_PROMPT if is_family(name) else 5
    return [cfg.get("bos_token_id", 1)] + [int(t) for t in rng.integers(3, cfg["vocab_size"], size=n)]


def write_fixture(name, root):
    if is_family(name):
        family_fixtures.write(name, os.path.join(base(root, name), "fixtures"))
    else:
        fixtures.write(name, os.path.join(root, "fixtures"))


def write_traces(name, root):
    path = fixture_dir(root, name)
    for w in model_io.WEIGHTS:
        m = model_io.load(path, w)
        p = prompt_for(name)
        gen, steps = trace.run(m, p, FAMILY_GENERATE if is_family(name) else N_GENERATE)
        text = trace.dumps(name, m.cfg.architecture, w, p, gen, steps)
        out = trace_file(root, name, w)
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with open(out, "w") as f:
            f.write(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default=GOLDEN)
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--no-quant-vectors", action="store_true")
    a = ap.parse_args()
    torch.set_num_threads(1)
    names = a.only or ALL
    for n in names:
        write_fixture(n, a.out)
        write_traces(n, a.out)
        print("golden: %s" % n, flush=True)
    if not a.no_quant_vectors and not a.only:
        quant_vectors.write(a.out)
        print("golden: testdata/quant_replay.json", flush=True)


if __name__ == "__main__":
    main()
