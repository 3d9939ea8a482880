"""A pinned trace (TRACE.md schema) for any checkpoint directory the reference
reads — a golden fixture or a real Hugging Face download of one of the
families — so a real model can be held against `cflowc verify` too:

    cd golden && /usr/bin/python3 -m cflow_ref.trace_checkpoint DIR \\
        --prompt 1,450,4996 --generate 16 --weights q8_replay --out trace.json

It reads config.json and model.safetensors (or the shards of
model.safetensors.index.json), refuses what the reference does not implement
(naming the config key or the unused tensor), computes in f32 with one thread,
and writes the trace atomically. Exit codes: 0 written, 2 bad input or
refused checkpoint.
"""
import argparse
import os
import sys
import tempfile

import torch

from . import model_io, trace


def parse_prompt(text):
    try:
        ids = [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise ValueError("--prompt wants comma-separated token ids, got %r" % text)
    if not ids:
        raise ValueError("--prompt is empty")
    return ids


def write_atomic(path, text):
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".trace-")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def make(path, prompt, n_generate, weights, name=None):
    """The trace text for checkpoint directory path."""
    m = model_io.load(path, weights)
    V = m.cfg.vocab_size
    bad = [t for t in prompt if not 0 <= t < V]
    if bad:
        raise ValueError("prompt token %d is outside the vocabulary (%d)" % (bad[0], V))
    gen, steps = trace.run(m, prompt, n_generate)
    name = name or os.path.basename(os.path.normpath(path))
    return trace.dumps(name, m.cfg.architecture, weights, prompt, gen, steps)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("checkpoint", help="directory with config.json and safetensors")
    ap.add_argument("--prompt", required=True, help="comma-separated token ids, e.g. 1,450,4996")
    ap.add_argument("--generate", type=int, default=16, help="greedy tokens after the prompt (default 16)")
    ap.add_argument("--weights", choices=model_io.WEIGHTS, default="f32",
                    help="f32, or the converter's Q4_0/Q8_0 rounding replayed (default f32)")
    ap.add_argument("--name", help="the trace's model name (default: the directory's name)")
    ap.add_argument("--out", required=True, help="trace file to write (temp file + rename)")
    a = ap.parse_args(argv)
    torch.set_num_threads(1)
    try:
        if a.generate < 1:
            raise ValueError("--generate must be at least 1, got %d" % a.generate)
        if not os.path.isfile(os.path.join(a.checkpoint, "config.json")):
            raise ValueError("%s: no config.json" % a.checkpoint)
        if os.path.abspath(a.out).startswith(os.path.abspath(a.checkpoint) + os.sep):
            raise ValueError("--out %s is inside the checkpoint directory" % a.out)
        text = make(a.checkpoint, parse_prompt(a.prompt), a.generate, a.weights, a.name)
    except KeyError as e:
        print("trace_checkpoint: %s: missing tensor %s" % (a.checkpoint, e), file=sys.stderr)
        return 2
    except (ValueError, OSError) as e:
        print("trace_checkpoint: %s" % e, file=sys.stderr)
        return 2
    write_atomic(a.out, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
