"""Unit checks of the building blocks against the spec's wording."""
import io
import os
import tempfile
import unittest

import numpy as np
import torch

from common import fixture
from cflow_ref import model_io, rope, safetensors_io
from cflow_ref.attention import Attention, KVCache
from cflow_ref.ffn import FFN
from cflow_ref.moe import MoE
from cflow_ref.scheduler import ExpertQueue


class Blocks(unittest.TestCase):
    def test_safetensors_roundtrip(self):
        a = np.array([[1.0, -2.5, 3.14159, 1e-3]], dtype=np.float32)
        with tempfile.TemporaryDirectory() as d:
            for dt in safetensors_io.DTYPES:
                p = os.path.join(d, dt)
                safetensors_io.save(p, {"x": a}, dt)
                back, dts = safetensors_io.load(p)
                self.assertEqual(dts["x"], dt)
                tol = {"F32": 0, "F16": 1e-3, "BF16": 1e-2}[dt]
                np.testing.assert_allclose(back["x"], a, rtol=tol)
                with open(p, "rb") as f:
                    n = int.from_bytes(f.read(8), "little")
                self.assertEqual(n % 8, 0)

    def test_bf16_round_to_nearest_even(self):
        # 1 + 2^-8 is halfway between bf16 1 and 1 + 2^-7: ties to even (1).
        x = np.array([1 + 2 ** -8, 1 + 3 * 2 ** -8], dtype=np.float32)
        got = safetensors_io.bf16_bits_to_f32(safetensors_io.f32_to_bf16_bits(x))
        self.assertEqual(got.tolist(), [1.0, 1 + 2 ** -6])

    def test_moe_ties_lower_index_and_softmax_over_selected(self):
        d = 4
        router = torch.zeros(4, d)
        router[1, 0] = router[2, 0] = router[3, 0] = 1.0      # experts 1, 2, 3 tie
        experts = [FFN(torch.eye(d), torch.eye(d), torch.eye(d) * (e + 1)) for e in range(4)]
        moe = MoE(router, experts, 2)
        idx, w = moe.route(torch.tensor([[1.0, 0, 0, 0]]))
        self.assertEqual(idx[0].tolist(), [1, 2])
        self.assertEqual(w[0].tolist(), [0.5, 0.5])
        h = torch.tensor([[1.0, 0.5, -0.5, 2.0]])
        torch.testing.assert_close(moe(h), moe.all_experts(h))

    def test_partial_rope_leaves_tail_pairs(self):
        x = torch.randn(1, 2, 24)
        f = rope.inv_freq(24, 1e6, 3)
        c, s = rope.cos_sin(torch.tensor([5]), f)
        y = rope.apply(x, c, s)
        torch.testing.assert_close(y[..., 3:12], x[..., 3:12])
        torch.testing.assert_close(y[..., 15:], x[..., 15:])
        self.assertFalse(torch.allclose(y[..., :3], x[..., :3]))

    def test_sliding_window(self):
        torch.manual_seed(0)
        d, hd = 8, 4
        mk = lambda r, c: torch.randn(r, c)
        att = Attention(mk(8, d), mk(4, d), mk(4, d), mk(d, 8), 2, 1, hd, 10000.0, 2, window=3)
        xs = torch.randn(6, d)
        full = att.sequence(xs)
        # Position 5 sees positions 3, 4, 5 only: changing positions 0..2 changes nothing there.
        xs2 = xs.clone()
        xs2[:3] += 1.0
        torch.testing.assert_close(att.sequence(xs2)[5], full[5])
        cache = KVCache()
        for t in range(6):
            y = att.step(xs[t:t + 1], cache, t)
        torch.testing.assert_close(y[0], full[5], rtol=1e-5, atol=1e-6)

    def test_expert_queue_order(self):
        q = ExpertQueue()
        q.push(5, 4, "b")
        q.push(5, 3, "a")
        q.push(6, 5, "c")
        self.assertEqual(q.pop(5), ["a", "b"])
        self.assertEqual(q.pop_from(6), ["c"])
        self.assertTrue(q.empty())

    def test_gemma4_full_layer_shares_k_and_v(self):
        m = model_io.load(fixture("gemma4"), "f32")
        kinds = [m.cfg.is_full(l) for l in range(m.cfg.num_hidden_layers)]
        self.assertEqual(kinds, [False] * 5 + [True])
        self.assertIsNone(m.layers[5].attn.wv)
        self.assertEqual(m.layers[5].attn.hd, 24)
        self.assertEqual(len(m.layers[5].attn.freqs), 3)
        self.assertEqual(m.layers[0].attn.window, 4)

    def test_sequence_forward_is_differentiable(self):
        # Training (issue 10) reuses these classes with tensors that require grad.
        from cflow_ref import architectures, fixtures, config
        from cflow_ref import weights as W
        for name in ("arch2_4_combined", "arch4_async_experts", "gemma4"):
            cfg_d, t, _ = fixtures.build(name)
            params = {k: v.requires_grad_() for k, v in W.to_torch(t).items()}
            m = architectures.build(config.from_dict(cfg_d), params)
            tokens = [1, 5, 7, 9]
            logits = m.forward_logits(tokens)
            loss = torch.nn.functional.cross_entropy(logits[:-1], torch.tensor(tokens[1:]))
            loss.backward()
            self.assertIsNotNone(params["model.layers.0.self_attn.q_proj.weight"].grad)
            self.assertTrue(any(p.grad is not None for k, p in params.items() if ".experts." in k))


if __name__ == "__main__":
    unittest.main()
