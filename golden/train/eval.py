"""Test loss, perplexity and bits per byte of the trained models, by the exact
protocol of `cflowc ppl` (issue 10), computed with the golden reference
(golden/cflow_ref: model_io.load + Model.forward_logits, the spec-literal
whole-sequence forward, with f32 / q8_replay / q4_replay weights).

Protocol: tokenize the text once without BOS (byte tokenizer: ids = bytes);
split the ids into consecutive chunks of ctx − 1 (the last may be shorter);
evaluate each chunk as [BOS] + chunk, predicting every chunk token from its
prefix; NLL summed in float64 over all chunk tokens.
    loss = mean NLL (nats/token), ppl = exp(loss),
    bits_per_byte = total NLL / ln 2 / number of text bytes.
ctx defaults to the model's max_position_embeddings, capped at 512.

    /usr/bin/python3 golden/train/eval.py                 # every trained model
    /usr/bin/python3 golden/train/eval.py --arch llama    # one (merges into results.json)

--arch takes checkpoint names (directories of golden/trained, e.g.
arch2_4_combined_demo); results.json's models.<name> holds each.

Writes golden/train/text/{test.txt,head.txt} (the 10% split and its first
1024 bytes, the Go test's short text) and golden/train/results.json.
"""
import argparse
import hashlib
import json
import math
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(HERE), HERE]

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import data  # noqa: E402
from cflow_ref import model_io  # noqa: E402

TRAINED = data.TRAINED
RESULTS = os.path.join(HERE, "results.json")
TEXT_DIR = os.path.join(HERE, "text")
HEAD_BYTES = 1024
MAX_CTX = 512


def rel(p):
    return os.path.relpath(p, data.ROOT)


def write_texts():
    _, test = data.split()
    os.makedirs(TEXT_DIR, exist_ok=True)
    texts = {"test": test, "head": test[:HEAD_BYTES]}
    out = {}
    for name, b in texts.items():
        p = os.path.join(TEXT_DIR, name + ".txt")
        with open(p, "wb") as f:
            f.write(b)
        out[name] = {"path": rel(p), "bytes": len(b), "sha256": hashlib.sha256(b).hexdigest()}
    return texts, out


def default_ctx(cfg):
    return min(cfg.max_position_embeddings, MAX_CTX)


def chunks(ids, ctx):
    n = ctx - 1
    return [ids[i:i + n] for i in range(0, len(ids), n)]


def evaluate(model, text, ctx, bos=data.BOS):
    """{loss, ppl, bits_per_byte, tokens, ctx} of text under model (the protocol above)."""
    ids = data.encode(text)
    total, count = 0.0, 0
    with torch.no_grad():
        for ch in chunks(ids, ctx):
            logits = model.forward_logits([bos] + ch)[:len(ch)]
            nll = F.cross_entropy(logits.double(), torch.tensor(ch), reduction="sum")
            total += float(nll)
            count += len(ch)
    loss = total / count
    return {"loss": loss, "ppl": math.exp(loss), "bits_per_byte": total / math.log(2) / len(text),
            "tokens": count, "ctx": ctx}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--arch", nargs="*", default=None)
    ap.add_argument("--weights", nargs="*", default=list(model_io.WEIGHTS))
    ap.add_argument("--texts", nargs="*", default=["head", "test"])
    a = ap.parse_args()
    torch.set_num_threads(int(os.environ.get("CFLOW_TRAIN_THREADS", "1")))
    texts, text_info = write_texts()
    res = {}
    if os.path.exists(RESULTS):
        with open(RESULTS) as f:
            res = json.load(f)
    res["protocol"] = ("byte tokens of the text without BOS; consecutive chunks of ctx-1 ids; each chunk "
                       "evaluated as [BOS]+chunk predicting every chunk token from its prefix; loss = mean "
                       "NLL (nats/token) over all chunk tokens, ppl = exp(loss), bits_per_byte = total NLL / "
                       "ln 2 / text bytes; ctx = min(max_position_embeddings, 512); computed by "
                       "golden/train/eval.py with golden/cflow_ref forward_logits")
    res["split"] = ("tinystories_sample.txt cut at the first blank line at or after 90% of its bytes: "
                    "train = before the cut (blank line included), test = the rest")
    res["texts"] = text_info
    models = res.setdefault("models", {})
    for arch in a.arch or data.trained_models():
        path = os.path.join(TRAINED, arch)
        entry = models.setdefault(arch, {})
        logp = os.path.join(HERE, "logs", arch + ".json")
        if os.path.exists(logp):
            with open(logp) as f:
                lg = json.load(f)
            entry["train"] = {k: lg[k] for k in ("architecture", "parameters", "tokens_seen", "wall_seconds", "final_train_loss",
                                                 "settings")}
        with open(os.path.join(path, "model.safetensors"), "rb") as f:
            entry["checkpoint_sha256"] = hashlib.sha256(f.read()).hexdigest()
        for w in a.weights:
            m = model_io.load(path, w)
            torch.set_num_threads(int(os.environ.get("CFLOW_TRAIN_THREADS", "1")))
            for tname in a.texts:
                t0 = time.time()
                r = evaluate(m, texts[tname], default_ctx(m.cfg))
                entry.setdefault(tname, {})[w] = r
                print("%-26s %-10s %-5s loss %.5f ppl %.4f bpb %.5f (%d tokens, %.0fs)" % (
                    arch, w, tname, r["loss"], r["ppl"], r["bits_per_byte"], r["tokens"], time.time() - t0),
                    flush=True)
                if w == "f32" and tname == "head":
                    # A short context pins the chunking (the Go test checks it).
                    entry[tname]["f32_ctx64"] = evaluate(m, texts[tname], 64)
    res["models"] = {k: models[k] for k in sorted(models)}
    with open(RESULTS, "w") as f:
        json.dump(res, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
