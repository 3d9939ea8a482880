"""Checkpoint tensor names (ARCHITECTURES.md "Checkpoint convention"; Mixtral
uses HF's block_sparse_moe names) and the per-layer weight bundle."""
import os

import torch

from . import config as config_mod
from . import safetensors_io


def layer_prefix(l):
    return "model.layers.%d." % l


def router_name(cfg, l):
    if cfg.architecture == "mixtral":
        return layer_prefix(l) + "block_sparse_moe.gate.weight"
    return layer_prefix(l) + "moe.router.weight"


def expert_names(cfg, l, e):
    """(gate, up, down) tensor names of expert e of layer l."""
    p = layer_prefix(l)
    if cfg.architecture == "mixtral":
        b = p + "block_sparse_moe.experts.%d." % e
        return b + "w1.weight", b + "w3.weight", b + "w2.weight"
    b = p + "moe.experts.%d." % e
    return b + "gate_proj.weight", b + "up_proj.weight", b + "down_proj.weight"


def is_quantized(name, shape):
    """Whether the converter stores this tensor quantized in Q4_0/Q8_0 files:
    every 2-D matrix except the MoE router (norm vectors are 1-D)."""
    return len(shape) == 2 and not (name.endswith("moe.router.weight")
                                    or name.endswith("block_sparse_moe.gate.weight"))


def read_checkpoint(path):
    """(ModelConfig, {name: f32 numpy array}, {name: stored dtype}) of a fixture directory."""
    cfg = config_mod.load(os.path.join(path, "config.json"))
    tensors, dtypes = safetensors_io.load(os.path.join(path, "model.safetensors"))
    return cfg, tensors, dtypes


def to_torch(tensors):
    return {k: torch.from_numpy(v.copy()) for k, v in tensors.items()}
