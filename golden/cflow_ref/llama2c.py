"""llama2.c legacy (v0) checkpoint → HF Llama layout.

File: 7 little-endian int32 (dim, hidden_dim, n_layers, n_heads, n_kv_heads,
vocab_size, seq_len; vocab_size > 0 means the classifier is shared with the
embedding), then f32 arrays in this order: token_embedding [V,d],
rms_att [L,d], wq [L,d,d], wk [L,kv,d], wv [L,kv,d], wo [L,d,d], rms_ffn [L,d],
w1 [L,hidden,d], w2 [L,d,hidden], w3 [L,hidden,d], rms_final [d],
freq_cis_real and freq_cis_imag [seq, head_dim/2] (skipped), [wcls [V,d] if
not shared].

llama2.c's RoPE rotates adjacent pairs (2i, 2i+1); HF rotates (i, i+hd/2), so
q and k rows are permuted per head exactly like HF's
convert_llama_weights_to_hf.py permute().
"""
import struct

import numpy as np


def permute(w, n_heads):
    """HF's permute: per head, rows (re0, im0, re1, im1, …) → (re0, re1, …, im0, im1, …)."""
    dim1, dim2 = w.shape
    return w.reshape(n_heads, dim1 // n_heads // 2, 2, dim2).transpose(0, 2, 1, 3).reshape(dim1, dim2)


def read(path):
    """(config dict, {HF name: f32 array}) of a llama2.c v0 checkpoint."""
    with open(path, "rb") as f:
        data = f.read()
    dim, hidden, L, H, Hkv, vocab, seq = struct.unpack("<7i", data[:28])
    shared = vocab > 0
    V = abs(vocab)
    hd = dim // H
    kv = Hkv * hd
    floats = np.frombuffer(data, dtype="<f4", offset=28).astype(np.float32)
    pos = 0

    def take(*shape):
        nonlocal pos
        n = int(np.prod(shape))
        a = floats[pos:pos + n].reshape(shape)
        pos += n
        return a

    t = {}
    t["model.embed_tokens.weight"] = take(V, dim)
    per_layer = [
        ("input_layernorm.weight", (dim,)),
        ("self_attn.q_proj.weight", (dim, dim)),
        ("self_attn.k_proj.weight", (kv, dim)),
        ("self_attn.v_proj.weight", (kv, dim)),
        ("self_attn.o_proj.weight", (dim, dim)),
        ("post_attention_layernorm.weight", (dim,)),
        ("mlp.gate_proj.weight", (hidden, dim)),
        ("mlp.down_proj.weight", (dim, hidden)),
        ("mlp.up_proj.weight", (hidden, dim)),
    ]
    for suffix, shape in per_layer:
        stacked = take(L, *shape)
        for l in range(L):
            w = stacked[l]
            if suffix == "self_attn.q_proj.weight":
                w = permute(w, H)
            elif suffix == "self_attn.k_proj.weight":
                w = permute(w, Hkv)
            t["model.layers.%d.%s" % (l, suffix)] = np.ascontiguousarray(w)
    t["model.norm.weight"] = take(dim)
    take(seq, hd // 2)   # freq_cis_real
    take(seq, hd // 2)   # freq_cis_imag
    if not shared:
        t["lm_head.weight"] = take(V, dim)
    assert pos == len(floats), "llama2.c file: %d floats left over" % (len(floats) - pos)
    cfg = {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama",
        "hidden_size": dim, "intermediate_size": hidden, "num_hidden_layers": L,
        "num_attention_heads": H, "num_key_value_heads": Hkv, "head_dim": hd,
        "vocab_size": V, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
        "tie_word_embeddings": shared, "max_position_embeddings": seq,
        "hidden_act": "silu", "bos_token_id": 1, "eos_token_id": 2,
    }
    return cfg, t
