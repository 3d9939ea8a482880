"""Fixture checkpoints of the real Hugging Face families: fixed-seed random
models in HF directory form (config.json with each family's real keys and
architectures name; safetensors with the real tensor names; one sharded with
model.safetensors.index.json). Written to golden/families/fixtures/<name>/
(Gemma 4: golden/gemma4_text/fixtures/<name>/); golden/FAMILIES.md says what
each one exercises.

Weights are N(0, 1/fan_in); RMSNorm weights 1 + N(0, 0.1²) (gemma3 stores the
offset form, so N(0, 0.1²) there); biases N(0, bias_std²); embeddings
N(0, embed_std²). Tied fixtures use small embeddings (0.1–0.3, smaller still
where the embedding is scaled by sqrt(d)) so the layers, not the token's own
embedding row, decide the next token and the greedy continuations vary. Values are drawn in float64 from numpy's PCG64 with the
fixture's seed, cast to f32, then stored as the fixture's dtype.
"""
import json
import os

import numpy as np

from . import safetensors_io
from . import config as config_mod
from . import weights as W

# Keys every published config carries that do not change the decode computation.
_COMMON = dict(attention_dropout=0.0, initializer_range=0.02, use_cache=True,
               transformers_version="4.51.0")

TORCH_DTYPE = {"F32": "float32", "F16": "float16", "BF16": "bfloat16"}


def _cfg(arch_class, model_type, dtype, **kw):
    c = {"architectures": [arch_class], "model_type": model_type}
    c.update(_COMMON)
    c.update(kw)
    c["torch_dtype"] = TORCH_DTYPE[dtype]
    return dict(sorted(c.items()))


