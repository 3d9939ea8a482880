"""config.json of a real Hugging Face family → ModelConfig, strictly.

Each family's keys and defaults are those of transformers'
configuration_<family>.py / modeling_<family>.py (read for facts, see
../shared/spec/HF_FAMILIES.md). A key that changes the computation and that
this reference does not implement raises ValueError naming the key and its
value: the reference refuses what it cannot compute, like the converter.
"""
# What transformers' config classes default to when config.json omits a key.
DEFAULTS = {
    "llama": dict(rms_norm_eps=1e-6, tie_word_embeddings=False, hidden_act="silu", rope_theta=10000.0),
    "mistral": dict(rms_norm_eps=1e-6, tie_word_embeddings=False, hidden_act="silu", rope_theta=10000.0),
    "qwen2": dict(rms_norm_eps=1e-6, tie_word_embeddings=False, hidden_act="silu", rope_theta=10000.0),
    "qwen3": dict(rms_norm_eps=1e-6, tie_word_embeddings=False, hidden_act="silu", rope_theta=10000.0),
    "qwen3_moe": dict(rms_norm_eps=1e-6, tie_word_embeddings=False, hidden_act="silu",
                      rope_theta=10000.0),
    "gemma3_text": dict(rms_norm_eps=1e-6, tie_word_embeddings=True, hidden_activation="gelu_pytorch_tanh",
                        rope_theta=1_000_000.0),
}

ACTIVATIONS = ("silu", "gelu_pytorch_tanh")
ROPE_TYPES = ("default", "linear", "llama3")


def refuse(key, value, why="not implemented"):
    raise ValueError("config key %s = %r: %s" % (key, value, why))


def rope_scaling(c, key="rope_scaling"):
    """The normalized rope_scaling dict ({"rope_type": ..., params}) or None;
    c[key] is the old-style rope_scaling or a newer rope_parameters entry."""
    rs = c.get(key)
    if rs is None:
        return None
    t = rs.get("rope_type", rs.get("type"))
    if t not in ROPE_TYPES:
        refuse(key + ".rope_type", t)
    if t == "default":
        return None
    out = {"rope_type": t, "factor": float(rs["factor"])}
    if t == "llama3":
        for k in ("low_freq_factor", "high_freq_factor", "original_max_position_embeddings"):
            out[k] = float(rs[k])
    return out


def layer_types(c, L):
    """gemma3: config layer_types, else sliding unless (i+1) % sliding_window_pattern == 0."""
    lt = c.get("layer_types")
    if lt is None:
        pattern = c.get("sliding_window_pattern", 6)
        lt = ["sliding_attention" if (i + 1) % pattern else "full_attention" for i in range(L)]
    if len(lt) != L:
        refuse("layer_types", lt, "needs one entry per layer (%d)" % L)
    for t in lt:
        if t not in ("sliding_attention", "full_attention"):
            refuse("layer_types", t)
    return list(lt)


