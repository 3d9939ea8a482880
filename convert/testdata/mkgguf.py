#!/usr/bin/env python3
"""Writes GGUFs of golden/families fixtures with llama.cpp's own gguf-py
writer, as convert_hf_to_gguf.py would (its tensor names, its hyper-parameter
keys, the llama architecture's q/k row permutation from conversion/llama.py's
LlamaModel.permute), so convert's GGUF source is held to files cflow did not
write. convert_hf_to_gguf.py itself needs torch, which these machines cannot
install; the few lines it runs for these fixtures are restated here.

    PYTHONPATH=bench/llama.cpp/gguf-py /usr/bin/python3 convert/testdata/mkgguf.py [--parity DIR]

(numpy from Debian's python3-numpy). CI reads the committed .gguf files;
--parity DIR writes the all-F32 files the libllama logits test
(gguf.TestLlamaCppLogits) feeds llama.cpp and llama-quantize instead.
Every file states tokenizer.ggml.model "none" (no vocabulary: ids only),
which llama.cpp needs to load it.
"""
import json, os, struct, sys
import numpy as np
from gguf import GGUFWriter, GGMLQuantizationType, RopeScalingType
from gguf.quants import quantize

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
fixtures = os.path.join(root, "golden", "families", "fixtures")
out = os.path.dirname(os.path.abspath(__file__))
parity = len(sys.argv) == 3 and sys.argv[1] == "--parity"
if parity:
    out = sys.argv[2]


def load(d):
    ts = {}
    for f in sorted(os.listdir(d)):
        if not f.endswith(".safetensors"):
            continue
        b = open(os.path.join(d, f), "rb").read()
        n = struct.unpack("<Q", b[:8])[0]
        h = json.loads(b[8:8 + n])
        for k, v in h.items():
            if k == "__metadata__":
                continue
            lo, hi = v["data_offsets"]
            dt = {"F32": np.float32, "F16": np.float16, "BF16": np.uint16}[v["dtype"]]
            ts[k] = (v["dtype"], np.frombuffer(b[8 + n + lo:8 + n + hi], dtype=dt).reshape(v["shape"]))
    return ts


def permute(w, n_head, n_head_kv):  # conversion/llama.py LlamaModel.permute
    if n_head_kv is not None and n_head != n_head_kv:
        n_head = n_head_kv
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


NAMES = {
    "model.embed_tokens.weight": "token_embd.weight",
    "model.norm.weight": "output_norm.weight",
    "lm_head.weight": "output.weight",
    "input_layernorm.weight": "attn_norm.weight",
    "self_attn.q_proj.weight": "attn_q.weight",
    "self_attn.k_proj.weight": "attn_k.weight",
    "self_attn.v_proj.weight": "attn_v.weight",
    "self_attn.o_proj.weight": "attn_output.weight",
    "self_attn.q_proj.bias": "attn_q.bias",
    "self_attn.k_proj.bias": "attn_k.bias",
    "self_attn.v_proj.bias": "attn_v.bias",
    "self_attn.q_norm.weight": "attn_q_norm.weight",
    "self_attn.k_norm.weight": "attn_k_norm.weight",
    "self_attn.o_proj.bias": "attn_output.bias",
    "post_attention_layernorm.weight": "ffn_norm.weight",
    "mlp.gate_proj.weight": "ffn_gate.weight",
    "mlp.up_proj.weight": "ffn_up.weight",
    "mlp.down_proj.weight": "ffn_down.weight",
    "mlp.gate_proj.bias": "ffn_gate.bias",
    "mlp.up_proj.bias": "ffn_up.bias",
    "mlp.down_proj.bias": "ffn_down.bias",
    "mlp.gate.weight": "ffn_gate_inp.weight",
    "block_sparse_moe.gate.weight": "ffn_gate_inp.weight",
}

# gemma3's four norms (conversion/gemma.py via gguf-py's tensor_mapping).
GEMMA3 = {
    "post_attention_layernorm.weight": "post_attention_norm.weight",
    "pre_feedforward_layernorm.weight": "ffn_norm.weight",
    "post_feedforward_layernorm.weight": "post_ffw_norm.weight",
}