# name → (config, storage dtype, seed, embedding std, bias std, shards)
SPECS = {
    # Llama 3.2 style: llama3 rope scaling whose three bands all occur at
    # head_dim 16 (wavelengths 6.3 < 16 kept; 19.9 and 62.8 smoothed; ≥ 199
    # divided by 8) with original_max_position_embeddings 64; MQA (1 KV head);
    # head_dim 16 ≠ 72/4; attention_bias and mlp_bias; tied embeddings.
    "llama3": (_cfg("LlamaForCausalLM", "llama", "F32", hidden_size=72, num_attention_heads=4,
                    num_key_value_heads=1, head_dim=16, intermediate_size=100, num_hidden_layers=2,
                    vocab_size=300, max_position_embeddings=512, rope_theta=10000.0,
                    rope_scaling={"factor": 8.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                                  "original_max_position_embeddings": 64, "rope_type": "llama3"},
                    attention_bias=True, mlp_bias=True, tie_word_embeddings=True,
                    hidden_act="silu", rms_norm_eps=1e-5, pretraining_tp=1,
                    bos_token_id=1, eos_token_id=2), "F32", 201, 0.3, 0.2, 1),
    # Llama 2 style with linear rope scaling (factor 4), GQA 6:2, head_dim from
    # hidden_size / heads (no head_dim key), untied, f16 storage.
    "llama_linear": (_cfg("LlamaForCausalLM", "llama", "F16", hidden_size=72, num_attention_heads=6,
                          num_key_value_heads=2, intermediate_size=100, num_hidden_layers=2,
                          vocab_size=300, max_position_embeddings=256, rope_theta=10000.0,
                          rope_scaling={"factor": 4.0, "type": "linear"}, attention_bias=False,
                          mlp_bias=False, tie_word_embeddings=False, hidden_act="silu",
                          rms_norm_eps=1e-5, pretraining_tp=1, bos_token_id=1, eos_token_id=2),
                     "F16", 202, 1.0, 0.0, 1),
    # Mistral: sliding_window 5 on every layer (24-step traces), head_dim 16
    # given explicitly (6·16 = 96 ≠ 72), GQA 6:2; two shards + index.
    "mistral": (_cfg("MistralForCausalLM", "mistral", "F16", hidden_size=72, num_attention_heads=6,
                     num_key_value_heads=2, head_dim=16, intermediate_size=100, num_hidden_layers=2,
                     vocab_size=300, max_position_embeddings=512, rope_theta=10000.0,
                     sliding_window=5, tie_word_embeddings=False, hidden_act="silu",
                     rms_norm_eps=1e-5, bos_token_id=1, eos_token_id=2), "F16", 203, 1.0, 0.0, 2),
    # Qwen2.5: q/k/v biases, MQA (5 heads, 1 KV head, head_dim 24), d 120 and
    # FFN 136 (partial 32-groups and tiles), tied, θ 1e6, bf16. sliding_window 4
    # is present but use_sliding_window is false: it must have no effect.
    "qwen2": (_cfg("Qwen2ForCausalLM", "qwen2", "BF16", hidden_size=120, num_attention_heads=5,
                   num_key_value_heads=1, intermediate_size=136, num_hidden_layers=2, vocab_size=300,
                   max_position_embeddings=512, max_window_layers=1, rope_theta=1000000.0,
                   sliding_window=4, use_sliding_window=False, tie_word_embeddings=True,
                   hidden_act="silu", rms_norm_eps=1e-6, bos_token_id=1, eos_token_id=2),
              "BF16", 204, 0.3, 0.5, 1),
    # Qwen3: q_norm/k_norm per head before RoPE, head_dim 24 with 4 heads (96 ≠ 72),
    # GQA 4:2, tied (as Qwen3 0.6B–4B), f32.
    "qwen3": (_cfg("Qwen3ForCausalLM", "qwen3", "F32", hidden_size=72, num_attention_heads=4,
                   num_key_value_heads=2, head_dim=24, intermediate_size=100, num_hidden_layers=2,
                   vocab_size=300, max_position_embeddings=512, max_window_layers=2,
                   rope_theta=1000000.0, rope_scaling=None, sliding_window=None,
                   use_sliding_window=False, attention_bias=False, tie_word_embeddings=True,
                   hidden_act="silu", rms_norm_eps=1e-6, bos_token_id=1, eos_token_id=2),
              "F32", 205, 0.3, 0.0, 1),
    # Qwen3-MoE as published (every layer sparse): 8 experts, top-3, expert
    # width 40, norm_topk_prob true; q/k-norm; head_dim 16 with 4 heads, MQA.
    "qwen3_moe": (_cfg("Qwen3MoeForCausalLM", "qwen3_moe", "BF16", hidden_size=72,
                       num_attention_heads=4, num_key_value_heads=1, head_dim=16,
                       intermediate_size=100, moe_intermediate_size=40, num_experts=8,
                       num_experts_per_tok=3, norm_topk_prob=True, decoder_sparse_step=1,
                       mlp_only_layers=[], num_hidden_layers=2, vocab_size=300,
                       max_position_embeddings=512, max_window_layers=2, rope_theta=1000000.0,
                       rope_scaling=None, sliding_window=None, use_sliding_window=False,
                       attention_bias=False, output_router_logits=False,
                       router_aux_loss_coef=0.001, tie_word_embeddings=False, hidden_act="silu",
                       rms_norm_eps=1e-6, bos_token_id=1, eos_token_id=2), "BF16", 206, 1.0, 0.0, 1),
    # Qwen3-MoE the other way: norm_topk_prob false (the raw top-k softmax
    # probabilities), top-2 of 8, GQA 4:2, f16.
    "qwen3_moe_raw": (_cfg("Qwen3MoeForCausalLM", "qwen3_moe", "F16", hidden_size=72,
                           num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                           intermediate_size=100, moe_intermediate_size=40, num_experts=8,
                           num_experts_per_tok=2, norm_topk_prob=False, decoder_sparse_step=1,
                           mlp_only_layers=[], num_hidden_layers=2, vocab_size=300,
                           max_position_embeddings=512, max_window_layers=2, rope_theta=1000000.0,
                           rope_scaling=None, sliding_window=None, use_sliding_window=False,
                           attention_bias=False, output_router_logits=False,
                           router_aux_loss_coef=0.001, tie_word_embeddings=False,
                           hidden_act="silu", rms_norm_eps=1e-6, bos_token_id=1, eos_token_id=2),
                      "F16", 207, 1.0, 0.0, 1),
    # Qwen3-MoE with a dense layer among the sparse ones: mlp_only_layers [1]
    # (layers 0 and 2 sparse, layer 1 a dense MLP of width 100).
    # The reference computes it; the converter refuses these keys (no published
    # checkpoint uses them) and verify asserts that refusal.
    "qwen3_moe_mixed": (_cfg("Qwen3MoeForCausalLM", "qwen3_moe", "BF16", hidden_size=72,
                             num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                             intermediate_size=100, moe_intermediate_size=40, num_experts=8,
                             num_experts_per_tok=2, norm_topk_prob=True, decoder_sparse_step=1,
                             mlp_only_layers=[1], num_hidden_layers=3, vocab_size=300,
                             max_position_embeddings=512, max_window_layers=3, rope_theta=1000000.0,
                             rope_scaling=None, sliding_window=None, use_sliding_window=False,
                             attention_bias=False, output_router_logits=False,
                             router_aux_loss_coef=0.001, tie_word_embeddings=False,
                             hidden_act="silu", rms_norm_eps=1e-6, bos_token_id=1, eos_token_id=2),
                        "BF16", 212, 1.0, 0.0, 1),
    # Gemma 3 (1B-style config, no tie_word_embeddings key: tied by default):
    # bf16, so the embedding scale sqrt(72) = 8.485… becomes 8.5; 5 layers with
    # sliding_window_pattern 3 (layer 2 full, the others sliding, window 4);
    # MQA, head_dim 24 (4·24 ≠ 72), query_pre_attn_scalar 20 ≠ head_dim;
    # global rope θ 1e6 with linear scaling 8, local θ 1e4 unscaled.
    "gemma3": (_cfg("Gemma3ForCausalLM", "gemma3_text", "BF16", hidden_size=72, num_attention_heads=4,
                    num_key_value_heads=1, head_dim=24, intermediate_size=100, num_hidden_layers=5,
                    vocab_size=300, max_position_embeddings=512, query_pre_attn_scalar=20,
                    sliding_window=4, sliding_window_pattern=3, rope_theta=1000000.0,
                    rope_local_base_freq=10000.0, rope_scaling={"factor": 8.0, "rope_type": "linear"},
                    attn_logit_softcapping=None, final_logit_softcapping=None,
                    attention_bias=False, cache_implementation="hybrid",
                    hidden_activation="gelu_pytorch_tanh", rms_norm_eps=1e-6, pad_token_id=0,
                    bos_token_id=2, eos_token_id=[1, 106]), "BF16", 208, 0.1, 0.0, 1),
    # Gemma 3 with explicit layer_types (newer configs, 270M-style) that no
    # pattern gives (full, sliding, full), f16 (scale f16(8.485…) = 8.484375),
    # GQA 4:2, no rope_scaling, explicit tie_word_embeddings.
    "gemma3_layer_types": (_cfg("Gemma3ForCausalLM", "gemma3_text", "F16", hidden_size=72,
                                num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                                intermediate_size=100, num_hidden_layers=3, vocab_size=300,
                                max_position_embeddings=512, query_pre_attn_scalar=16,
                                sliding_window=3, sliding_window_pattern=6,
                                layer_types=["full_attention", "sliding_attention", "full_attention"],
                                rope_theta=1000000.0, rope_local_base_freq=10000.0, rope_scaling=None,
                                attn_logit_softcapping=None, final_logit_softcapping=None,
                                attention_bias=False, hidden_activation="gelu_pytorch_tanh",
                                rms_norm_eps=1e-6, tie_word_embeddings=True, pad_token_id=0,
                                bos_token_id=2, eos_token_id=1), "F16", 209, 0.1, 0.0, 1),
}

