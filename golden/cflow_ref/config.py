"""config.json → ModelConfig: one normalized view of HF configs (llama, mixtral; the
other real families through hf_config.py) and pipeline-native configs (keys:
ARCHITECTURES.md and docs/DESIGN.md)."""
import json
from dataclasses import dataclass, field
from typing import List, Optional

ARCHITECTURES = (
    "llama", "mixtral", "arch1_decoupled_streams", "arch2_4_combined", "arch2_4_sync",
    "arch3_pipeline_registers", "arch4_async_experts", "arch5_fixed_point", "gemma4",
    "mistral", "qwen2", "qwen3", "qwen3_moe", "gemma3_text", "gemma4_text",
)

# The real Hugging Face families (../shared/spec/HF_FAMILIES.md), beside llama and mixtral.
HF_FAMILIES = ("llama", "mistral", "qwen2", "qwen3", "qwen3_moe", "gemma3_text", "gemma4_text",
               "mixtral")

# The combine style each architecture fixes (DESIGN.md "Combine styles").
COMBINE_STYLE = {
    "llama": "PreNorm", "mixtral": "PreNorm", "arch5_fixed_point": "PreNorm",
    "arch1_decoupled_streams": "DecoupledStreams", "arch3_pipeline_registers": "PipelineRegisters",
    "arch2_4_combined": "DelayedSum", "arch2_4_sync": "DelayedSum",
    "arch4_async_experts": "AsyncExperts", "gemma4": "ParallelSqrt2",
    "mistral": "PreNorm", "qwen2": "PreNorm", "qwen3": "PreNorm", "qwen3_moe": "PreNorm",
    "gemma3_text": "PreNorm", "gemma4_text": "PreNorm",
}

HF_CLASSES = {"LlamaForCausalLM": "llama", "MixtralForCausalLM": "mixtral",
              "MistralForCausalLM": "mistral", "Qwen2ForCausalLM": "qwen2",
              "Qwen3ForCausalLM": "qwen3", "Qwen3MoeForCausalLM": "qwen3_moe",
              "Gemma3ForCausalLM": "gemma3_text", "Gemma4ForCausalLM": "gemma4_text",
              "Gemma4ForConditionalGeneration": "gemma4_text"}


@dataclass
class ModelConfig:
    architecture: str
    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    vocab_size: int
    intermediate_size: int = 0          # dense FFN width (0: no dense FFN)
    num_experts: int = 0
    num_experts_per_tok: int = 0
    expert_intermediate_size: int = 0
    rms_norm_eps: float = 1e-6
    rope_theta: float = 10000.0
    tie_word_embeddings: bool = False
    max_position_embeddings: int = 2048
    dense_delay: int = 0
    expert_delay: int = 0
    merge_interval: int = 3
    block_iterations: int = 1
    hidden_act: str = "silu"
    # gemma-style features
    layer_types: Optional[List[str]] = None
    sliding_window: int = 0
    global_head_dim: int = 0
    rope_theta_global: float = 1e6
    partial_rotary_factor: float = 1.0
    attention_k_eq_v: bool = False
    use_embedding_scale: bool = False
    use_v_norm: bool = False
    final_logit_softcapping: float = 0.0
    # real HF families (hf_config.py fills these)
    attention_bias: bool = False        # llama: q, k, v and o biases
    qkv_bias: bool = False              # qwen2: q, k and v biases (no o bias)
    mlp_bias: bool = False              # llama: gate, up and down biases
    qk_norm: bool = False               # qwen3, qwen3_moe, gemma3: per-head q/k RMSNorm before RoPE
    norm_plus_one: bool = False         # gemma3: every RMSNorm multiplies by (1 + w)
    sandwich_norms: bool = False        # gemma3: post-attention and pre/post-feedforward norms
    query_pre_attn_scalar: float = 0.0  # gemma3: attention scale query_pre_attn_scalar^-1/2
    rope_scaling: Optional[dict] = None  # full/global layers: None, linear or llama3
    rope_local_base_freq: float = 0.0   # gemma3 sliding layers' θ (no scaling)
    embed_scale_dtype: str = ""         # gemma3: sqrt(d) rounded to this dtype ("F32"/"F16"/"BF16")
    moe_router_softmax_all: bool = False  # qwen3_moe: softmax over all E, then top-k
    norm_topk_prob: bool = True         # qwen3_moe: renormalise the k probabilities
    moe_layers: Optional[List[int]] = None  # qwen3_moe: which layers are sparse (others dense)
    num_global_key_value_heads: int = 0  # gemma4_text full layers when attention_k_eq_v
    rope_parameters: Optional[dict] = None  # gemma4_text: per layer kind
    raw: dict = field(default_factory=dict, repr=False)

    @property
    def num_passes(self):
        """Residual norms per step: layers, or layers × block_iterations (arch5)."""
        return self.num_hidden_layers * self.block_iterations

    def is_full(self, layer):
        """Whether layer uses full attention (gemma4 layer_types; all layers otherwise)."""
        return self.layer_types is None or self.layer_types[layer] == "full_attention"

    def is_moe_layer(self, layer):
        """Whether layer has the MoE block instead of (or, pipeline-native, beside) the dense FFN."""
        if not self.num_experts:
            return False
        return self.moe_layers is None or layer in self.moe_layers

    def layer_head_dim(self, layer):
        if self.layer_types is not None and self.is_full(layer) and self.global_head_dim:
            return self.global_head_dim
        return self.head_dim


