"""Byte-level data for issue 10: tokenizer, the 90/10 split, training windows.

Tokenizer: ids 0–255 are the UTF-8 bytes themselves, BOS = 256, EOS = 257,
vocabulary 258 (cflow's tokenizer kind "byte"; config.json carries
"tokenizer": "byte", "bos_token_id": 256, "eos_token_id": 257).

Split (by bytes, at a paragraph boundary): the training text is
data/tinystories_sample.txt up to the first blank line ("\\n\\n")
at or after 90% of its bytes, blank line included; the test text is the
rest. Both are plain UTF-8 files, so the Go side reads the same text.
"""
import os

import torch

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DATA = os.path.join(ROOT, "data", "tinystories_sample.txt")
BOS, EOS, VOCAB = 256, 257, 258
TRAINED = os.path.join(ROOT, "golden", "trained")


def trained_models(root=TRAINED):
    """Names of the checkpoint directories under golden/trained (each holds
    config.json + model.safetensors; the name is the architecture, or the
    architecture plus a suffix for a run with another budget, e.g.
    arch2_4_combined_demo)."""
    if not os.path.isdir(root):
        return []
    return sorted(n for n in os.listdir(root) if os.path.exists(os.path.join(root, n, "model.safetensors")))


def encode(text_bytes):
    """Bytes → ids (no BOS)."""
    return list(text_bytes)


def split(path=DATA):
    """(train_bytes, test_bytes)."""
    with open(path, "rb") as f:
        b = f.read()
    cut = b.index(b"\n\n", int(len(b) * 0.9)) + 2
    return b[:cut], b[cut:]


def batches(train_bytes, seq, batch, seed):
    """Endless deterministic batches of windows: input [BOS] + bytes[o : o+seq-1],
    targets bytes[o : o+seq] (every window token predicted from its prefix,
    the first from BOS alone: the ppl protocol's chunk evaluation)."""
    data = torch.tensor(list(train_bytes), dtype=torch.long)
    g = torch.Generator().manual_seed(seed)
    n = len(data) - seq
    bos = torch.full((batch, 1), BOS, dtype=torch.long)
    ar = torch.arange(seq)
    while True:
        o = torch.randint(0, n, (batch,), generator=g)
        tgt = data[o[:, None] + ar[None, :]]
        yield torch.cat([bos, tgt[:, :-1]], dim=1), tgt