_GEMMA4_TEXT = dict(
    attention_bias=False, attention_dropout=0.0, attention_k_eq_v=True, bos_token_id=2,
    enable_moe_block=True, eos_token_id=[1, 106], final_logit_softcapping=30.0,
    hidden_activation="gelu_pytorch_tanh", hidden_size_per_layer_input=0, initializer_range=0.02,
    max_position_embeddings=262144, model_type="gemma4_text", num_kv_shared_layers=0,
    pad_token_id=0, rms_norm_eps=1e-6, tie_word_embeddings=True, use_bidirectional_attention="vision",
    use_cache=True, use_double_wide_mlp=False, vocab_size=300, vocab_size_per_layer_input=300)

# Gemma 4 (issue 20): shaped like 26B-A4B — 128 experts, top-8, the always-on
# MLP beside them, sliding layers (head_dim 16, 2 KV heads) and a full last
# layer (global_head_dim 32, 1 KV head, K = V from k_proj, proportional RoPE
# rotating 4 of 16 pairs), window 4, soft-cap 30, bf16 (embedding scale
# bf16(sqrt(40)) = 6.3125) — at tiny widths (d 40, MLP 72, experts 4).
SPECS["gemma4_text"] = (dict(sorted(dict(
    _GEMMA4_TEXT, architectures=["Gemma4ForCausalLM"], dtype="bfloat16", global_head_dim=32,
    head_dim=16, hidden_size=40, intermediate_size=72, moe_intermediate_size=4,
    num_attention_heads=4, num_experts=128, top_k_experts=8, num_global_key_value_heads=1,
    num_key_value_heads=2, num_hidden_layers=3,
    layer_types=["sliding_attention", "sliding_attention", "full_attention"],
    rope_parameters={"full_attention": {"partial_rotary_factor": 0.25, "rope_theta": 1000000.0,
                                        "rope_type": "proportional"},
                     "sliding_attention": {"rope_theta": 10000.0, "rope_type": "default"}},
    sliding_window=4, transformers_version="5.5.0").items())), "BF16", 210, 0.25, 0.0, 1)

