"""Real Gemma 4 text decoder (`gemma4_text`, e.g. 26B-A4B), written from
transformers' modeling_gemma4.py / configuration_gemma4.py and
../shared/spec/GEMMA4.md (read for facts, not copied). Not the report's
pipeline-native `gemma4` (architectures.Gemma4).

Per layer i (kind sliding or full; head size and KV heads per kind):
  x  = x + N_post_attn(Attn(N_in(x)))              q/k-norm (weight w), V-norm (no weight),
                                                   scale 1.0, full layers K=V from raw k_proj
  r  = x
  m  = MLP(N_pre_ffn(r))
  MoE: m = N_post_ffn_1(m) + N_post_ffn_2(Σ w_e·Expert_e(N_pre_ffn_2(r))),
       router on rms(r)·router.scale·d^-1/2, softmax over all E, top-k,
       renormalised over k, times per_expert_scale[e]
  x  = (r + N_post_ffn(m)) · layer_scalar
Norms multiply by w (not 1 + w). Embedding × sqrt(d) rounded to the model
dtype; tied head on the unscaled matrix; final soft-cap.
"""
import torch
import torch.nn.functional as F

from . import rope
from . import weights as W
from .architectures import Layer, Model, _DecodeCtx
from .attention import Attention
from .families import round_to_dtype
from .ffn import FFN
from .norms import rms_norm

# Tensors of a multimodal checkpoint that are not the text decoder: skipped.
TOWER_PREFIXES = ("model.vision_tower.", "model.audio_tower.", "model.embed_vision.",
                  "model.embed_audio.", "model.multi_modal_projector.")
MM_PREFIX = "model.language_model."


def text_tensors(tensors):
    """The text decoder's tensors under HF's text-only names (model.…): a
    multimodal checkpoint's model.language_model.… renamed, its towers dropped."""
    if not any(k.startswith(MM_PREFIX) for k in tensors):
        return tensors
    out = {}
    for k, v in tensors.items():
        if k.startswith(MM_PREFIX):
            out["model." + k[len(MM_PREFIX):]] = v
        elif k.startswith(TOWER_PREFIXES):
            continue
        else:
            out[k] = v     # anything else must still be consumed (e.g. lm_head.weight)
    return out


class Gemma4MoE:
    """Router on the residual, experts on their own normed input."""

    def __init__(self, proj, scale, per_expert_scale, experts, k, eps):
        self.proj, self.scale, self.per_expert_scale = proj, scale, per_expert_scale
        self.experts, self.k, self.eps = experts, k, eps
        self.root = proj.shape[1] ** -0.5

    def route(self, r):
        z = F.linear(rms_norm(r, None, self.eps) * self.scale * self.root, self.proj)
        p = torch.softmax(z, dim=-1)
        _, order = torch.sort(p, dim=-1, descending=True, stable=True)
        idx = order[:, :self.k]
        w = torch.gather(p, 1, idx)
        w = w / w.sum(dim=-1, keepdim=True)
        return idx, w * self.per_expert_scale[idx]

    def __call__(self, r, h):
        """Decode path: only the selected experts run."""
        idx, w = self.route(r)
        out = torch.zeros_like(h)
        for t in range(h.shape[0]):
            acc = torch.zeros_like(h[t])
            for j in range(self.k):
                acc = acc + w[t, j] * self.experts[int(idx[t, j])](h[t:t + 1])[0]
            out[t] = acc
        return out

    def all_experts(self, r, h):
        """Sequence path: every expert on every row, then the routed mix."""
        idx, w = self.route(r)
        ys = torch.stack([e(h) for e in self.experts])
        mix = torch.zeros(h.shape[0], len(self.experts))
        mix.scatter_(1, idx, w)
        return torch.einsum("te,etd->td", mix, ys)


