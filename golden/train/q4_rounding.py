"""Would another Q4_0 rounding meet TRACE.md's Q4 bar (issue 6)? A what-if on
the reference, not a change to the converter.

For each committed trained model, replays its pinned f32 trace teacher-forced
with Q4_0 weights rounded two ways and reports the residual-norm error per
step against the f32 trace (the quantity TRACE.md bounds by 5%):

  cflow     s = max|w| / 7, round half away from zero, q in [1, 15]
            (quant.Encode; what golden/cflow_ref/quant_replay.py replays)
  llamacpp  d = (the signed value of largest magnitude) / -8,
            q = min(15, trunc(w / d + 8.5)), all 16 levels
            (llama.cpp's quantize_row_q4_0_ref)

Both decode as w = f16(scale) * (q - 8), so either fits the same Q4_0 tile.

    /usr/bin/python3 golden/train/q4_rounding.py
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(HERE), HERE]

import numpy as np  # noqa: E402
import torch  # noqa: E402

import data  # noqa: E402
from cflow_ref import model_io, quant_replay  # noqa: E402


def llamacpp_q4(w):
    """Quantize-dequantize a 2-D f32 array with llama.cpp's Q4_0 reference rounding."""
    b = quant_replay.groups_of(w)
    i = np.argmax(np.abs(b), axis=-1)
    signed_max = np.take_along_axis(b, i[..., None], -1)[..., 0]
    d = (signed_max / np.float32(-8)).astype(np.float32)
    inv = np.where(d == 0, np.float32(0), np.float32(1) / np.where(d == 0, np.float32(1), d)).astype(np.float32)
    q = np.minimum(15, np.trunc((b * inv[..., None]).astype(np.float32) + np.float32(8.5)))
    scale = d.astype(np.float16).astype(np.float32)
    deq = (scale[..., None] * (q - 8).astype(np.float32)).astype(np.float32)
    return quant_replay.ungroup(deq, np.shape(w)[1])


def norm_errors(path, trace):
    """Per step, the worst relative residual-norm error of q4_replay weights
    against the f32 trace, feeding the trace's tokens."""
    m = model_io.load(path, "q4_replay")
    state = m.new_state()
    out = []
    for step, tok in zip(trace["steps"], trace["prompt"] + trace["generated"]):
        got = m.step(state, tok).residual_norms[0]
        out.append(max(abs(g - r) / r for r, g in zip(step["residual_norms"], got)))
    return out


def main():
    torch.set_num_threads(1)
    cflow = quant_replay.replay
    roundings = {"cflow": cflow, "llamacpp": lambda w, kind: llamacpp_q4(w) if kind == "q4" else cflow(w, kind)}
    print("%-24s %-9s %8s %8s %s" % ("model", "rounding", "worst", "mean", "steps > 5%"))
    for name in data.trained_models():
        with open(os.path.join(data.TRAINED, "traces", name + "_f32.json")) as f:
            trace = json.load(f)
        for label, fn in roundings.items():
            quant_replay.replay = fn
            e = norm_errors(os.path.join(data.TRAINED, name), trace)
            print("%-24s %-9s %8.4f %8.4f %d/%d" % (name, label, max(e), float(np.mean(e)),
                                                    sum(x > 0.05 for x in e), len(e)), flush=True)
    quant_replay.replay = cflow


if __name__ == "__main__":
    main()