# The multimodal checkpoint form: Gemma4ForConditionalGeneration, text keys
# under text_config (no layer_types: the default pattern, last layer forced to
# full; no rope_parameters: the defaults), tensors under model.language_model.,
# a vision tower to skip; f32, 16 experts top-4, 3 layers; two shards + index
# as the published checkpoints come.
SPECS["gemma4_mm"] = (dict(sorted(dict(
    architectures=["Gemma4ForConditionalGeneration"], model_type="gemma4", dtype="float32",
    audio_config=None, boi_token_id=255, eoi_token_id=256, image_token_id=257, initializer_range=0.02,
    tie_word_embeddings=True, transformers_version="5.5.0",
    vision_config={"model_type": "gemma4_vision", "hidden_size": 16, "intermediate_size": 32,
                   "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 2,
                   "head_dim": 8, "patch_size": 16},
    text_config=dict(sorted(dict(
        _GEMMA4_TEXT, dtype="float32", global_head_dim=32, head_dim=16, hidden_size=40,
        intermediate_size=48, moe_intermediate_size=8, num_attention_heads=2, num_experts=16,
        top_k_experts=4, num_global_key_value_heads=1, num_key_value_heads=1,
        num_hidden_layers=3, sliding_window=4).items()))).items())), "F32", 211, 0.25, 0.0, 2)

# Gemma 4 without the MoE block and with attention_k_eq_v false (full layers
# keep v_proj and num_key_value_heads), global_head_dim 24 = 2·head_dim with
# proportional RoPE 0.5 (6 of 12 pairs), window 3, soft-cap 30, f16.
SPECS["gemma4_dense"] = (dict(sorted(dict(
    _GEMMA4_TEXT, architectures=["Gemma4ForCausalLM"], dtype="float16", attention_k_eq_v=False,
    enable_moe_block=False, global_head_dim=24, head_dim=12, hidden_size=56, intermediate_size=80,
    num_attention_heads=4, num_key_value_heads=2, num_hidden_layers=4,
    layer_types=["sliding_attention", "full_attention", "sliding_attention", "full_attention"],
    rope_parameters={"full_attention": {"partial_rotary_factor": 0.5, "rope_theta": 1000000.0,
                                        "rope_type": "proportional"},
                     "sliding_attention": {"rope_theta": 10000.0, "rope_type": "default"}},
    sliding_window=3, transformers_version="5.5.0").items())), "F16", 213, 0.25, 0.0, 1)

