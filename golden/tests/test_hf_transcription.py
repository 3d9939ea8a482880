"""An independent float64 transcription of transformers' modeling code for
the real HF families, written the way the HF modules compute (rotate_half
over cat(freqs, freqs) tables, repeat_kv, additive masks built from
masking_utils' causal and sliding-window predicates, torch.topk routing with
index-ordered expert accumulation, HF's own llama3 rope formula with
torch.where) and reading config.json with transformers' defaults itself —
none of cflow_ref's model, attention, rope or config code.

Every family fixture's pinned f32 trace must agree with it: the 32 top logits
within 1e-4 of max|logit|, residual norms and the pre-LM-head norm within 1e-5
relative, the same argmax wherever the top-2 gap exceeds 1e-4.
"""
import json
import math
import os
import unittest

import torch

from common import fixture, load_trace
from cflow_ref import family_fixtures
from cflow_ref.weights import read_checkpoint

D = torch.float64


def hf_config(path):
    with open(os.path.join(path, "config.json")) as f:
        c = json.load(f)
    mt = c["model_type"]
    c.setdefault("num_key_value_heads", c["num_attention_heads"])
    if c.get("head_dim") is None:
        c["head_dim"] = c["hidden_size"] // c["num_attention_heads"]
    c.setdefault("rms_norm_eps", 1e-6)
    c.setdefault("tie_word_embeddings", mt == "gemma3_text")
    c.setdefault("rope_theta", 1e6 if mt == "gemma3_text" else 1e4)
    return c


def inv_freq_default(base, dim):
    return 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).to(D) / dim))


def inv_freq_scaled(c, base, dim, rs):
    inv = inv_freq_default(base, dim)
    if rs is None or rs.get("rope_type", rs.get("type")) == "default":
        return inv
    t = rs.get("rope_type", rs.get("type"))
    if t == "linear":
        return inv / rs["factor"]
    assert t == "llama3", t
    factor, lo, hi = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"]
    old = rs["original_max_position_embeddings"]
    low_wl, high_wl = old / lo, old / hi
    wl = 2 * math.pi / inv
    out = torch.where(wl > low_wl, inv / factor, inv)
    smooth = (old / wl - lo) / (hi - lo)
    smoothed = (1 - smooth) * out / factor + smooth * out
    medium = ~(wl < high_wl) * ~(wl > low_wl)
    return torch.where(medium, smoothed, out)


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def rms(x, w, eps, plus_one):
    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    if w is None:
        return y
    return y * ((1.0 + w) if plus_one else w)


def lin(x, t, name):
    y = x @ t[name + ".weight"].T
    if name + ".bias" in t:
        y = y + t[name + ".bias"]
    return y


def act(name):
    if name == "silu":
        return torch.nn.functional.silu
    return lambda x: torch.nn.functional.gelu(x, approximate="tanh")


