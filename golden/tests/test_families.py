"""Unit checks of the HF family reference: strict config reading, unused
tensors, sharded checkpoints, routing, and the fixtures' real names."""
import json
import os
import tempfile
import unittest

import numpy as np
import torch

from common import fixture
from cflow_ref import architectures, config, family_fixtures, model_io, rope
from cflow_ref import weights as W
from cflow_ref.families import round_to_dtype
from cflow_ref.ffn import FFN
from cflow_ref.moe import MoE


def cfg_of(name, **over):
    c = dict(family_fixtures.SPECS[name][0])
    c.update(over)
    return c


class Families(unittest.TestCase):
    def test_refusals_name_the_key(self):
        cases = [
            (cfg_of("llama3", rope_scaling={"rope_type": "yarn", "factor": 4.0}), "rope_scaling.rope_type"),
            (cfg_of("qwen2", use_sliding_window=True), "use_sliding_window"),
            (cfg_of("gemma3", attn_logit_softcapping=50.0), "attn_logit_softcapping"),
            (cfg_of("llama3", hidden_act="relu2"), "hidden_act"),
            (cfg_of("gemma3", hidden_activation="gelu_new"), "hidden_activation"),
            (cfg_of("qwen3", attention_bias=True), "attention_bias"),
            (cfg_of("llama3", pretraining_tp=2), "pretraining_tp"),
        ]
        for c, key in cases:
            with self.subTest(key=key):
                with self.assertRaises(ValueError) as cm:
                    config.from_dict(c)
                self.assertIn(key, str(cm.exception))

    def test_rope_parameters_v5_form(self):
        # transformers v5 writes rope_parameters instead of rope_theta/rope_scaling/
        # rope_local_base_freq: the same model either way.
        old = config.from_dict(cfg_of("llama3"))
        c = cfg_of("llama3", rope_parameters=dict(cfg_of("llama3")["rope_scaling"], rope_theta=10000.0))
        del c["rope_scaling"], c["rope_theta"]
        new = config.from_dict(c)
        self.assertEqual((new.rope_theta, new.rope_scaling), (old.rope_theta, old.rope_scaling))
        old = config.from_dict(cfg_of("gemma3"))
        c = cfg_of("gemma3", rope_parameters={
            "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
            "full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1000000.0}})
        for k in ("rope_scaling", "rope_theta", "rope_local_base_freq"):
            del c[k]
        new = config.from_dict(c)
        self.assertEqual((new.rope_theta, new.rope_local_base_freq, new.rope_scaling),
                         (old.rope_theta, old.rope_local_base_freq, old.rope_scaling))
        c["rope_parameters"]["sliding_attention"] = {"rope_type": "linear", "factor": 2.0,
                                                     "rope_theta": 10000.0}
        with self.assertRaises(ValueError) as cm:
            config.from_dict(c)
        self.assertIn("rope_parameters.sliding_attention", str(cm.exception))

    def test_architectures_names(self):
        want = {"llama3": "llama", "mistral": "mistral", "qwen2": "qwen2", "qwen3": "qwen3",
                "qwen3_moe": "qwen3_moe", "gemma3": "gemma3_text"}
        for name, arch in want.items():
            self.assertEqual(config.from_dict(cfg_of(name)).architecture, arch)

    def test_unused_tensor_is_an_error(self):
        c, t, _, _ = family_fixtures.build("qwen3")
        t["model.layers.0.self_attn.v_proj.bias"] = np.zeros(48, dtype=np.float32)
        with self.assertRaises(ValueError) as cm:
            architectures.build(config.from_dict(c), W.to_torch(t))
        self.assertIn("v_proj.bias", str(cm.exception))

    def test_sharded_fixture(self):
        path = fixture("mistral")
        files = sorted(os.listdir(path))
        self.assertEqual(files, ["config.json", "model-00001-of-00002.safetensors",
                                 "model-00002-of-00002.safetensors", W.INDEX])
        with open(os.path.join(path, W.INDEX)) as f:
            idx = json.load(f)
        self.assertEqual(len(set(idx["weight_map"].values())), 2)
        _, t, dt = W.read_checkpoint(path)
        self.assertEqual(set(t), set(idx["weight_map"]))
        self.assertEqual(idx["metadata"]["total_size"], sum(a.size * 2 for a in t.values()))
        # An index that names a tensor no shard has is an error.
        with tempfile.TemporaryDirectory() as d:
            for fn in files:
                with open(os.path.join(path, fn), "rb") as a, open(os.path.join(d, fn), "wb") as b:
                    b.write(a.read())
            idx["weight_map"]["model.layers.9.mlp.up_proj.weight"] = files[1]
            with open(os.path.join(d, W.INDEX), "w") as f:
                json.dump(idx, f)
            with self.assertRaises(ValueError):
                W.read_checkpoint(d)

    def test_real_tensor_names(self):
        _, t, _ = W.read_checkpoint(fixture("qwen3_moe_mixed"))
        for n in ("model.layers.0.self_attn.q_norm.weight", "model.layers.2.mlp.gate.weight",
                  "model.layers.0.mlp.experts.7.down_proj.weight", "model.layers.1.mlp.up_proj.weight",
                  "lm_head.weight"):
            self.assertIn(n, t)
        self.assertNotIn("model.layers.1.mlp.gate.weight", t)
        self.assertNotIn("model.layers.1.mlp.experts.0.up_proj.weight", t)
        # decoder_sparse_step: layer l sparse when (l + 1) % step == 0 and l ∉ mlp_only_layers
        c = config.from_dict(cfg_of("qwen3_moe_mixed", decoder_sparse_step=2, mlp_only_layers=[3],
                                    num_hidden_layers=6))
        self.assertEqual(c.moe_layers, [1, 5])
        self.assertFalse(W.is_quantized("model.layers.0.mlp.gate.weight", (8, 72)))
        self.assertTrue(W.is_quantized("model.layers.1.mlp.gate_proj.weight", (100, 72)))
        _, t, dt = W.read_checkpoint(fixture("gemma3"))
        self.assertNotIn("lm_head.weight", t)
        self.assertIn("model.layers.4.post_feedforward_layernorm.weight", t)
        self.assertEqual(set(dt.values()), {"BF16"})
        _, t, _ = W.read_checkpoint(fixture("qwen2"))
        self.assertIn("model.layers.0.self_attn.k_proj.bias", t)
        self.assertNotIn("model.layers.0.self_attn.o_proj.bias", t)

    def test_llama3_bands(self):
        sc = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
              "original_max_position_embeddings": 64.0}
        base = rope.inv_freq(16, 10000.0, 8)
        got = rope.scaled_inv_freq(16, 10000.0, sc)
        self.assertEqual(float(got[0]), float(base[0]))                      # wavelength 6.3 < 16
        for i in (1, 2):                                                       # smoothed band
            self.assertTrue(float(base[i]) / 8 < float(got[i]) < float(base[i]))
        for i in range(3, 8):                                                  # wavelength > 64
            self.assertEqual(float(got[i]), float(np.float32(float(base[i]) / 8)))

    def test_embed_scale_rounding(self):
        s = np.float32(np.sqrt(72))
        self.assertEqual(float(round_to_dtype(s, "BF16")), 8.5)
        self.assertEqual(float(round_to_dtype(s, "F16")), 8.484375)
        self.assertEqual(float(round_to_dtype(np.float32(np.sqrt(1152)), "BF16")), 34.0)

    def test_qwen3_moe_routing_both_ways(self):
        d = 3
        router = torch.tensor([[2.0, 0, 0], [1.0, 0, 0], [0.5, 0, 0], [0.0, 0, 0]])
        experts = [FFN(torch.eye(d), torch.eye(d), torch.eye(d)) for _ in range(4)]
        h = torch.tensor([[1.0, 0, 0]])
        p = torch.softmax(torch.tensor([2.0, 1.0, 0.5, 0.0]), 0)
        idx, w = MoE(router, experts, 2, softmax_all=True, norm_topk=False).route(h)
        self.assertEqual(idx[0].tolist(), [0, 1])
        torch.testing.assert_close(w[0], p[:2])
        _, w = MoE(router, experts, 2, softmax_all=True, norm_topk=True).route(h)
        torch.testing.assert_close(w[0], p[:2] / p[:2].sum())

    def test_gemma3_layer_kinds(self):
        m = model_io.load(fixture("gemma3"), "f32")
        self.assertEqual([l.attn.window for l in m.layers], [4, 4, 0, 4, 4])
        self.assertAlmostEqual(m.layers[0].attn.scale, 20 ** -0.5)
        # full layer: θ 1e6 with linear 8; sliding: θ 1e4 unscaled
        torch.testing.assert_close(m.layers[2].attn.freqs,
                                   rope.scaled_inv_freq(24, 1e6, {"rope_type": "linear", "factor": 8.0}))
        torch.testing.assert_close(m.layers[0].attn.freqs, rope.inv_freq(24, 1e4, 12))
        m = model_io.load(fixture("gemma3_layer_types"), "f32")
        self.assertEqual([l.attn.window for l in m.layers], [0, 3, 0])

    def test_qwen2_ignores_sliding_window(self):
        m = model_io.load(fixture("qwen2"), "f32")
        self.assertEqual([l.attn.window for l in m.layers], [0, 0])
        self.assertIsNone(m.layers[0].attn.bo)
        self.assertIsNotNone(m.layers[0].attn.bq)

    def test_gemma4_refusals(self):
        base = family_fixtures.SPECS["gemma4_text"][0]
        no_ple = {k: v for k, v in base.items() if k != "hidden_size_per_layer_input"}
        cases = [(no_ple, "hidden_size_per_layer_input"),
                 (dict(base, num_kv_shared_layers=2), "num_kv_shared_layers"),
                 (dict(base, use_double_wide_mlp=True), "use_double_wide_mlp"),
                 (dict(base, use_bidirectional_attention="all"), "use_bidirectional_attention"),
                 (dict(base, rope_parameters=dict(base["rope_parameters"], full_attention={
                     "rope_type": "yarn", "rope_theta": 1e6, "factor": 2.0})), "rope_parameters")]
        for c, key in cases:
            with self.subTest(key=key):
                with self.assertRaises(ValueError) as cm:
                    config.from_dict(c)
                self.assertIn(key, str(cm.exception))

    def test_gemma4_shapes(self):
        m = model_io.load(fixture("gemma4_text"), "f32")
        self.assertEqual(m.cfg.architecture, "gemma4_text")
        self.assertEqual([l.attn.window for l in m.layers], [4, 4, 0])
        full = m.layers[2].attn
        self.assertIsNone(full.wv)
        self.assertEqual((full.hd, full.Hkv, len(full.freqs)), (32, 1, 4))   # 0.25·32/2 pairs rotate
        self.assertEqual((m.layers[0].attn.hd, m.layers[0].attn.Hkv), (16, 2))
        self.assertEqual(len(m.layers[0].moe.experts), 128)
        self.assertEqual(m.layers[0].moe.k, 8)
        # multimodal: text_config, model.language_model. names, vision tower skipped,
        # no layer_types → pattern 6 with the last layer forced to full attention
        _, t, _ = W.read_checkpoint(fixture("gemma4_mm"))
        self.assertTrue(any(k.startswith("model.vision_tower.") for k in t))
        self.assertIn("model.language_model.layers.2.experts.gate_up_proj", t)
        m = model_io.load(fixture("gemma4_mm"), "f32")
        self.assertEqual(m.cfg.layer_types, ["sliding_attention", "sliding_attention", "full_attention"])

    def test_gemma4_fused_experts_quantized_per_expert(self):
        from cflow_ref import quant_replay
        _, t, _ = W.read_checkpoint(fixture("gemma4_text"))
        gu = t["model.layers.0.experts.gate_up_proj"]
        self.assertTrue(W.is_quantized("model.layers.0.experts.gate_up_proj", gu.shape))
        self.assertFalse(W.is_quantized("model.layers.0.router.proj.weight", (128, 40)))
        self.assertFalse(W.is_quantized("model.layers.0.router.per_expert_scale", (128,)))
        got = quant_replay.replay(gu, "q4")
        np.testing.assert_array_equal(got[5, :4], quant_replay.replay(gu[5, :4], "q4"))   # gate rows
        np.testing.assert_array_equal(got[5, 4:], quant_replay.replay(gu[5, 4:], "q4"))   # up rows


if __name__ == "__main__":
    unittest.main()