FIXTURES = list(SPECS)
# Written to golden/gemma4_text/ instead of golden/families/ (generate.base).
GEMMA4 = ("gemma4_text", "gemma4_mm", "gemma4_dense")


def random_tensors(cfg_dict, seed, embed_std, bias_std):
    """{name: f32 array} for a family config, in a fixed draw order."""
    cfg = config_mod.from_dict(cfg_dict)
    rng = np.random.default_rng(seed)
    d, H, Hkv, V, hd = (cfg.hidden_size, cfg.num_attention_heads, cfg.num_key_value_heads,
                        cfg.vocab_size, cfg.head_dim)
    t = {}

    def mat(name, rows, cols):
        t[name] = (rng.standard_normal((rows, cols)) / np.sqrt(cols)).astype(np.float32)

    def norm(name, n):
        base = 0.0 if cfg.norm_plus_one else 1.0
        t[name] = (base + 0.1 * rng.standard_normal(n)).astype(np.float32)

    def bias(name, n):
        t[name] = (bias_std * rng.standard_normal(n)).astype(np.float32)

    t["model.embed_tokens.weight"] = (embed_std * rng.standard_normal((V, d))).astype(np.float32)
    for l in range(cfg.num_hidden_layers):
        p = W.layer_prefix(l)
        a = p + "self_attn."
        norm(p + "input_layernorm.weight", d)
        for n, rows in (("q", H * hd), ("k", Hkv * hd), ("v", Hkv * hd)):
            mat(a + n + "_proj.weight", rows, d)
            if cfg.attention_bias or cfg.qkv_bias:
                bias(a + n + "_proj.bias", rows)
        mat(a + "o_proj.weight", d, H * hd)
        if cfg.attention_bias:
            bias(a + "o_proj.bias", d)
        if cfg.qk_norm:
            norm(a + "q_norm.weight", hd)
            norm(a + "k_norm.weight", hd)
        norm(p + "post_attention_layernorm.weight", d)
        if cfg.sandwich_norms:
            norm(p + "pre_feedforward_layernorm.weight", d)
            norm(p + "post_feedforward_layernorm.weight", d)
        if cfg.is_moe_layer(l):
            mat(W.router_name(cfg, l), cfg.num_experts, d)
            Fe = cfg.expert_intermediate_size
            for e in range(cfg.num_experts):
                g, u, dn = W.expert_names(cfg, l, e)
                mat(g, Fe, d)
                mat(u, Fe, d)
                mat(dn, d, Fe)
        else:
            F = cfg.intermediate_size
            for n, rows, cols in (("gate", F, d), ("up", F, d), ("down", d, F)):
                mat(p + "mlp.%s_proj.weight" % n, rows, cols)
                if cfg.mlp_bias:
                    bias(p + "mlp.%s_proj.bias" % n, rows)
    norm("model.norm.weight", d)
    if not cfg.tie_word_embeddings:
        mat("lm_head.weight", V, d)
    return t


