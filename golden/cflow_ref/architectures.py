"""One class per architecture of ARCHITECTURES.md.

Every model offers two forwards:
  * step(state, token): token-by-token decode at the next position, with a
    KV cache per pass and, for the delayed styles, the scheduler's queues
    (scheduler.py), computing each stream as soon as its input is final;
  * sequence(tokens): the whole prompt at once (causal mask, every expert on
    every row), transcribed directly from the spec's equations.
tests/test_decode_vs_sequence.py checks that the two agree.
All arithmetic is f32; norms are accumulated in f64 when reported.
"""
import math
from dataclasses import dataclass
from typing import List

import torch
import torch.nn.functional as F

from .attention import Attention, KVCache
from .ffn import FFN
from .moe import MoE
from .norms import l2, rms_norm
from .scheduler import DenseDelayLine, ExpertQueue
from . import weights as W

SQRT2 = torch.tensor(math.sqrt(2.0), dtype=torch.float32)


@dataclass
class Output:
    logits: torch.Tensor            # [T, V]
    residual_norms: List[List[float]]   # [T][passes]
    pre_lm_head_norm: List[float]   # [T]


class Layer:
    """One layer's (or arch5 block's) weights."""

    def __init__(self, attn, na, nf, nr, ffn, moe):
        self.attn, self.na, self.nf, self.nr, self.ffn, self.moe = attn, na, nf, nr, ffn, moe


class DecodeState:
    def __init__(self, passes):
        self.caches = [KVCache() for _ in range(passes)]
        self.pos = 0


class _DecodeCtx:
    """Attention through the pass's KV cache; MoE runs only selected experts."""

    def __init__(self, state):
        self.state = state

    def attn(self, layer, p, xn):
        return layer.attn.step(xn, self.state.caches[p], self.state.pos)

    def moe(self, layer, h):
        return layer.moe(h)


class _SequenceCtx:
    """Attention over the whole sequence; MoE evaluates every expert."""

    def attn(self, layer, p, xn):
        return layer.attn.sequence(xn)

    def moe(self, layer, h):
        return layer.moe.all_experts(h)


