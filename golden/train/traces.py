"""Pinned traces of the trained checkpoints, with the golden reference's own
trace writer (golden/cflow_ref/trace.py: TRACE.md schema, teacher-forced
greedy), so the schema and number formatting are identical to golden/traces.

Prompt: BOS (256) then the bytes of "Once upon a time"; 24 generated tokens.

    /usr/bin/python3 golden/train/traces.py [NAME ...]     # default: every checkpoint in golden/trained

Writes golden/trained/traces/<name>_<weights>.json for f32, q4_replay, q8_replay.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(HERE), HERE]

import torch  # noqa: E402

import data  # noqa: E402
from cflow_ref import model_io, trace  # noqa: E402

TRAINED = data.TRAINED
PROMPT = [data.BOS] + data.encode(b"Once upon a time")
N_GENERATE = 24


def write(arch):
    path = os.path.join(TRAINED, arch)
    os.makedirs(os.path.join(TRAINED, "traces"), exist_ok=True)
    for w in model_io.WEIGHTS:
        m = model_io.load(path, w)
        gen, steps = trace.run(m, PROMPT, N_GENERATE)
        text = trace.dumps("trained_" + arch, m.cfg.architecture, w, PROMPT, gen, steps)
        out = os.path.join(TRAINED, "traces", "%s_%s.json" % (arch, w))
        with open(out, "w") as f:
            f.write(text)
        print("%s %s: %r" % (arch, w, bytes(t for t in gen if t < 256).decode("utf-8", "replace")), flush=True)


if __name__ == "__main__":
    torch.set_num_threads(1)
    for a in sys.argv[1:] or data.trained_models():
        write(a)