def gemma4_tensors(cfg_dict, seed, embed_std):
    """{name: f32 array} for a gemma4_text config (multimodal: model.language_model.
    names plus a small vision tower the converter must skip)."""
    cfg = config_mod.from_dict(cfg_dict)
    rng = np.random.default_rng(seed)
    d, H, V = cfg.hidden_size, cfg.num_attention_heads, cfg.vocab_size
    mm = "text_config" in cfg_dict
    root = "model.language_model." if mm else "model."
    t = {}

    def mat(name, *shape):
        t[name] = (rng.standard_normal(shape) / np.sqrt(shape[-1])).astype(np.float32)

    def vec(name, n, lo=None, hi=None):
        if lo is None:
            t[name] = (1.0 + 0.1 * rng.standard_normal(n)).astype(np.float32)
        else:
            t[name] = rng.uniform(lo, hi, n).astype(np.float32)

    t[root + "embed_tokens.weight"] = (embed_std * rng.standard_normal((V, d))).astype(np.float32)
    for l in range(cfg.num_hidden_layers):
        p = root + "layers.%d." % l
        a = p + "self_attn."
        full = cfg.is_full(l)
        hd = cfg.layer_head_dim(l)
        k_eq_v = cfg.attention_k_eq_v and full
        kv = cfg.num_global_key_value_heads if k_eq_v else cfg.num_key_value_heads
        for n in ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                  "post_feedforward_layernorm"):
            vec(p + n + ".weight", d)
        mat(a + "q_proj.weight", H * hd, d)
        mat(a + "k_proj.weight", kv * hd, d)
        if not k_eq_v:
            mat(a + "v_proj.weight", kv * hd, d)
        mat(a + "o_proj.weight", d, H * hd)
        vec(a + "q_norm.weight", hd)
        vec(a + "k_norm.weight", hd)
        F, E, Fe = cfg.intermediate_size, cfg.num_experts, cfg.expert_intermediate_size
        mat(p + "mlp.gate_proj.weight", F, d)
        mat(p + "mlp.up_proj.weight", F, d)
        mat(p + "mlp.down_proj.weight", d, F)
        if E:
            mat(p + "router.proj.weight", E, d)
            vec(p + "router.scale", d)
            vec(p + "router.per_expert_scale", E, 0.5, 1.5)
            mat(p + "experts.gate_up_proj", E, 2 * Fe, d)
            mat(p + "experts.down_proj", E, d, Fe)
            for n in ("pre_feedforward_layernorm_2", "post_feedforward_layernorm_1",
                      "post_feedforward_layernorm_2"):
                vec(p + n + ".weight", d)
        vec(p + "layer_scalar", 1, 0.5, 1.5)
    vec(root + "norm.weight", d)
    if not cfg.tie_word_embeddings:
        mat("lm_head.weight", V, d)
    if mm:
        v = cfg_dict["vision_config"]["hidden_size"]
        mat("model.vision_tower.encoder.layers.0.self_attn.q_proj.linear.weight", v, v)
        vec("model.vision_tower.encoder.layers.0.input_layernorm.weight", v)
        mat("model.embed_vision.embedding_projection.weight", d, v)
    return t


def build(name):
    """(config dict, {name: f32 array}, storage dtype, shards) of a family fixture."""
    cfg, dtype, seed, embed_std, bias_std, shards = SPECS[name]
    if name.startswith("gemma4"):
        return cfg, gemma4_tensors(cfg, seed, embed_std), dtype, shards
    return cfg, random_tensors(cfg, seed, embed_std, bias_std), dtype, shards


def split(names, sizes, shards):
    """Sorted tensor names cut into `shards` consecutive runs of about equal bytes."""
    total, runs, acc = sum(sizes[n] for n in names), [[] for _ in range(shards)], 0
    for n in names:
        runs[min(shards - 1, acc * shards // total)].append(n)
        acc += sizes[n]
    return runs


def write_checkpoint(d, cfg, t, dtype, shards=1, metadata=None):
    """Write d/config.json and d/model.safetensors, or with shards > 1 the HF
    sharded form: model-0000i-of-0000N.safetensors + model.safetensors.index.json
    ({"metadata": {"total_size"}, "weight_map"}, total_size = tensor bytes)."""
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")
    meta = {"format": "pt", "generator": "golden/cflow_ref"}
    meta.update(metadata or {})
    if shards == 1:
        safetensors_io.save(os.path.join(d, "model.safetensors"), t, dtype, metadata=meta)
        return
    width = 2 if dtype in ("F16", "BF16") else 4
    sizes = {n: int(np.prod(np.shape(a))) * width for n, a in t.items()}
    wmap = {}
    for i, run in enumerate(split(sorted(t), sizes, shards)):
        fn = "model-%05d-of-%05d.safetensors" % (i + 1, shards)
        safetensors_io.save(os.path.join(d, fn), {n: t[n] for n in run}, dtype, metadata=meta)
        wmap.update({n: fn for n in run})
    with open(os.path.join(d, W.INDEX), "w") as f:
        json.dump({"metadata": {"total_size": sum(sizes.values())}, "weight_map": wmap}, f,
                  indent=2, sort_keys=True)
        f.write("\n")


def write(name, root):
    """Write root/<name>/ (root: golden/families/fixtures)."""
    cfg, t, dtype, shards = build(name)
    write_checkpoint(os.path.join(root, name), cfg, t, dtype, shards)
