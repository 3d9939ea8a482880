"""Dense gated FFN: down(act(gate·h) ⊙ up·h), act = silu or gelu_tanh."""
import torch
import torch.nn.functional as F


def activation(name):
    if name in ("silu", "swish"):
        return F.silu
    if name in ("gelu_pytorch_tanh", "gelu_tanh", "gelu"):
        return lambda x: F.gelu(x, approximate="tanh")
    raise ValueError("unsupported hidden_act %r" % name)


class FFN:
    def __init__(self, gate, up, down, act="silu", biases=None):
        """biases = (gate, up, down) bias vectors (llama mlp_bias) or None."""
        self.gate, self.up, self.down = gate, up, down
        self.bg, self.bu, self.bd = biases or (None, None, None)
        self.act = activation(act)

    def __call__(self, h):
        """h [T, d] → [T, d]."""
        return F.linear(self.act(F.linear(h, self.gate, self.bg)) * F.linear(h, self.up, self.bu),
                        self.down, self.bd)