def gguf_name(hf, arch=""):
    if hf in NAMES:
        return NAMES[hf]
    parts = hf.split(".")
    assert parts[:2] == ["model", "layers"], hf
    rest = ".".join(parts[3:])
    if arch == "gemma3" and rest in GEMMA3:
        return f"blk.{parts[2]}." + GEMMA3[rest]
    return f"blk.{parts[2]}." + NAMES[rest]


def llama3_factors(c, hd):  # conversion/llama.py generate_extra_tensors, in f32 as torch
    rs = c["rope_scaling"]
    f32 = np.float32
    freqs = f32(1.0) / (f32(c["rope_theta"]) ** (np.arange(0, hd, 2, dtype=f32) / f32(hd)))
    factor, lo, hi, old = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"], rs["original_max_position_embeddings"]
    out = []
    for freq in freqs:
        wave = f32(2 * np.pi) / freq
        if wave < old / hi:
            out.append(1)
        elif wave > old / lo:
            out.append(factor)
        else:
            smooth = (f32(old) / wave - f32(lo)) / f32(hi - lo)
            out.append(f32(1) / ((f32(1) - smooth) / f32(factor) + smooth))
    return np.array(out, dtype=f32)


def write(fixture, arch, dest, quants=None, f32=False, base=None):
    d = os.path.join(base or fixtures, fixture)
    c = json.load(open(os.path.join(d, "config.json")))
    ts = load(d)
    w = GGUFWriter(os.path.join(out, dest), arch)
    w.add_tokenizer_model("none")
    w.add_name(fixture)
    w.add_block_count(c["num_hidden_layers"])
    w.add_context_length(c["max_position_embeddings"])
    w.add_embedding_length(c["hidden_size"])
    w.add_feed_forward_length(c["intermediate_size"])
    w.add_head_count(c["num_attention_heads"])
    w.add_head_count_kv(c["num_key_value_heads"])
    w.add_rope_freq_base(c["rope_theta"])
    w.add_layer_norm_rms_eps(c["rms_norm_eps"])
    hd = c.get("head_dim") or c["hidden_size"] // c["num_attention_heads"]
    if hd != c["hidden_size"] // c["num_attention_heads"] or arch == "gemma3":
        w.add_key_length(hd)
        w.add_value_length(hd)
    w.add_rope_dimension_count(hd)
    w.add_vocab_size(c["vocab_size"])
    w.add_bos_token_id(c["bos_token_id"])
    eos = c["eos_token_id"]
    w.add_eos_token_id(eos[0] if isinstance(eos, list) else eos)
    rs = c.get("rope_scaling")
    if rs and rs.get("type", rs.get("rope_type")) == "linear":
        w.add_rope_scaling_type(RopeScalingType.LINEAR)
        w.add_rope_scaling_factor(rs["factor"])
    if arch == "gemma3":  # conversion/gemma.py Gemma3Model, and the pattern llama.cpp reads
        w.add_sliding_window(c["sliding_window"])
        w.add_uint32("gemma3.attention.sliding_window_pattern", c["sliding_window_pattern"])
        w.add_float32("gemma3.rope.freq_base_swa", c["rope_local_base_freq"])
    if rs and rs.get("rope_type") == "llama3":
        w.add_tensor("rope_freqs.weight", llama3_factors(c, hd))
    moe = [("gate_proj", "ffn_gate_exps"), ("up_proj", "ffn_up_exps"), ("down_proj", "ffn_down_exps")]
    experts, expert_name = c.get("num_experts"), "model.layers.{l}.mlp.experts.{e}.{part}.weight"
    if "num_local_experts" in c:  # Mixtral: conversion/llama.py merges block_sparse_moe's w1/w3/w2
        experts, expert_name = c["num_local_experts"], "model.layers.{l}.block_sparse_moe.experts.{e}.{part}.weight"
        moe = [("w1", "ffn_gate_exps"), ("w3", "ffn_up_exps"), ("w2", "ffn_down_exps")]
    if experts:  # stack the experts as convert_hf_to_gguf.py does: [experts, out, in]
        w.add_expert_count(experts)
        w.add_expert_used_count(c["num_experts_per_tok"])
        if "moe_intermediate_size" in c:
            w.add_expert_feed_forward_length(c["moe_intermediate_size"])
        for l in range(c["num_hidden_layers"]):
            for part, g in moe:
                keys = [expert_name.format(l=l, e=e, part=part) for e in range(experts)]
                dt = ts[keys[0]][0]
                st = np.ascontiguousarray(np.stack([ts.pop(k)[1] for k in keys]))
                if f32 and dt != "F32":
                    w.add_tensor(f"blk.{l}.{g}.weight", widen(dt, st))
                elif dt == "BF16":
                    w.add_tensor(f"blk.{l}.{g}.weight", st.view(np.uint8), raw_dtype=GGMLQuantizationType.BF16)
                else:
                    w.add_tensor(f"blk.{l}.{g}.weight", st)
    for hf, (dt, t) in ts.items():
        if arch == "llama" and hf.endswith(("q_proj.weight", "q_proj.bias")):
            t = permute(t, c["num_attention_heads"], c["num_attention_heads"])
        if arch == "llama" and hf.endswith(("k_proj.weight", "k_proj.bias")):
            t = permute(t, c["num_attention_heads"], c["num_key_value_heads"])
        if (f32 or (arch == "gemma3" and hf.endswith("norm.weight"))) and dt != "F32":  # exact: every f16 and bf16 is an f32
            dt, t = "F32", widen(dt, t)
        if arch == "gemma3" and hf.endswith("norm.weight"):  # Gemma3Model.norm_shift
            t = t + np.float32(1)
        t = np.ascontiguousarray(t)
        name = gguf_name(hf, arch)
        if quants and name in quants:  # llama.cpp's own quantizers (gguf-py quants)
            q = quants[name]
            w.add_tensor(name, quantize(t.astype(np.float32), q), raw_dtype=q)
        elif dt == "BF16":  # gguf-py takes BF16 as raw bytes
            w.add_tensor(name, t.view(np.uint8), raw_dtype=GGMLQuantizationType.BF16)
        else:
            w.add_tensor(name, t)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def widen(dt, t):
    if dt == "BF16":
        return (t.astype(np.uint32) << 16).view(np.float32)
    return t.astype(np.float32)