def forward(path):
    """(logits [T, V], per-layer hidden states, final hidden state) of the
    fixture's f32 trace tokens."""
    c = hf_config(path)
    _, arrays, _ = read_checkpoint(path)
    t = {k: torch.from_numpy(v.copy()).to(D) for k, v in arrays.items()}
    mt = c["model_type"]
    gemma = mt == "gemma3_text"
    d, H, Hkv, hd, L = (c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"],
                        c["head_dim"], c["num_hidden_layers"])
    eps = c["rms_norm_eps"]
    fn = act(c.get("hidden_activation") if gemma else c.get("hidden_act", "silu"))
    name = os.path.basename(path)
    tr = load_trace(name, "f32")
    ids = torch.tensor(tr["prompt"] + tr["generated"])
    T = len(ids)
    pos = torch.arange(T).to(D)

    x = t["model.embed_tokens.weight"][ids]
    if gemma:
        dt = {"bfloat16": torch.bfloat16, "float16": torch.float16,
              "float32": torch.float32}[c["torch_dtype"]]
        x = x * torch.tensor(d ** 0.5).to(dt).to(D)
        lt = c.get("layer_types") or [
            "sliding_attention" if (i + 1) % c.get("sliding_window_pattern", 6) else "full_attention"
            for i in range(L)]
    q_idx, kv_idx = torch.arange(T)[:, None], torch.arange(T)[None, :]
    hidden = []
    for l in range(L):
        p = "model.layers.%d." % l
        window = None
        if mt == "mistral":
            window = c.get("sliding_window")
        if gemma:
            if lt[l] == "sliding_attention":
                inv, window = inv_freq_default(c.get("rope_local_base_freq", 1e4), hd), c["sliding_window"]
            else:
                inv = inv_freq_scaled(c, c["rope_theta"], hd, c.get("rope_scaling"))
            scaling = c["query_pre_attn_scalar"] ** -0.5
        else:
            inv = inv_freq_scaled(c, c["rope_theta"], hd, c.get("rope_scaling"))
            scaling = hd ** -0.5
        freqs = pos[:, None] * inv[None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos()[None], emb.sin()[None]

        res = x
        h = rms(x, t[p + "input_layernorm.weight"], eps, gemma)
        q = lin(h, t, p + "self_attn.q_proj").view(T, H, hd).transpose(0, 1)
        k = lin(h, t, p + "self_attn.k_proj").view(T, Hkv, hd).transpose(0, 1)
        v = lin(h, t, p + "self_attn.v_proj").view(T, Hkv, hd).transpose(0, 1)
        if p + "self_attn.q_norm.weight" in t:
            q = rms(q, t[p + "self_attn.q_norm.weight"], eps, gemma)
            k = rms(k, t[p + "self_attn.k_norm.weight"], eps, gemma)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        rep = H // Hkv
        k = k[:, None].expand(Hkv, rep, T, hd).reshape(H, T, hd)
        v = v[:, None].expand(Hkv, rep, T, hd).reshape(H, T, hd)
        allowed = kv_idx <= q_idx
        if window is not None:
            allowed = allowed & (kv_idx > q_idx - window)
        mask = torch.zeros(T, T, dtype=D).masked_fill(~allowed, float("-inf"))
        w = torch.softmax(q @ k.transpose(1, 2) * scaling + mask, dim=-1)
        a = (w @ v).transpose(0, 1).reshape(T, H * hd)
        a = lin(a, t, p + "self_attn.o_proj")
        if gemma:
            a = rms(a, t[p + "post_attention_layernorm.weight"], eps, True)
        x = res + a

        res = x
        h = rms(x, t[p + ("pre_feedforward_layernorm.weight" if gemma else
                          "post_attention_layernorm.weight")], eps, gemma)
        if p + "mlp.gate.weight" in t:
            logits = h @ t[p + "mlp.gate.weight"].T
            probs = torch.softmax(logits, dim=-1)
            top_w, top_i = torch.topk(probs, c["num_experts_per_tok"], dim=-1)
            if c.get("norm_topk_prob", False):
                top_w = top_w / top_w.sum(-1, keepdim=True)
            m = torch.zeros_like(h)
            for e in range(c["num_experts"]):
                rows, slot = torch.where(top_i == e)
                if len(rows) == 0:
                    continue
                b = p + "mlp.experts.%d." % e
                he = h[rows]
                ye = lin(fn(lin(he, t, b + "gate_proj")) * lin(he, t, b + "up_proj"), t, b + "down_proj")
                m.index_add_(0, rows, ye * top_w[rows, slot, None])
        else:
            b = p + "mlp."
            m = lin(fn(lin(h, t, b + "gate_proj")) * lin(h, t, b + "up_proj"), t, b + "down_proj")
        if gemma:
            m = rms(m, t[p + "post_feedforward_layernorm.weight"], eps, True)
        x = res + m
        hidden.append(x)
    head = t["model.embed_tokens.weight"] if c["tie_word_embeddings"] else t["lm_head.weight"]
    logits = rms(x, t["model.norm.weight"], eps, gemma) @ head.T
    if c.get("final_logit_softcapping"):
        s = c["final_logit_softcapping"]
        logits = torch.tanh(logits / s) * s
    return logits, hidden, x, tr


def gemma4_forward(path):
    """Gemma4TextModel as modeling_gemma4.py computes it (GEMMA4.md), in float64."""
    with open(os.path.join(path, "config.json")) as f:
        top = json.load(f)
    c = dict(top.get("text_config") or top)
    _, arrays, _ = read_checkpoint(path)
    t = {}
    for k, v in arrays.items():
        if k.startswith("model.language_model."):
            k = "model." + k[len("model.language_model."):]
        t[k] = torch.from_numpy(v.copy()).to(D)
    d, H, L = c["hidden_size"], c["num_attention_heads"], c["num_hidden_layers"]
    eps = c.get("rms_norm_eps", 1e-6)
    lt = c.get("layer_types") or ["sliding_attention" if (i + 1) % 6 else "full_attention" for i in range(L)]
    lt = list(lt)
    lt[-1] = "full_attention"
    rp = c.get("rope_parameters") or {
        "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
        "full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25, "rope_theta": 1e6}}
    fn = act(c.get("hidden_activation", "gelu_pytorch_tanh"))
    tr = load_trace(os.path.basename(path), "f32")
    ids = torch.tensor(tr["prompt"] + tr["generated"])
    T = len(ids)
    pos = torch.arange(T).to(D)
    q_idx, kv_idx = torch.arange(T)[:, None], torch.arange(T)[None, :]
    dt = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}[
        c.get("dtype", top.get("dtype", "float32"))]
    x = t["model.embed_tokens.weight"][ids] * torch.tensor(d ** 0.5).to(dt).to(D)

    def norm(v, name):
        return rms(v, t[name] if name else None, eps, False)

    hidden = []
    for l in range(L):
        p = "model.layers.%d." % l
        a = p + "self_attn."
        sliding = lt[l] == "sliding_attention"
        hd = c["head_dim"] if sliding else c["global_head_dim"]
        k_eq_v = c.get("attention_k_eq_v", False) and not sliding
        kv = c["num_global_key_value_heads"] if k_eq_v else c["num_key_value_heads"]
        if sliding:
            inv = inv_freq_default(rp["sliding_attention"]["rope_theta"], hd)
        else:
            # _compute_proportional_rope_parameters: the first int(f·G//2) pairs
            # rotate with exponents over G, the rest get frequency 0.
            f = rp["full_attention"].get("partial_rotary_factor", 1.0)
            n = int(f * hd // 2)
            inv = inv_freq_default(rp["full_attention"]["rope_theta"], hd)
            inv = torch.cat([inv[:n], torch.zeros(hd // 2 - n, dtype=D)])
        freqs = pos[:, None] * inv[None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos()[:, None], emb.sin()[:, None]

        res = x
        h = norm(x, p + "input_layernorm.weight")
        q = lin(h, t, a + "q_proj").view(T, H, hd)
        q = rms(q, t[a + "q_norm.weight"], eps, False)
        q = (q * cos + rotate_half(q) * sin).transpose(0, 1)
        k = lin(h, t, a + "k_proj").view(T, kv, hd)
        v = k if k_eq_v else lin(h, t, a + "v_proj").view(T, kv, hd)
        k = rms(k, t[a + "k_norm.weight"], eps, False)
        k = (k * cos + rotate_half(k) * sin).transpose(0, 1)
        v = rms(v, None, eps, False).transpose(0, 1)
        rep = H // kv
        k = k[:, None].expand(kv, rep, T, hd).reshape(H, T, hd)
        v = v[:, None].expand(kv, rep, T, hd).reshape(H, T, hd)
        allowed = kv_idx <= q_idx
        if sliding:
            allowed = allowed & (kv_idx > q_idx - c["sliding_window"])
        mask = torch.zeros(T, T, dtype=D).masked_fill(~allowed, float("-inf"))
        w = torch.softmax(q @ k.transpose(1, 2) * 1.0 + mask, dim=-1)
        o = lin((w @ v).transpose(0, 1).reshape(T, H * hd), t, a + "o_proj")
        x = res + norm(o, p + "post_attention_layernorm.weight")

        res = x
        h = norm(x, p + "pre_feedforward_layernorm.weight")
        m = lin(fn(lin(h, t, p + "mlp.gate_proj")) * lin(h, t, p + "mlp.up_proj"), t, p + "mlp.down_proj")
        if c.get("enable_moe_block"):
            m1 = norm(m, p + "post_feedforward_layernorm_1.weight")
            z = (norm(res, None) * t[p + "router.scale"] * d ** -0.5) @ t[p + "router.proj.weight"].T
            probs = torch.softmax(z, dim=-1)
            tw, ti = torch.topk(probs, c["top_k_experts"], dim=-1)
            tw = tw / tw.sum(-1, keepdim=True)
            tw = tw * t[p + "router.per_expert_scale"][ti]
            h2 = norm(res, p + "pre_feedforward_layernorm_2.weight")
            y = torch.zeros_like(h2)
            fe = c["moe_intermediate_size"]
            for e in range(c["num_experts"]):
                slot, rows = torch.where((ti == e).T)
                if len(rows) == 0:
                    continue
                gate, up = (h2[rows] @ t[p + "experts.gate_up_proj"][e].T).chunk(2, dim=-1)
                ye = (fn(gate) * up) @ t[p + "experts.down_proj"][e].T
                y.index_add_(0, rows, ye * tw[rows, slot, None])
            m = m1 + norm(y, p + "post_feedforward_layernorm_2.weight")
        x = (res + norm(m, p + "post_feedforward_layernorm.weight")) * t[p + "layer_scalar"]
        hidden.append(x)
    logits = norm(x, "model.norm.weight") @ t["model.embed_tokens.weight"].T
    cap = c.get("final_logit_softcapping")
    if cap:
        logits = torch.tanh(logits / cap) * cap
    return logits, hidden, x, tr


class HFTranscription(unittest.TestCase):
    def test_family_traces(self):
        for name in family_fixtures.FIXTURES:
            with self.subTest(fixture=name):
                run = gemma4_forward if name.startswith("gemma4") else forward
                logits, hidden, final, tr = run(fixture(name))
                for i, s in enumerate(tr["steps"]):
                    z = logits[i]
                    scale = float(z.abs().max())
                    got = z[torch.tensor(s["top_ids"])]
                    err = float((got - torch.tensor(s["top_logits"], dtype=D)).abs().max())
                    self.assertLess(err, 1e-4 * scale, "%s step %d top logits" % (name, i))
                    srt = torch.sort(z, descending=True).values
                    if float(srt[0] - srt[1]) > 1e-4 * scale:
                        self.assertEqual(int(z.argmax()), s["argmax"], "%s step %d argmax" % (name, i))
                    for l, rn in enumerate(s["residual_norms"]):
                        want = float(hidden[l][i].norm())
                        self.assertLess(abs(rn - want), 1e-5 * want, "%s step %d layer %d" % (name, i, l))
                    self.assertLess(abs(s["pre_lm_head_norm"] - float(final[i].norm())),
                                    1e-5 * float(final[i].norm()))


if __name__ == "__main__":
    unittest.main()
