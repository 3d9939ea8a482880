"""Rotary position embedding, HF split-half convention: dimension i pairs with
i + head_dim/2; pair i turns by t·θ^(-2i/head_dim). Partial RoPE rotates only
the first n_pairs pairs and leaves the rest unchanged."""
import math

import numpy as np
import torch


def inv_freq(head_dim, theta, n_pairs):
    """θ^(-2i/head_dim) for i < n_pairs: exponent 2i/head_dim in f32, the power
    in f64, rounded to f32, then 1/that in f32 (what the Go runtime does too)."""
    out = np.empty(n_pairs, dtype=np.float32)
    for i in range(n_pairs):
        e = np.float32(2 * i) / np.float32(head_dim)
        out[i] = np.float32(1) / np.float32(math.pow(float(np.float32(theta)), float(e)))
    return torch.from_numpy(out)


def cos_sin(positions, freqs):
    """cos/sin tables [T, n_pairs]: the angle t·f in f32, cos and sin in f64, then f32."""
    ang = positions.to(torch.float32)[:, None] * freqs[None, :]
    a = ang.double()
    return torch.cos(a).float(), torch.sin(a).float()


def apply(x, cos, sin):
    """Rotate x [T, heads, head_dim] by tables [T, n_pairs]."""
    n = cos.shape[-1]
    if n == 0:
        return x
    half = x.shape[-1] // 2
    c, s = cos[:, None, :], sin[:, None, :]
    a, b = x[..., :n], x[..., half:half + n]
    out = x.clone()
    out[..., :n] = a * c - b * s
    out[..., half:half + n] = b * c + a * s
    return out


def scaled_inv_freq(head_dim, theta, scaling):
    """inv_freq for all head_dim/2 pairs with HF's rope_scaling applied
    (modeling_rope_utils): None → inv_freq(head_dim, theta, head_dim/2);
    "linear" → inv / factor; "llama3" → per pair, with wavelength
    wl = 2π / inv: wl < orig/high_freq_factor keeps inv, wl > orig/low_freq_factor
    takes inv / factor, the band between takes (1 − s)·inv/factor + s·inv with
    s = (orig/wl − low_freq_factor) / (high_freq_factor − low_freq_factor).
    The scaling is computed in f64 from the f32 base value and rounded to f32."""
    base = inv_freq(head_dim, theta, head_dim // 2)
    if scaling is None:
        return base
    f = scaling["factor"]
    out = np.empty(len(base), dtype=np.float32)
    for i, b in enumerate(base.numpy().astype(np.float64)):
        if scaling["rope_type"] == "linear":
            v = b / f
        elif scaling["rope_type"] == "llama3":
            orig = scaling["original_max_position_embeddings"]
            lo, hi = scaling["low_freq_factor"], scaling["high_freq_factor"]
            wl = 2 * math.pi / b
            if wl < orig / hi:
                v = b
            elif wl > orig / lo:
                v = b / f
            else:
                s = (orig / wl - lo) / (hi - lo)
                v = (1 - s) * b / f + s * b
        else:
            raise ValueError("rope_scaling.rope_type %r not implemented" % scaling["rope_type"])
        out[i] = np.float32(v)
    return torch.from_numpy(out)
