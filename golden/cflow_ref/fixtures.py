"""Fixture checkpoints: fixed-seed random HF-layout models, one per
architecture, plus llama_wide (multi-tile matrices) and stories260k (a real
llama2.c model converted to HF layout). See golden/README.md for what each
exercises.

Weights are N(0, 1/fan_in) (std 1/sqrt(fan_in)), norm weights 1 + N(0, 0.1²),
embeddings N(0, embed_std²); values are drawn in float64 from numpy's PCG64
with the fixture's seed, cast to f32, then stored as the fixture's dtype.
"""
import json
import os

import numpy as np

from . import llama2c, safetensors_io
from . import config as config_mod
from . import weights as W

# The shared small geometry: partial tiles everywhere (72 < 128 rows, 100 and
# 44 not multiples of 32, vocab 300 = 2·128 + 44), GQA 6:2.
SMALL = dict(hidden_size=72, num_attention_heads=6, num_key_value_heads=2, head_dim=12,
             intermediate_size=100, num_hidden_layers=6, vocab_size=300,
             max_position_embeddings=64, rope_theta=10000.0)
MOE = dict(num_experts=8, num_experts_per_tok=2, expert_intermediate_size=44)


def _pipeline(arch, style, dense_delay=0, expert_delay=0, moe=True, **extra):
    c = {"architectures": ["PipelineNativeForCausalLM"], "model_type": "pipeline_native",
         "architecture": arch, "combine_style": style,
         "dense_delay": dense_delay, "expert_delay": expert_delay}
    c.update(SMALL)
    c.update(MOE if moe else dict(num_experts=0, num_experts_per_tok=0, expert_intermediate_size=0))
    c.update(rms_norm_eps=1e-6, tie_word_embeddings=False, hidden_act="silu",
             bos_token_id=1, eos_token_id=2)
    c.update(extra)
    return c


# name → (config, storage dtype, seed, embedding std)
SPECS = {
    "llama": (dict({"architectures": ["LlamaForCausalLM"], "model_type": "llama"}, **SMALL,
                   rms_norm_eps=1e-5, tie_word_embeddings=False, hidden_act="silu",
                   bos_token_id=1, eos_token_id=2), "F32", 101, 1.0),
    "mixtral": (dict({"architectures": ["MixtralForCausalLM"], "model_type": "mixtral"},
                     **dict(SMALL, intermediate_size=44), num_local_experts=8, num_experts_per_tok=2,
                     rms_norm_eps=1e-5, tie_word_embeddings=False, hidden_act="silu",
                     bos_token_id=1, eos_token_id=2), "BF16", 102, 1.0),
    "arch1_decoupled_streams": (_pipeline("arch1_decoupled_streams", "DecoupledStreams", moe=False,
                                          merge_interval=3), "F32", 103, 1.0),
    "arch2_4_combined": (_pipeline("arch2_4_combined", "DelayedSum", 1, 2), "F16", 104, 1.0),
    "arch2_4_sync": (_pipeline("arch2_4_sync", "DelayedSum", 1, 0), "BF16", 105, 1.0),
    "arch3_pipeline_registers": (_pipeline("arch3_pipeline_registers", "PipelineRegisters", moe=False),
                                 "F32", 106, 1.0),
    "arch4_async_experts": (_pipeline("arch4_async_experts", "AsyncExperts", 0, 2), "F16", 107, 1.0),
    # arch5: the paper's 2 unique blocks × 3 iterations = effective depth 6.
    "arch5_fixed_point": (_pipeline("arch5_fixed_point", "PreNorm", moe=False, num_hidden_layers=2,
                                    block_iterations=3), "F32", 108, 1.0),
    "gemma4": (_pipeline("gemma4", "ParallelSqrt2", 0, 0,
                         layer_types=["sliding_attention"] * 5 + ["full_attention"],
                         sliding_window=4, global_head_dim=24, rope_theta_global=1e6,
                         partial_rotary_factor=0.25, attention_k_eq_v=True,
                         hidden_act="gelu_pytorch_tanh", use_embedding_scale=True, use_v_norm=True,
                         tie_word_embeddings=True, final_logit_softcapping=30.0), "F16", 109, 1.0),
    # Several 128×256 tiles both ways: 320 = 128+128+64 rows, 256+64 columns;
    # FFN 288 = 2·128+32 rows / 256+32 columns; vocab 600 = 4·128+88.
    "llama_wide": (dict({"architectures": ["LlamaForCausalLM"], "model_type": "llama"},
                        hidden_size=320, num_attention_heads=10, num_key_value_heads=2, head_dim=32,
                        intermediate_size=288, num_hidden_layers=2, vocab_size=600,
                        max_position_embeddings=64, rope_theta=10000.0, rms_norm_eps=1e-5,
                        tie_word_embeddings=True, hidden_act="silu", bos_token_id=1,
                        eos_token_id=2), "BF16", 110, 0.25),
}