golden_fixtures = os.path.join(root, "golden", "fixtures")
if parity:  # every family, all F32, for llama.cpp and llama-quantize
    for fx, arch in [("llama_linear", "llama"), ("llama3", "llama"), ("mistral", "llama"), ("qwen2", "qwen2"),
                     ("qwen3", "qwen3"), ("qwen3_moe", "qwen3moe"), ("gemma3", "gemma3")]:
        write(fx, arch, fx + ".gguf", f32=True)
    for fx in ["llama_wide", "mixtral"]:
        write(fx, "llama", fx + ".gguf", f32=True, base=golden_fixtures)
    sys.exit(0)
write("gemma3", "gemma3", "gemma3.gguf")
write("llama3", "llama", "llama3.gguf")
write("mixtral", "llama", "mixtral.gguf", base=golden_fixtures)
write("llama_linear", "llama", "llama_linear.gguf")
write("qwen2", "qwen2", "qwen2.gguf")
write("qwen3", "qwen3", "qwen3.gguf")
write("qwen3", "qwen3", "qwen3_q8.gguf", quants={"blk.0.attn_output.weight": GGMLQuantizationType.Q8_0,
                                                 "blk.1.attn_output.weight": GGMLQuantizationType.Q8_0})
write("qwen3", "qwen3", "qwen3_q4.gguf", quants={"blk.0.attn_output.weight": GGMLQuantizationType.Q4_0,
                                                 "blk.1.attn_output.weight": GGMLQuantizationType.Q4_0})
write("qwen3", "qwen3", "qwen3_q41.gguf", quants={"blk.0.attn_output.weight": GGMLQuantizationType.Q4_1,
                                                  "blk.1.attn_output.weight": GGMLQuantizationType.Q4_1})
write("llama_linear", "llama", "llama_linear_f32.gguf", f32=True)
write("qwen3_moe", "qwen3moe", "qwen3_moe.gguf")