def from_dict(arch, c):
    if arch == "gemma4_text":
        return gemma4_from_dict(c)
    from .config import ModelConfig
    dflt = DEFAULTS[arch]

    def get(k):
        v = c.get(k)
        return dflt.get(k) if v is None else v

    d, H, L = c["hidden_size"], c["num_attention_heads"], c["num_hidden_layers"]
    act = get("hidden_activation") if arch == "gemma3_text" else get("hidden_act")
    if act not in ACTIVATIONS:
        refuse("hidden_activation" if arch == "gemma3_text" else "hidden_act", act)
    if c.get("pretraining_tp", 1) != 1:
        refuse("pretraining_tp", c["pretraining_tp"])
    for k in ("attn_logit_softcapping",):
        if c.get(k) is not None:
            refuse(k, c[k])
    if arch in ("qwen2", "qwen3", "qwen3_moe") and c.get("use_sliding_window"):
        refuse("use_sliding_window", c["use_sliding_window"])
    # attention_bias is read by llama (q, k, v, o), qwen3/qwen3_moe and gemma3
    # (no biases implemented there); mistral and qwen2 hard-code theirs.
    if arch in ("qwen3", "qwen3_moe", "gemma3_text") and c.get("attention_bias"):
        refuse("attention_bias", c["attention_bias"])
    cfg = ModelConfig(
        architecture=arch, hidden_size=d, num_hidden_layers=L, num_attention_heads=H,
        num_key_value_heads=c.get("num_key_value_heads") or H,
        head_dim=c.get("head_dim") or d // H, vocab_size=c["vocab_size"],
        intermediate_size=c.get("intermediate_size", 0),
        rms_norm_eps=get("rms_norm_eps"), rope_theta=float(get("rope_theta")),
        tie_word_embeddings=get("tie_word_embeddings"),
        max_position_embeddings=c.get("max_position_embeddings", 2048),
        hidden_act=act, raw=c,
    )
    if arch == "llama":
        cfg.attention_bias = bool(c.get("attention_bias", False))
        cfg.mlp_bias = bool(c.get("mlp_bias", False))
    if arch == "qwen2":
        cfg.qkv_bias = True
    if arch in ("llama", "mistral", "qwen2", "qwen3", "qwen3_moe"):
        cfg.rope_scaling = rope_scaling(c)
        if c.get("rope_parameters") is not None:
            # transformers v5 writes {"rope_type", "rope_theta", scaling params}
            # here instead of rope_theta + rope_scaling.
            rp = c["rope_parameters"]
            cfg.rope_theta = float(rp.get("rope_theta", cfg.rope_theta))
            cfg.rope_scaling = rope_scaling(c, "rope_parameters")
    if arch == "mistral" and c.get("sliding_window") is not None:
        cfg.sliding_window = int(c["sliding_window"])
    if arch in ("qwen3", "qwen3_moe", "gemma3_text"):
        cfg.qk_norm = True
    if arch == "qwen3_moe":
        cfg.num_experts = c["num_experts"]
        cfg.num_experts_per_tok = c["num_experts_per_tok"]
        cfg.expert_intermediate_size = c["moe_intermediate_size"]
        cfg.moe_router_softmax_all = True
        cfg.norm_topk_prob = bool(c.get("norm_topk_prob", False))
        step = c.get("decoder_sparse_step", 1)
        only = c.get("mlp_only_layers") or []
        cfg.moe_layers = [l for l in range(L)
                          if l not in only and cfg.num_experts > 0 and (l + 1) % step == 0]
    if arch == "gemma3_text":
        cfg.norm_plus_one = True
        cfg.sandwich_norms = True
        cfg.query_pre_attn_scalar = float(c.get("query_pre_attn_scalar", 256))
        cfg.layer_types = layer_types(c, L)
        cfg.sliding_window = int(c.get("sliding_window", 4096))
        cfg.rope_local_base_freq = float(c.get("rope_local_base_freq", 10000.0))
        cfg.rope_scaling = rope_scaling(c)
        rp = c.get("rope_parameters")
        if rp is not None:
            # transformers v5: {"sliding_attention": {...}, "full_attention": {...}}
            for kind in ("sliding_attention", "full_attention"):
                if not isinstance(rp.get(kind), dict) or "rope_theta" not in rp[kind]:
                    refuse("rope_parameters." + kind, rp.get(kind), "each layer kind needs its rope_theta")
            if rope_scaling(rp, "sliding_attention") is not None:
                refuse("rope_parameters.sliding_attention.rope_type",
                       rp["sliding_attention"].get("rope_type"), "sliding layers rotate unscaled")
            cfg.rope_local_base_freq = float(rp["sliding_attention"]["rope_theta"])
            cfg.rope_theta = float(rp["full_attention"]["rope_theta"])
            cfg.rope_scaling = rope_scaling(rp, "full_attention")
        cfg.final_logit_softcapping = c.get("final_logit_softcapping") or 0.0
        cfg.embed_scale_dtype = embed_dtype(c)
        cfg.global_head_dim = 0
    return cfg


def embed_dtype(c):
    """The dtype the embedding scale sqrt(d) is rounded to: the model's dtype
    (config "torch_dtype", newer "dtype"); float32 when neither is given."""
    t = c.get("torch_dtype", c.get("dtype", "float32"))
    names = {"float32": "F32", "float16": "F16", "bfloat16": "BF16"}
    if t not in names:
        refuse("torch_dtype", t)
    return names[t]


