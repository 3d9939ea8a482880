"""The real Hugging Face families (../shared/spec/HF_FAMILIES.md), written from
transformers' modeling_<family>.py (read for facts, not copied):

  llama        pre-norm; rope_scaling none/linear/llama3; attention_bias (q, k, v, o)
               and mlp_bias (gate, up, down); explicit head_dim; tied embeddings
  mistral      llama + sliding window on every layer (the last `sliding_window`
               positions, the current one included)
  qwen2        llama + q/k/v biases (no o bias)
  qwen3        llama + per-head q/k RMSNorm (weight w) after the projection, before RoPE
  qwen3_moe    qwen3 attention; sparse layers (decoder_sparse_step, mlp_only_layers)
               route with softmax over all E, top-k, renormalised when norm_topk_prob
  gemma3_text  (1 + w) RMSNorms, four per layer (post-attention norm on the attention
               output, pre/post-feedforward norms around the MLP), q/k-norm (1 + w),
               scale query_pre_attn_scalar^-1/2, embedding × sqrt(d) rounded to the
               model dtype, sliding layers (rope_local_base_freq, no scaling) and full
               layers (rope_theta with rope_scaling), GeLU-tanh, tied embeddings

Both forwards (decode with KV caches, whole sequence with masks and every
expert) share one layer loop, as for the other delay-free architectures.
"""
import numpy as np
import torch

from . import rope
from . import weights as W
from .architectures import Layer, Llama, Model
from .attention import Attention
from .ffn import FFN
from .moe import MoE

_DTYPES = {"F32": np.float32, "F16": np.float16}


def round_to_dtype(x, dtype):
    """An f32 value rounded to dtype ("F32", "F16", "BF16", nearest even) and back to f32."""
    x = np.float32(x)
    if dtype == "BF16":
        from .safetensors_io import bf16_bits_to_f32, f32_to_bf16_bits
        return np.float32(bf16_bits_to_f32(f32_to_bf16_bits(np.array([x])))[0])
    return np.float32(_DTYPES[dtype](x))


class HFDecoder(Llama):
    """llama, mistral, qwen2, qwen3 and qwen3_moe: the pre-norm layer of Llama
    with the family's attention and MLP/MoE features."""

    def __init__(self, cfg, tensors):
        t = tensors if isinstance(tensors, W.Consumed) else W.Consumed(tensors)
        super().__init__(cfg, t)
        self.final_norm = self.norm_weight(t, "model.norm.weight")
        # Older Llama checkpoints save RoPE's inv_freq buffer; it is recomputed.
        left = [n for n in t.unclaimed() if not n.endswith(".rotary_emb.inv_freq")]
        if left:
            raise ValueError("%s: tensor %s is not used by the model" % (cfg.architecture, left[0]))

    def norm_weight(self, t, name):
        """A stored norm weight as the multiplier it is: w, or 1 + w (gemma3, in f32)."""
        w = t[name]
        return 1.0 + w if self.cfg.norm_plus_one else w

    def rope_table(self, l):
        """(inv_freq table, sliding window) of layer l."""
        c = self.cfg
        return rope.scaled_inv_freq(c.head_dim, c.rope_theta, c.rope_scaling), c.sliding_window

    def attention_scale(self):
        return None   # 1/sqrt(head_dim)

    def _attention(self, t, l):
        c, p = self.cfg, W.layer_prefix(l)
        a = p + "self_attn."
        if c.attention_bias:
            biases = tuple(t[a + n + "_proj.bias"] for n in "qkvo")
        elif c.qkv_bias:
            biases = tuple(t[a + n + "_proj.bias"] for n in "qkv") + (None,)
        else:
            biases = None
        qn = kn = None
        if c.qk_norm:
            qn, kn = self.norm_weight(t, a + "q_norm.weight"), self.norm_weight(t, a + "k_norm.weight")
        freqs, window = self.rope_table(l)
        return Attention(t[a + "q_proj.weight"], t[a + "k_proj.weight"], t[a + "v_proj.weight"],
                         t[a + "o_proj.weight"], c.num_attention_heads, c.num_key_value_heads,
                         c.head_dim, None, None, window, False, c.rms_norm_eps, freqs=freqs,
                         scale=self.attention_scale(), biases=biases, q_norm=qn, k_norm=kn)

    def _mlp(self, t, l):
        c, p = self.cfg, W.layer_prefix(l) + "mlp."
        if c.is_moe_layer(l):
            experts = [FFN(*(t[n] for n in W.expert_names(c, l, e)), act=c.hidden_act)
                       for e in range(c.num_experts)]
            return None, MoE(t[W.router_name(c, l)], experts, c.num_experts_per_tok,
                             softmax_all=c.moe_router_softmax_all, norm_topk=c.norm_topk_prob)
        biases = tuple(t[p + n + "_proj.bias"] for n in ("gate", "up", "down")) if c.mlp_bias else None
        return FFN(t[p + "gate_proj.weight"], t[p + "up_proj.weight"], t[p + "down_proj.weight"],
                   c.hidden_act, biases), None

    def _layer(self, t, l):
        p = W.layer_prefix(l)
        ffn, moe = self._mlp(t, l)
        return Layer(self._attention(t, l), self.norm_weight(t, p + "input_layernorm.weight"),
                     self.norm_weight(t, p + "post_attention_layernorm.weight"), None, ffn, moe)


class HFLlama(HFDecoder):
    name = "llama"


class Mistral(HFDecoder):
    name = "mistral"


class Qwen2(HFDecoder):
    name = "qwen2"


class Qwen3(HFDecoder):
    name = "qwen3"


class Qwen3Moe(HFDecoder):
    name = "qwen3_moe"


class Gemma3Text(HFDecoder):
    """x += N_post_attn(Attn(N_in(x))); x += N_post_ffn(MLP(N_pre_ffn(x)))."""
    name = "gemma3_text"

    def rope_table(self, l):
        c = self.cfg
        if c.is_full(l):
            return rope.scaled_inv_freq(c.head_dim, c.rope_theta, c.rope_scaling), 0
        return rope.scaled_inv_freq(c.head_dim, c.rope_local_base_freq, None), c.sliding_window

    def attention_scale(self):
        return self.cfg.query_pre_attn_scalar ** -0.5

    def _layer(self, t, l):
        layer = super()._layer(t, l)
        p = W.layer_prefix(l)
        layer.pre_ffn = self.norm_weight(t, p + "pre_feedforward_layernorm.weight")
        layer.post_ffn = self.norm_weight(t, p + "post_feedforward_layernorm.weight")
        return layer

    def embed(self, tokens):
        c = self.cfg
        scale = round_to_dtype(np.float32(np.sqrt(c.hidden_size)), c.embed_scale_dtype)
        return self.embedding[torch.tensor(tokens, dtype=torch.long)] * torch.tensor(scale)

    def layers_forward(self, x, ctx):
        res = []
        for l, layer in enumerate(self.layers):
            x = x + self.norm(self.attn_block(layer, l, x, ctx), layer.nf)
            x = x + self.norm(layer.ffn(self.norm(x, layer.pre_ffn)), layer.post_ffn)
            res.append(x)
        return x, res


FAMILY_CLASSES = {cls.name: cls for cls in (HFLlama, Mistral, Qwen2, Qwen3, Qwen3Moe, Gemma3Text)}