class Model:
    name = None

    def __init__(self, cfg, tensors):
        """tensors: {name: f32 torch tensor} (already replayed for q4/q8)."""
        self.cfg = cfg
        c = cfg
        self.embedding = tensors["model.embed_tokens.weight"]
        self.lm_head = self.embedding if c.tie_word_embeddings else tensors["lm_head.weight"]
        self.final_norm = tensors["model.norm.weight"]
        self.eps = c.rms_norm_eps
        self.layers = [self._layer(tensors, l) for l in range(c.num_hidden_layers)]

    def _layer(self, t, l):
        c, p = self.cfg, W.layer_prefix(l)
        full = c.is_full(l)
        hd = c.layer_head_dim(l)
        if c.layer_types is not None and full:
            theta = c.rope_theta_global
            pairs = int(c.partial_rotary_factor * (hd // 2))
            window = 0
        else:
            theta, pairs = c.rope_theta, hd // 2
            window = c.sliding_window if c.layer_types is not None else 0
        wv = None if (c.attention_k_eq_v and full) else t[p + "self_attn.v_proj.weight"]
        attn = Attention(t[p + "self_attn.q_proj.weight"], t[p + "self_attn.k_proj.weight"], wv,
                         t[p + "self_attn.o_proj.weight"], c.num_attention_heads,
                         c.num_key_value_heads, hd, theta, pairs, window, c.use_v_norm, self.eps)
        ffn = None
        if c.intermediate_size:
            ffn = FFN(t[p + "mlp.gate_proj.weight"], t[p + "mlp.up_proj.weight"],
                      t[p + "mlp.down_proj.weight"], c.hidden_act)
        moe = None
        if c.num_experts:
            experts = [FFN(*(t[n] for n in W.expert_names(c, l, e)), act=c.hidden_act)
                       for e in range(c.num_experts)]
            moe = MoE(t[W.router_name(c, l)], experts, c.num_experts_per_tok)
        nr = t.get(p + "moe_norm.weight")
        return Layer(attn, t[p + "input_layernorm.weight"], t.get(p + "post_attention_layernorm.weight"),
                     nr, ffn, moe)

    # -- shared pieces -------------------------------------------------------
    def norm(self, x, w):
        return rms_norm(x, w, self.eps)

    def embed(self, tokens):
        x = self.embedding[torch.tensor(tokens, dtype=torch.long)]
        if self.cfg.use_embedding_scale:
            x = x * torch.tensor(math.sqrt(self.cfg.hidden_size), dtype=torch.float32)
        return x

    def head(self, x):
        z = F.linear(self.norm(x, self.final_norm), self.lm_head)
        c = self.cfg.final_logit_softcapping
        if c:
            c = torch.tensor(c, dtype=torch.float32)
            z = c * torch.tanh(z / c)
        return z

    def attn_block(self, layer, p, x, ctx):
        return ctx.attn(layer, p, self.norm(x, layer.na))

    # -- the two forwards ----------------------------------------------------
    def new_state(self):
        return DecodeState(self.cfg.num_passes)

    def step(self, state, token):
        x = self.embed([token])
        final, residuals = self.decode_layers(x, _DecodeCtx(state))
        state.pos += 1
        return self._output(final, residuals)

    def sequence(self, tokens):
        final, residuals = self.sequence_layers(self.embed(tokens), _SequenceCtx())
        return self._output(final, residuals)

    def forward_logits(self, tokens):
        """Whole-sequence logits [T, V] only (no norms): the differentiable
        entry point for training (issue 10) when the tensors require grad."""
        final, _ = self.sequence_layers(self.embed(tokens), _SequenceCtx())
        return self.head(final)

    def _output(self, final, residuals):
        assert len(residuals) == self.cfg.num_passes
        T = final.shape[0]
        norms = [[l2(r[t]) for r in residuals] for t in range(T)]
        return Output(self.head(final), norms, [l2(final[t]) for t in range(T)])

    # Architectures without delays use one layer loop for both forwards
    # (x is [1, d] when decoding, [T, d] for a sequence).
    def decode_layers(self, x, ctx):
        return self.layers_forward(x, ctx)

    def sequence_layers(self, x, ctx):
        return self.layers_forward(x, ctx)

    def layers_forward(self, x, ctx):
        raise NotImplementedError


class Llama(Model):
    """Pre-norm: x_mid = x + Attn(Na(x)); x_out = x_mid + FFN(Nf(x_mid))
    (Mixtral: MoE(Nf(x_mid)) instead of FFN)."""
    name = "llama"

    def prenorm_layer(self, layer, p, x, ctx):
        x_mid = x + self.attn_block(layer, p, x, ctx)
        h = self.norm(x_mid, layer.nf)
        return x_mid + (layer.ffn(h) if layer.ffn is not None else ctx.moe(layer, h))

    def layers_forward(self, x, ctx):
        res = []
        for l, layer in enumerate(self.layers):
            x = self.prenorm_layer(layer, l, x, ctx)
            res.append(x)
        return x, res


class Mixtral(Llama):
    name = "mixtral"


class Arch5FixedPoint(Llama):
    """num_hidden_layers unique blocks, each run block_iterations times in a
    row (block 0 first); every pass is a llama layer with its own KV cache."""
    name = "arch5_fixed_point"

    def layers_forward(self, x, ctx):
        res, it = [], self.cfg.block_iterations
        for b, layer in enumerate(self.layers):
            for i in range(it):
                x = self.prenorm_layer(layer, b * it + i, x, ctx)
                res.append(x)
        return x, res


class Gemma4(Model):
    """ParallelSqrt2: x_mid = x + Attn(Na(x)); h = Nf(x_mid);
    x_out = x_mid + (FFN(h) + MoE(h)) / sqrt(2)."""
    name = "gemma4"

    def layers_forward(self, x, ctx):
        res = []
        for l, layer in enumerate(self.layers):
            x_mid = x + self.attn_block(layer, l, x, ctx)
            h = self.norm(x_mid, layer.nf)
            t = layer.ffn(h) if layer.ffn is not None else torch.zeros_like(h)
            if layer.moe is not None:
                t = t + ctx.moe(layer, h)
            x = x_mid + t / SQRT2
            res.append(x)
        return x, res


class Arch1DecoupledStreams(Model):
    """s_a ← s_a + Attn(Na(s_a)); s_f ← s_f + FFN(Nf(s_f)); merge to the mean
    after layer ℓ when (ℓ+1) mod merge_interval = 0. Residual = (s_a+s_f)/2."""
    name = "arch1_decoupled_streams"

    def layers_forward(self, x, ctx):
        sa, sf, res = x, x, []
        for l, layer in enumerate(self.layers):
            sa = sa + self.attn_block(layer, l, sa, ctx)
            sf = sf + layer.ffn(self.norm(sf, layer.nf))
            avg = (sa + sf) / 2
            if (l + 1) % self.cfg.merge_interval == 0:
                sa, sf = avg, avg
            res.append(avg)
        return res[-1], res


class Arch3PipelineRegisters(Model):
    """f = FFN(Nf(xfm_reg(ℓ-1))); attn_reg(ℓ) = attn_reg(ℓ-1) + Attn(Na(attn_reg(ℓ-1)));
    xfm_reg(ℓ) = attn_reg(ℓ) + f; both registers start as the embedding."""
    name = "arch3_pipeline_registers"

    def layers_forward(self, x, ctx):
        attn_reg, xfm_reg, res = x, x, []
        for l, layer in enumerate(self.layers):
            f = layer.ffn(self.norm(xfm_reg, layer.nf))
            attn_reg = attn_reg + self.attn_block(layer, l, attn_reg, ctx)
            xfm_reg = attn_reg + f
            res.append(xfm_reg)
        return xfm_reg, res


class Arch2_4Combined(Model):
    """DelayedSum (δd = dense_delay, δe = expert_delay):
        m = Attn(Na(x_in(ℓ))); x_mid = x_in(ℓ) + m
        f = FFN(Nf(x_out(ℓ-δd)))          (x_out(j<0) = 0)
        e(ℓ) = MoE(Nr(x_mid))             queued for T = min(ℓ+δe, L-1)
        x_out = x_mid + f + Σ e(j) queued for ℓ (ascending j)."""
    name = "arch2_4_combined"

    def sequence_layers(self, x, ctx):
        c = self.cfg
        L, dd, de = c.num_hidden_layers, c.dense_delay, c.expert_delay
        x_out, queued = [], {l: [] for l in range(L)}
        x_in = x
        for l, layer in enumerate(self.layers):
            x_mid = x_in + self.attn_block(layer, l, x_in, ctx)
            src = x_out[l - dd] if l - dd >= 0 else torch.zeros_like(x)
            f = layer.ffn(self.norm(src, layer.nf)) if layer.ffn is not None else None
            queued[min(l + de, L - 1)].append(ctx.moe(layer, self.norm(x_mid, layer.nr)))
            xo = x_mid if f is None else x_mid + f
            for e in queued[l]:
                xo = xo + e
            x_out.append(xo)
            x_in = xo
        return x_in, x_out

    def decode_layers(self, x, ctx):
        """Streaming order of the runtime plan: Dense(0..δd-1) on the zero
        vector first, then per layer Attn(ℓ), MoE(ℓ), Dense(ℓ+δd)."""
        c = self.cfg
        L, dd, de = c.num_hidden_layers, c.dense_delay, c.expert_delay
        dense, experts = DenseDelayLine(), ExpertQueue()
        has_dense = self.layers[0].ffn is not None
        if has_dense:
            for j in range(min(dd, L)):
                lj = self.layers[j]
                dense.put(j, lj.ffn(self.norm(torch.zeros_like(x), lj.nf)))
        res, cur = [], x
        for l, layer in enumerate(self.layers):
            x_mid = cur + self.attn_block(layer, l, cur, ctx)
            experts.push(min(l + de, L - 1), l, ctx.moe(layer, self.norm(x_mid, layer.nr)))
            xo = x_mid + dense.take(l) if has_dense else x_mid
            for e in experts.pop(l):
                xo = xo + e
            if has_dense and l + dd < L:
                ln = self.layers[l + dd]
                dense.put(l + dd, ln.ffn(self.norm(xo, ln.nf)))
            res.append(xo)
            cur = xo
        assert experts.empty() and dense.empty()
        return cur, res


class Arch2_4Sync(Arch2_4Combined):
    name = "arch2_4_sync"


class Arch4AsyncExperts(Model):
    """AsyncExperts: queued expert outputs targeting ℓ are added to x_in(ℓ)
    before the layer; h = Nf(x_in); x_out = x_in + Attn(Na(x_in)) + FFN(h);
    e(ℓ) = MoE(h) queued for ℓ+δe; targets ≥ L join the final residual."""
    name = "arch4_async_experts"

    def sequence_layers(self, x, ctx):
        c = self.cfg
        L, de = c.num_hidden_layers, c.expert_delay
        queued = {}
        x_in, res = x, []
        for l, layer in enumerate(self.layers):
            for e in queued.pop(l, []):
                x_in = x_in + e
            h = self.norm(x_in, layer.nf)
            m = self.attn_block(layer, l, x_in, ctx)
            f = layer.ffn(h)
            queued.setdefault(l + de, []).append(ctx.moe(layer, h))
            x_in = x_in + m + f
            res.append(x_in)
        for t in sorted(queued):
            for e in queued[t]:
                x_in = x_in + e
        return x_in, res

    def decode_layers(self, x, ctx):
        c = self.cfg
        L, de = c.num_hidden_layers, c.expert_delay
        experts = ExpertQueue()
        cur, res = x, []
        for l, layer in enumerate(self.layers):
            for e in experts.pop(l):          # the driver dequeues before the layer
                cur = cur + e
            h = self.norm(cur, layer.nf)
            m = self.attn_block(layer, l, cur, ctx)
            f = layer.ffn(h)
            experts.push(l + de, l, ctx.moe(layer, h))
            cur = cur + m + f
            res.append(cur)
        for e in experts.pop_from(L):
            cur = cur + e
        return cur, res


CLASSES = {cls.name: cls for cls in (Llama, Mixtral, Arch1DecoupledStreams, Arch2_4Combined,
                                       Arch2_4Sync, Arch3PipelineRegisters, Arch4AsyncExperts,
                                       Arch5FixedPoint, Gemma4)}


def build(cfg, tensors):
    """A model from a ModelConfig and {name: f32 torch tensor}. The real HF
    families (llama included) are in families.py, gemma4_text in gemma4_text.py."""
    from .families import FAMILY_CLASSES
    from .gemma4_text import Gemma4Text
    classes = dict(CLASSES, gemma4_text=Gemma4Text)
    classes.update(FAMILY_CLASSES)
    return classes[cfg.architecture](cfg, tensors)
