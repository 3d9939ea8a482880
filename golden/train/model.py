"""Batched, trainable nn.Module versions of the seven architectures trained
for issue 10 (llama, arch1, arch2_4_combined, arch2_4_sync, arch3, arch4,
arch5), with exactly the forward semantics of
docs/ARCHITECTURES.md (whole sequence, causal).

This is the *training* forward: batched [B, T, d], autograd, a scatter MoE.
The spec-exact reference is golden/cflow_ref (owned by the golden
engineer); golden/train/test_parity.py checks that both give the same
logits on a trained checkpoint, and eval.py computes the pinned numbers.

Parameter names are the HF checkpoint names of the spec ("Checkpoint
convention"), so state_dict() is the safetensors content as is.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from cflow_ref import rope as ref_rope

# What each architecture adds to the common geometry.
ARCH = {
    #  name                        combine style        δd δe  experts  moe_norm
    "llama":                    ("PreNorm",           0, 0, False, False),
    "arch1_decoupled_streams":  ("DecoupledStreams",  0, 0, False, False),
    "arch2_4_combined":         ("DelayedSum",        1, 2, True,  True),
    "arch2_4_sync":             ("DelayedSum",        1, 0, True,  True),
    "arch3_pipeline_registers": ("PipelineRegisters", 0, 0, False, False),
    "arch4_async_experts":      ("AsyncExperts",      0, 2, True,  False),
    "arch5_fixed_point":        ("PreNorm",           0, 0, False, False),
}


def make_config(arch, d=128, layers=6, heads=4, kv_heads=4, ffn=512, experts=8, top_k=2,
                expert_ffn=128, block_iterations=3, arch5_blocks=2, merge_interval=3,
                vocab=258, max_pos=256, bos=256, eos=257):
    """The config.json dict the converter and golden/cflow_ref read."""
    style, dd, de, moe, _ = ARCH[arch]
    c = {
        "hidden_size": d, "intermediate_size": ffn,
        "num_hidden_layers": arch5_blocks if arch == "arch5_fixed_point" else layers,
        "num_attention_heads": heads, "num_key_value_heads": kv_heads, "head_dim": d // heads,
        "vocab_size": vocab, "max_position_embeddings": max_pos,
        "rope_theta": 10000.0, "tie_word_embeddings": False, "hidden_act": "silu",
        "bos_token_id": bos, "eos_token_id": eos, "tokenizer": "byte", "torch_dtype": "bfloat16",
    }
    if arch == "llama":
        c.update({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "rms_norm_eps": 1e-5})
        return c
    c.update({"model_type": "pipeline_native", "architecture": arch, "combine_style": style,
              "dense_delay": dd, "expert_delay": de, "rms_norm_eps": 1e-6})
    if moe:
        c.update({"num_experts": experts, "num_experts_per_tok": top_k,
                  "expert_intermediate_size": expert_ffn})
    else:
        c.update({"num_experts": 0, "num_experts_per_tok": 0, "expert_intermediate_size": 0})
    if arch == "arch1_decoupled_streams":
        c["merge_interval"] = merge_interval
    if arch == "arch5_fixed_point":
        c["block_iterations"] = block_iterations
    return c


def arch_of(cfg):
    if "architecture" in cfg:
        return cfg["architecture"]
    return "llama"


class RMSNorm(nn.Module):
    def __init__(self, d, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x):
        return x / torch.sqrt(torch.mean(x * x, dim=-1, keepdim=True) + self.eps) * self.weight


class Attention(nn.Module):
    def __init__(self, d, H, Hkv, hd, theta, max_pos):
        super().__init__()
        self.H, self.Hkv, self.hd = H, Hkv, hd
        self.q_proj = nn.Linear(d, H * hd, bias=False)
        self.k_proj = nn.Linear(d, Hkv * hd, bias=False)
        self.v_proj = nn.Linear(d, Hkv * hd, bias=False)
        self.o_proj = nn.Linear(H * hd, d, bias=False)
        cos, sin = ref_rope.cos_sin(torch.arange(max_pos), ref_rope.inv_freq(hd, theta, hd // 2))
        self.register_buffer("cos", cos, persistent=False)   # [max_pos, hd/2]
        self.register_buffer("sin", sin, persistent=False)

    def _rope(self, x, T):
        # x [B, heads, T, hd], split-half pairs (i, i + hd/2)
        c, s = self.cos[:T][None, None], self.sin[:T][None, None]
        half = self.hd // 2
        a, b = x[..., :half], x[..., half:]
        return torch.cat([a * c - b * s, b * c + a * s], dim=-1)

    def forward(self, x):
        B, T, _ = x.shape
        q = self.q_proj(x).view(B, T, self.H, self.hd).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.Hkv, self.hd).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.Hkv, self.hd).transpose(1, 2)
        q, k = self._rope(q, T), self._rope(k, T)
        if self.Hkv != self.H:
            rep = self.H // self.Hkv
            k = k.repeat_interleave(rep, dim=1)
            v = v.repeat_interleave(rep, dim=1)
        s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.hd)
        mask = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
        s = s.masked_fill(mask, float("-inf"))
        o = torch.matmul(torch.softmax(s, dim=-1), v)
        return self.o_proj(o.transpose(1, 2).reshape(B, T, self.H * self.hd))


class FFN(nn.Module):
    def __init__(self, d, f):
        super().__init__()
        self.gate_proj = nn.Linear(d, f, bias=False)
        self.up_proj = nn.Linear(d, f, bias=False)
        self.down_proj = nn.Linear(f, d, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class MoE(nn.Module):
    """Top-k of E SwiGLU experts, softmax over the selected logits only.
    Scatter dispatch: each expert runs only on the rows routed to it."""

    def __init__(self, d, E, k, fe):
        super().__init__()
        self.k, self.E = k, E
        self.router = nn.Linear(d, E, bias=False)
        self.experts = nn.ModuleList([FFN(d, fe) for _ in range(E)])
        self.aux = None

    def forward(self, x):
        shape = x.shape
        h = x.reshape(-1, shape[-1])
        r = self.router(h)
        top, idx = torch.topk(r, self.k, dim=-1)
        w = torch.softmax(top, dim=-1)
        out = torch.zeros_like(h)
        for e in range(self.E):
            rows, slot = (idx == e).nonzero(as_tuple=True)
            if rows.numel() == 0:
                continue
            y = self.experts[e](h.index_select(0, rows)) * w[rows, slot].unsqueeze(-1)
            out = out.index_add(0, rows, y)
        # Switch-style load-balancing loss (training only; not part of the
        # architecture): E · Σ_e fraction_routed(e) · mean_prob(e).
        frac = torch.zeros(self.E).index_add(0, idx.reshape(-1), torch.ones(idx.numel())) / idx.numel()
        self.aux = self.E * torch.sum(frac * torch.softmax(r, dim=-1).mean(0))
        return out.view(shape)


class Layer(nn.Module):
    def __init__(self, c, moe, moe_norm):
        super().__init__()
        d, eps = c["hidden_size"], c["rms_norm_eps"]
        self.input_layernorm = RMSNorm(d, eps)
        self.self_attn = Attention(d, c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"],
                                   c["rope_theta"], c["max_position_embeddings"])
        self.post_attention_layernorm = RMSNorm(d, eps)
        self.mlp = FFN(d, c["intermediate_size"])
        if moe_norm:
            self.moe_norm = RMSNorm(d, eps)
        if moe:
            self.moe = MoE(d, c["num_experts"], c["num_experts_per_tok"], c["expert_intermediate_size"])


class Model(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.arch = arch_of(c)
        style, self.dd, self.de, moe, moe_norm = ARCH[self.arch]
        d, L = c["hidden_size"], c["num_hidden_layers"]
        self.model = nn.Module()
        self.model.embed_tokens = nn.Embedding(c["vocab_size"], d)
        self.model.layers = nn.ModuleList([Layer(c, moe, moe_norm) for _ in range(L)])
        self.model.norm = RMSNorm(d, c["rms_norm_eps"])
        self.lm_head = nn.Linear(d, c["vocab_size"], bias=False)
        self.reset_parameters()

    def reset_parameters(self):
        """GPT-2-style init: N(0, 0.02), residual-out projections scaled by
        1/sqrt(2·passes); norms 1."""
        passes = len(self.model.layers) * self.c.get("block_iterations", 1)
        for name, p in self.named_parameters():
            if name.endswith("layernorm.weight") or name.endswith("norm.weight"):
                nn.init.ones_(p)
            elif name.endswith("o_proj.weight") or name.endswith("down_proj.weight"):
                nn.init.normal_(p, 0.0, 0.02 / math.sqrt(2 * passes))
            else:
                nn.init.normal_(p, 0.0, 0.02)

    def aux_loss(self):
        a = [l.moe.aux for l in self.model.layers if hasattr(l, "moe") and l.moe.aux is not None]
        return sum(a) / len(a) if a else torch.zeros(())

    def final(self, x):
        return self.lm_head(self.model.norm(x))

    def forward(self, ids):
        """ids [B, T] → logits [B, T, V]."""
        x = self.model.embed_tokens(ids)
        L = len(self.model.layers)
        ls = self.model.layers
        if self.arch == "llama" or self.arch == "arch5_fixed_point":
            iters = self.c.get("block_iterations", 1) if self.arch == "arch5_fixed_point" else 1
            for l in ls:
                for _ in range(iters):
                    x = x + l.self_attn(l.input_layernorm(x))
                    x = x + l.mlp(l.post_attention_layernorm(x))
            return self.final(x)
        if self.arch == "arch1_decoupled_streams":
            mi = self.c.get("merge_interval", 3)
            sa = sf = x
            for i, l in enumerate(ls):
                sa = sa + l.self_attn(l.input_layernorm(sa))
                sf = sf + l.mlp(l.post_attention_layernorm(sf))
                if (i + 1) % mi == 0:
                    sa = sf = (sa + sf) / 2
            return self.final((sa + sf) / 2)
        if self.arch == "arch3_pipeline_registers":
            attn_reg = xfm_reg = x
            for l in ls:
                f = l.mlp(l.post_attention_layernorm(xfm_reg))
                attn_reg = attn_reg + l.self_attn(l.input_layernorm(attn_reg))
                xfm_reg = attn_reg + f
            return self.final(xfm_reg)
        if self.arch in ("arch2_4_combined", "arch2_4_sync"):
            outs, queue = [], {}
            for i, l in enumerate(ls):
                x_mid = x + l.self_attn(l.input_layernorm(x))
                x_out = x_mid
                if i - self.dd >= 0:
                    x_out = x_out + l.mlp(l.post_attention_layernorm(outs[i - self.dd]))
                queue.setdefault(min(i + self.de, L - 1), []).append(l.moe(l.moe_norm(x_mid)))
                for e in queue.pop(i, []):
                    x_out = x_out + e
                outs.append(x_out)
                x = x_out
            return self.final(x)
        if self.arch == "arch4_async_experts":
            queue = {}
            for i, l in enumerate(ls):
                for e in queue.pop(i, []):
                    x = x + e
                h = l.post_attention_layernorm(x)
                m = l.self_attn(l.input_layernorm(x))
                f = l.mlp(h)
                queue.setdefault(i + self.de, []).append(l.moe(h))
                x = x + m + f
            for t in sorted(queue):
                for e in queue[t]:
                    x = x + e
            return self.final(x)
        raise ValueError(self.arch)


def tensors(model):
    """{HF name: f32 numpy array} of the trainable weights."""
    return {k: v.detach().float().numpy() for k, v in model.state_dict().items()}
