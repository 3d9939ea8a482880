"""config.json → ModelConfig: one normalized view of HF Llama/Mixtral and
pipeline-native configs (keys: ARCHITECTURES.md and docs/DESIGN.md)."""
import json
from dataclasses import dataclass, field
from typing import List, Optional

ARCHITECTURES = (
    "llama", "mixtral", "arch1_decoupled_streams", "arch2_4_combined", "arch2_4_sync",
    "arch3_pipeline_registers", "arch4_async_experts", "arch5_fixed_point", "gemma4",
)

# The combine style each architecture fixes (DESIGN.md "Combine styles").
COMBINE_STYLE = {
    "llama": "PreNorm", "mixtral": "PreNorm", "arch5_fixed_point": "PreNorm",
    "arch1_decoupled_streams": "DecoupledStreams", "arch3_pipeline_registers": "PipelineRegisters",
    "arch2_4_combined": "DelayedSum", "arch2_4_sync": "DelayedSum",
    "arch4_async_experts": "AsyncExperts", "gemma4": "ParallelSqrt2",
}

HF_CLASSES = {"LlamaForCausalLM": "llama", "MixtralForCausalLM": "mixtral"}


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
    raw: dict = field(default_factory=dict, repr=False)

    @property
    def num_passes(self):
        """Residual norms per step: layers, or layers × block_iterations (arch5)."""
        return self.num_hidden_layers * self.block_iterations

    def is_full(self, layer):
        """Whether layer uses full attention (gemma4 layer_types; all layers otherwise)."""
        return self.layer_types is None or self.layer_types[layer] == "full_attention"

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
    if arch is None and c.get("model_type") in ("llama", "mixtral"):
        arch = c["model_type"]
    if arch not in ARCHITECTURES:
        raise ValueError("unknown architecture %r" % arch)
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
