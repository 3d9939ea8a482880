"""Teacher-forced greedy traces in the schema of docs/TRACE.md."""
import json

import numpy as np
import torch

SCHEMA = "cflow-trace/1"
TOP = 32


def top_k(logits, k=TOP):
    """The k largest logits, descending; ties: lower id first."""
    z = logits.detach().numpy().astype(np.float32)
    order = np.lexsort((np.arange(len(z)), -z.astype(np.float64)))[:k]
    return [int(i) for i in order], [float(z[i]) for i in order]


def run(model, prompt, n_generate):
    """Decode prompt then n_generate greedy tokens, token by token.

    Returns (generated, steps): step i fed prompt[i] (i < len(prompt)) or
    generated[i - len(prompt)]; generated[j] is the argmax of step
    len(prompt) - 1 + j. The last generated token is fed too, so there are
    len(prompt) + n_generate steps.
    """
    state = model.new_state()
    generated, steps = [], []
    tokens = list(prompt)
    i = 0
    while i < len(prompt) + n_generate:
        tok = tokens[i]
        out = model.step(state, tok)
        ids, vals = top_k(out.logits[0])
        steps.append({
            "position": i, "input_token": tok,
            "residual_norms": out.residual_norms[0],
            "pre_lm_head_norm": out.pre_lm_head_norm[0],
            "top_ids": ids, "top_logits": vals, "argmax": ids[0],
        })
        if i >= len(prompt) - 1 and len(generated) < n_generate:
            generated.append(ids[0])
            tokens.append(ids[0])
        i += 1
    return generated, steps


def dumps(model_name, architecture, weights, prompt, generated, steps):
    """The trace as JSON text: one step per line, floats in full (repr) precision."""
    head = {"schema": SCHEMA, "model": model_name, "architecture": architecture,
            "weights": weights, "prompt": prompt, "generated": generated}
    lines = ["{"]
    for k, v in head.items():
        lines.append(" %s: %s," % (json.dumps(k), json.dumps(v, separators=(",", ":"))))
    lines.append(' "steps": [')
    body = [" " + json.dumps(s, separators=(",", ":")) for s in steps]
    lines.append(",\n".join(body))
    lines.append(" ]")
    lines.append("}")
    return "\n".join(lines) + "\n"
