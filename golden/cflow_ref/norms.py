"""RMSNorm (ARCHITECTURES.md "Common blocks")."""
import torch


def rms_norm(x, weight, eps):
    """x / sqrt(mean(x²) + eps) ⊙ weight over the last dimension, in f32.

    weight None is the weightless V-norm.
    """
    y = x / torch.sqrt(torch.mean(x * x, dim=-1, keepdim=True) + eps)
    return y if weight is None else y * weight


def l2(x):
    """‖x‖₂ of an f32 vector, accumulated in f64 and returned as a Python float."""
    return float(torch.linalg.vector_norm(x.double()))
