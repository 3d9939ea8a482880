"""Grouped-query attention with RoPE, optional V-norm, K=V sharing, sliding
window, and a per-pass KV cache (ARCHITECTURES.md "Attention")."""
import math

import torch
import torch.nn.functional as F

from . import rope
from .norms import rms_norm


class KVCache:
    """Keys (after RoPE) and values (after V-norm) of every position so far."""

    def __init__(self):
        self.k, self.v = [], []   # per position: [Hkv, head_dim]

    def __len__(self):
        return len(self.k)

    def append(self, k, v):
        self.k.append(k)
        self.v.append(v)

    def tensors(self):
        return torch.stack(self.k), torch.stack(self.v)


class Attention:
    def __init__(self, wq, wk, wv, wo, n_heads, n_kv_heads, head_dim, theta, rotary_pairs,
                 window=0, v_norm=False, eps=1e-6, freqs=None, scale=None, biases=None,
                 q_norm=None, k_norm=None):
        """freqs overrides (theta, rotary_pairs) with a ready inv_freq table; scale
        overrides 1/sqrt(head_dim); biases = (bq, bk, bv, bo), any None; q_norm and
        k_norm are per-head RMSNorm weights [head_dim] applied before RoPE."""
        self.wq, self.wk, self.wv, self.wo = wq, wk, wv, wo   # wv None: v = k before RoPE
        self.bq, self.bk, self.bv, self.bo = biases or (None, None, None, None)
        self.q_norm, self.k_norm = q_norm, k_norm
        self.H, self.Hkv, self.hd = n_heads, n_kv_heads, head_dim
        self.freqs = rope.inv_freq(head_dim, theta, rotary_pairs) if freqs is None else freqs
        self.window = window
        self.v_norm, self.eps = v_norm, eps
        self.scale = 1.0 / math.sqrt(head_dim) if scale is None else scale
        # query head h reads KV head floor(h·Hkv/H)
        self.kv_of_q = torch.tensor([h * n_kv_heads // n_heads for h in range(n_heads)])

    def _project(self, xn, positions):
        T = xn.shape[0]
        q = F.linear(xn, self.wq, self.bq).view(T, self.H, self.hd)
        k = F.linear(xn, self.wk, self.bk).view(T, self.Hkv, self.hd)
        v = k.clone() if self.wv is None else F.linear(xn, self.wv, self.bv).view(T, self.Hkv, self.hd)
        if self.v_norm:
            v = rms_norm(v, None, self.eps)
        if self.q_norm is not None:
            q = rms_norm(q, self.q_norm, self.eps)
        if self.k_norm is not None:
            k = rms_norm(k, self.k_norm, self.eps)
        cos, sin = rope.cos_sin(positions, self.freqs)
        return rope.apply(q, cos, sin), rope.apply(k, cos, sin), v

    def _attend(self, q, k, v, q_pos, k_pos):
        """q [Tq,H,hd], k/v [Tk,Hkv,hd] → [Tq, H·hd] before Wo."""
        k = k.index_select(1, self.kv_of_q)
        v = v.index_select(1, self.kv_of_q)
        scores = torch.einsum("qhd,khd->hqk", q, k) * self.scale
        allowed = k_pos[None, :] <= q_pos[:, None]
        if self.window:
            allowed &= k_pos[None, :] > q_pos[:, None] - self.window
        scores = scores.masked_fill(~allowed[None], float("-inf"))
        p = torch.softmax(scores, dim=-1)
        out = torch.einsum("hqk,khd->qhd", p, v)
        return out.reshape(q.shape[0], self.H * self.hd)

    def step(self, xn, cache, pos):
        """Decode one position: xn [1, d] at position pos; appends to cache."""
        assert len(cache) == pos, "cache holds %d positions at position %d" % (len(cache), pos)
        q, k, v = self._project(xn, torch.tensor([pos]))
        cache.append(k[0], v[0])
        K, V = cache.tensors()
        o = self._attend(q, K, V, torch.tensor([pos]), torch.arange(pos + 1))
        return F.linear(o, self.wo, self.bo)

    def sequence(self, xn):
        """Whole sequence xn [T, d] at positions 0..T-1 with a causal mask."""
        pos = torch.arange(xn.shape[0])
        q, k, v = self._project(xn, pos)
        return F.linear(self._attend(q, k, v, pos, pos), self.wo, self.bo)
