"""Checkpoint tensor names (ARCHITECTURES.md "Checkpoint convention"; Mixtral
uses HF's block_sparse_moe names) and the per-layer weight bundle."""
import json
import os

import torch

from . import config as config_mod
from . import safetensors_io


def layer_prefix(l):
    return "model.layers.%d." % l


# Tensors that stay F32 in every file whatever its quant type (matrices only:
# every 1-D vector — norms, biases — is F32 anyway): the MoE routers.
ROUTER_SUFFIXES = ("moe.router.weight", "block_sparse_moe.gate.weight", ".mlp.gate.weight",
                   "router.proj.weight")
# gemma4_text's fused expert banks [E, rows, cols]: the converter splits them
# into E matrices (gate_up into gate rows 0..fe-1 and up rows fe..2fe-1), each
# quantized like any matrix, so the replay runs over the rows of all experts.
FUSED_EXPERTS = ("experts.gate_up_proj", "experts.down_proj")


def router_name(cfg, l):
    if cfg.architecture == "mixtral":
        return layer_prefix(l) + "block_sparse_moe.gate.weight"
    if cfg.architecture == "qwen3_moe":
        return layer_prefix(l) + "mlp.gate.weight"
    return layer_prefix(l) + "moe.router.weight"


def expert_names(cfg, l, e):
    """(gate, up, down) tensor names of expert e of layer l."""
    p = layer_prefix(l)
    if cfg.architecture == "mixtral":
        b = p + "block_sparse_moe.experts.%d." % e
        return b + "w1.weight", b + "w3.weight", b + "w2.weight"
    if cfg.architecture == "qwen3_moe":
        b = p + "mlp.experts.%d." % e
        return b + "gate_proj.weight", b + "up_proj.weight", b + "down_proj.weight"
    b = p + "moe.experts.%d." % e
    return b + "gate_proj.weight", b + "up_proj.weight", b + "down_proj.weight"


def is_quantized(name, shape):
    """Whether the converter stores this tensor quantized in Q4_0/Q8_0 files:
    every 2-D matrix except the MoE router (norm and bias vectors are 1-D), and
    gemma4_text's 3-D fused expert banks."""
    if len(shape) == 3:
        return name.endswith(FUSED_EXPERTS)
    return len(shape) == 2 and not name.endswith(ROUTER_SUFFIXES)


INDEX = "model.safetensors.index.json"


def read_checkpoint(path):
    """(ModelConfig, {name: f32 numpy array}, {name: stored dtype}) of a fixture
    directory: model.safetensors, or the shards listed by model.safetensors.index.json
    (every tensor of every shard must be in the index's weight_map, and the
    reverse)."""
    cfg = config_mod.load(os.path.join(path, "config.json"))
    index = os.path.join(path, INDEX)
    if not os.path.exists(index):
        tensors, dtypes = safetensors_io.load(os.path.join(path, "model.safetensors"))
        return cfg, tensors, dtypes
    with open(index) as f:
        wmap = json.load(f)["weight_map"]
    tensors, dtypes = {}, {}
    for shard in sorted(set(wmap.values())):
        t, d = safetensors_io.load(os.path.join(path, shard))
        for n in t:
            if wmap.get(n) != shard:
                raise ValueError("%s: tensor %s is not mapped to this shard in %s" % (shard, n, INDEX))
        tensors.update(t)
        dtypes.update(d)
    missing = sorted(set(wmap) - set(tensors))
    if missing:
        raise ValueError("%s lists %s, found in no shard" % (INDEX, missing[0]))
    return cfg, tensors, dtypes


class Consumed(dict):
    """A tensor dict that records which names a model reads, so building a
    model can insist that every tensor of the checkpoint was used (an
    unclaimed tensor is an error, as in the converter)."""

    def __init__(self, *a):
        super().__init__(*a)
        self.read = set()

    def __getitem__(self, k):
        self.read.add(k)
        return super().__getitem__(k)

    def get(self, k, default=None):
        if k in self:
            self.read.add(k)
        return super().get(k, default)

    def unclaimed(self):
        return sorted(set(self) - self.read)


def to_torch(tensors):
    return {k: torch.from_numpy(v.copy()) for k, v in tensors.items()}