STORIES_BIN = os.path.join(os.path.dirname(__file__), "..", "..", "models",
                           "stories260K.bin")
FIXTURES = list(SPECS) + ["stories260k"]


def random_tensors(cfg_dict, seed, embed_std):
    """{name: f32 array} for a config, in a fixed draw order."""
    cfg = config_mod.from_dict(cfg_dict)
    rng = np.random.default_rng(seed)
    d, H, Hkv, V = cfg.hidden_size, cfg.num_attention_heads, cfg.num_key_value_heads, cfg.vocab_size
    t = {}

    def mat(name, rows, cols):
        t[name] = (rng.standard_normal((rows, cols)) / np.sqrt(cols)).astype(np.float32)

    def norm(name, n):
        t[name] = (1.0 + 0.1 * rng.standard_normal(n)).astype(np.float32)

    t["model.embed_tokens.weight"] = (embed_std * rng.standard_normal((V, d))).astype(np.float32)
    for l in range(cfg.num_hidden_layers):
        p = W.layer_prefix(l)
        hd = cfg.layer_head_dim(l)
        norm(p + "input_layernorm.weight", d)
        mat(p + "self_attn.q_proj.weight", H * hd, d)
        mat(p + "self_attn.k_proj.weight", Hkv * hd, d)
        if not (cfg.attention_k_eq_v and cfg.is_full(l)):
            mat(p + "self_attn.v_proj.weight", Hkv * hd, d)
        mat(p + "self_attn.o_proj.weight", d, H * hd)
        norm(p + "post_attention_layernorm.weight", d)
        if cfg.intermediate_size:
            F = cfg.intermediate_size
            mat(p + "mlp.gate_proj.weight", F, d)
            mat(p + "mlp.up_proj.weight", F, d)
            mat(p + "mlp.down_proj.weight", d, F)
        if cfg.num_experts:
            if cfg.architecture in ("arch2_4_combined", "arch2_4_sync"):
                norm(p + "moe_norm.weight", d)
            mat(W.router_name(cfg, l), cfg.num_experts, d)
            Fe = cfg.expert_intermediate_size
            for e in range(cfg.num_experts):
                g, u, dn = W.expert_names(cfg, l, e)
                mat(g, Fe, d)
                mat(u, Fe, d)
                mat(dn, d, Fe)
    norm("model.norm.weight", d)
    if not cfg.tie_word_embeddings:
        mat("lm_head.weight", V, d)
    return t


def build(name):
    """(config dict, {name: f32 array}, storage dtype) of a fixture."""
    if name == "stories260k":
        cfg, t = llama2c.read(STORIES_BIN)
        return cfg, t, "F32"
    cfg, dtype, seed, embed_std = SPECS[name]
    return cfg, random_tensors(cfg, seed, embed_std), dtype


def write(name, root):
    """Write root/<name>/{config.json, model.safetensors}."""
    cfg, t, dtype = build(name)
    d = os.path.join(root, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")
    safetensors_io.save(os.path.join(d, "model.safetensors"), t, dtype,
                        metadata={"format": "pt", "generator": "golden/cflow_ref"})