GEMMA4_ROPE = {"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
               "full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25,
                                  "rope_theta": 1000000.0}}


def gemma4_from_dict(c):
    """Gemma4ForCausalLM (text keys at the top) or Gemma4ForConditionalGeneration
    (text keys under text_config; dtype may sit at the top) → ModelConfig, with
    configuration_gemma4.py's defaults and ../shared/spec/GEMMA4.md's refusals."""
    from .config import ModelConfig
    t = dict(c.get("text_config") or c)
    for k in ("dtype", "torch_dtype"):
        if k not in t and k in c:
            t[k] = c[k]
    L = t.get("num_hidden_layers", 30)
    if t.get("hidden_size_per_layer_input", 256):
        refuse("hidden_size_per_layer_input", t.get("hidden_size_per_layer_input", 256),
               "per-layer embeddings are not implemented (a missing key means 256)")
    if t.get("num_kv_shared_layers", 0):
        refuse("num_kv_shared_layers", t["num_kv_shared_layers"])
    if t.get("use_double_wide_mlp", False):
        refuse("use_double_wide_mlp", True)
    if t.get("use_bidirectional_attention") == "all":
        refuse("use_bidirectional_attention", "all")
    if t.get("attention_bias", False):
        refuse("attention_bias", True)
    if t.get("per_layer_config"):
        refuse("per_layer_config", "…", "per-layer head sizes are read from head_dim/global_head_dim only")
    act = t.get("hidden_activation", "gelu_pytorch_tanh")
    if act not in ACTIVATIONS:
        refuse("hidden_activation", act)
    lt = layer_types(dict(t, sliding_window_pattern=6), L)
    lt[-1] = "full_attention"      # configuration_gemma4 forces the last layer to full attention
    rp = t.get("rope_parameters") or GEMMA4_ROPE
    for kind, want in (("sliding_attention", ("default",)), ("full_attention", ("proportional", "default"))):
        if rp[kind].get("rope_type") not in want:
            refuse("rope_parameters.%s.rope_type" % kind, rp[kind].get("rope_type"))
    H = t.get("num_attention_heads", 8)
    hd = t.get("head_dim", 256)
    G = t.get("global_head_dim", 512) or hd
    if rp["full_attention"]["rope_type"] == "default":
        if G != hd:
            refuse("rope_parameters.full_attention.rope_type", "default",
                   "needs global_head_dim == head_dim")
        rp = dict(rp, full_attention=dict(rp["full_attention"], partial_rotary_factor=1.0))
    k_eq_v = bool(t.get("attention_k_eq_v", False))
    kv = t.get("num_key_value_heads", 4)
    moe = bool(t.get("enable_moe_block", False))
    cfg = ModelConfig(
        architecture="gemma4_text", hidden_size=t.get("hidden_size", 2304), num_hidden_layers=L,
        num_attention_heads=H, num_key_value_heads=kv, head_dim=hd,
        vocab_size=t.get("vocab_size", 262144), intermediate_size=t.get("intermediate_size", 9216),
        num_experts=t["num_experts"] if moe else 0,
        num_experts_per_tok=t["top_k_experts"] if moe else 0,
        expert_intermediate_size=t["moe_intermediate_size"] if moe else 0,
        rms_norm_eps=t.get("rms_norm_eps", 1e-6),
        tie_word_embeddings=t.get("tie_word_embeddings", c.get("tie_word_embeddings", True)),
        max_position_embeddings=t.get("max_position_embeddings", 131072), hidden_act=act,
        layer_types=lt, sliding_window=t.get("sliding_window", 512), global_head_dim=G,
        attention_k_eq_v=k_eq_v, use_v_norm=True,
        final_logit_softcapping=t.get("final_logit_softcapping") or 0.0, raw=c,
    )
    cfg.num_global_key_value_heads = (t.get("num_global_key_value_heads") or kv) if k_eq_v else kv
    cfg.rope_parameters = rp
    cfg.qk_norm = True
    cfg.sandwich_norms = True
    cfg.embed_scale_dtype = embed_dtype(t)
    return cfg
