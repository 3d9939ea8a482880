"""Load a fixture directory as a runnable reference model with f32,
q4_replay or q8_replay weights."""
import torch

from . import architectures, quant_replay
from . import weights as W

WEIGHTS = ("f32", "q4_replay", "q8_replay")


def load(path, weights="f32"):
    torch.set_num_threads(1)
    cfg, tensors, _ = W.read_checkpoint(path)
    kind = {"f32": "f32", "q4_replay": "q4", "q8_replay": "q8"}[weights]
    tensors = quant_replay.replay_tensors(tensors, kind, W.is_quantized)
    return architectures.build(cfg, W.to_torch(tensors))