def from_dict(c):
    """Normalize a config dict (HF or pipeline-native) to a ModelConfig."""
    arch = c.get("architecture")
    if arch is None:
        for a in c.get("architectures", []):
            if a in HF_CLASSES:
                arch = HF_CLASSES[a]
    if arch is None and c.get("model_type") in HF_FAMILIES:
        arch = c["model_type"]
    if arch not in ARCHITECTURES:
        raise ValueError("unknown architecture %r" % arch)
    if arch in HF_FAMILIES and arch != "mixtral":
        from . import hf_config
        return hf_config.from_dict(arch, c)
    d, H = c["hidden_size"], c["num_attention_heads"]
    cfg = ModelConfig(
        architecture=arch, hidden_size=d, num_hidden_layers=c["num_hidden_layers"],
        num_attention_heads=H, num_key_value_heads=c.get("num_key_value_heads", H),
        head_dim=c.get("head_dim", d // H), vocab_size=c["vocab_size"],
        intermediate_size=c.get("intermediate_size", 0),
        num_experts=c.get("num_experts", c.get("num_local_experts", 0)),
        num_experts_per_tok=c.get("num_experts_per_tok", 0),
        expert_intermediate_size=c.get("expert_intermediate_size", 0),
        rms_norm_eps=c.get("rms_norm_eps", 1e-5 if arch in ("llama", "mixtral") else 1e-6),
        rope_theta=c.get("rope_theta", 10000.0),
        tie_word_embeddings=c.get("tie_word_embeddings", False),
        max_position_embeddings=c.get("max_position_embeddings", 2048),
        dense_delay=c.get("dense_delay", 0), expert_delay=c.get("expert_delay", 0),
        merge_interval=c.get("merge_interval", 3),
        block_iterations=c.get("block_iterations", 3) if arch == "arch5_fixed_point" else 1,
        hidden_act=c.get("hidden_act", "silu"),
        layer_types=c.get("layer_types"), sliding_window=c.get("sliding_window", 0) or 0,
        global_head_dim=c.get("global_head_dim", 0),
        rope_theta_global=c.get("rope_theta_global", 1e6),
        partial_rotary_factor=c.get("partial_rotary_factor", 1.0),
        attention_k_eq_v=c.get("attention_k_eq_v", False),
        use_embedding_scale=c.get("use_embedding_scale", False),
        use_v_norm=c.get("use_v_norm", False),
        final_logit_softcapping=c.get("final_logit_softcapping") or 0.0,
        raw=c,
    )
    if arch == "mixtral":
        # Mixtral's intermediate_size is the expert width; there is no dense FFN.
        cfg.expert_intermediate_size = cfg.expert_intermediate_size or cfg.intermediate_size
        cfg.intermediate_size = 0
    return cfg


def load(path):
    with open(path) as f:
        return from_dict(json.load(f))