class Gemma4Text(Model):
    name = "gemma4_text"

    def __init__(self, cfg, tensors):
        t = W.Consumed(text_tensors(tensors))
        super().__init__(cfg, t)
        left = t.unclaimed()
        if left:
            raise ValueError("gemma4_text: tensor %s is not used by the model" % left[0])

    def _layer(self, t, l):
        c, p = self.cfg, W.layer_prefix(l)
        a = p + "self_attn."
        full = c.is_full(l)
        hd = c.layer_head_dim(l)
        k_eq_v = c.attention_k_eq_v and full
        kv = c.num_global_key_value_heads if k_eq_v else c.num_key_value_heads
        if full:
            rp = c.rope_parameters["full_attention"]
            G = hd
            n = int(rp.get("partial_rotary_factor", 1.0) * G // 2)
            freqs = rope.inv_freq(G, rp["rope_theta"], n)
            if rp.get("factor"):
                freqs = (freqs / torch.tensor(rp["factor"], dtype=torch.float32)).float()
            window = 0
        else:
            rp = c.rope_parameters["sliding_attention"]
            freqs, window = rope.inv_freq(hd, rp["rope_theta"], hd // 2), c.sliding_window
        attn = Attention(t[a + "q_proj.weight"], t[a + "k_proj.weight"],
                         None if k_eq_v else t[a + "v_proj.weight"], t[a + "o_proj.weight"],
                         c.num_attention_heads, kv, hd, None, None, window, True, c.rms_norm_eps,
                         freqs=freqs, scale=1.0, q_norm=t[a + "q_norm.weight"],
                         k_norm=t[a + "k_norm.weight"])
        ffn = FFN(t[p + "mlp.gate_proj.weight"], t[p + "mlp.up_proj.weight"],
                  t[p + "mlp.down_proj.weight"], c.hidden_act)
        moe = None
        if c.num_experts:
            gu, dn = t[p + "experts.gate_up_proj"], t[p + "experts.down_proj"]
            fe = c.expert_intermediate_size
            experts = [FFN(gu[e, :fe], gu[e, fe:], dn[e], c.hidden_act) for e in range(c.num_experts)]
            moe = Gemma4MoE(t[p + "router.proj.weight"], t[p + "router.scale"],
                            t[p + "router.per_expert_scale"], experts, c.num_experts_per_tok,
                            c.rms_norm_eps)
        layer = Layer(attn, t[p + "input_layernorm.weight"], t[p + "post_attention_layernorm.weight"],
                      None, ffn, moe)
        layer.pre_ffn = t[p + "pre_feedforward_layernorm.weight"]
        layer.post_ffn = t[p + "post_feedforward_layernorm.weight"]
        if moe is not None:
            layer.post_ffn_1 = t[p + "post_feedforward_layernorm_1.weight"]
            layer.pre_ffn_2 = t[p + "pre_feedforward_layernorm_2.weight"]
            layer.post_ffn_2 = t[p + "post_feedforward_layernorm_2.weight"]
        layer.scalar = t[p + "layer_scalar"]
        return layer

    def embed(self, tokens):
        c = self.cfg
        scale = round_to_dtype(torch.tensor(c.hidden_size ** 0.5).item(), c.embed_scale_dtype)
        return self.embedding[torch.tensor(tokens, dtype=torch.long)] * torch.tensor(scale)

    def layers_forward(self, x, ctx):
        res = []
        for l, layer in enumerate(self.layers):
            x = x + self.norm(self.attn_block(layer, l, x, ctx), layer.nf)
            r = x
            m = layer.ffn(self.norm(r, layer.pre_ffn))
            if layer.moe is not None:
                h2 = self.norm(r, layer.pre_ffn_2)
                y = layer.moe(r, h2) if isinstance(ctx, _DecodeCtx) else layer.moe.all_experts(r, h2)
                m = self.norm(m, layer.post_ffn_1) + self.norm(y, layer.post_ffn_2)
            x = (r + self.norm(m, layer.post_ffn)) * layer.scalar
            res.append(x)
        return x, res
