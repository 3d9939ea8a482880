"""Train one architecture on the byte-level TinyStories split (issue 10).

    nice -n 10 /usr/bin/python3 golden/train/train.py --arch arch2_4_combined

CPU, fixed seeds, CFLOW_TRAIN_THREADS threads (default 1), deterministic ops only. Writes
golden/trained/<name>/{config.json,model.safetensors} (HF layout the converter
reads, weights stored bf16) and golden/train/logs/<name>.json (loss curve,
wall time, the exact settings); <name> is --name, default the architecture.
Every architecture gets the same geometry, the same batches (same data seed)
and, at the defaults, the same number of steps. The demo model is the one
longer run, under its own name:

    train.py --arch arch2_4_combined --name arch2_4_combined_demo --steps 2000 --batch 8 --warmup 40
"""
import argparse
import json
import math
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(HERE), HERE]

import torch  # noqa: E402

import data  # noqa: E402
import model as M  # noqa: E402
from cflow_ref import safetensors_io  # noqa: E402

DEFAULTS = dict(steps=160, seq=256, batch=4, lr=3e-3, min_lr_frac=0.1, warmup=16,
                weight_decay=0.1, aux_coef=0.01, clip=1.0, seed=1234, data_seed=4321)


def lr_at(step, a):
    if step < a["warmup"]:
        return a["lr"] * (step + 1) / a["warmup"]
    p = (step - a["warmup"]) / max(1, a["steps"] - a["warmup"])
    return a["lr"] * (a["min_lr_frac"] + (1 - a["min_lr_frac"]) * 0.5 * (1 + math.cos(math.pi * p)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--arch", required=True, choices=sorted(M.ARCH))
    for k, v in DEFAULTS.items():
        ap.add_argument("--" + k.replace("_", "-"), type=type(v), default=v)
    ap.add_argument("--out", default=os.path.join(HERE, "..", "trained"))
    ap.add_argument("--name", default=None, help="checkpoint directory and log name (default: the architecture)")
    ap.add_argument("--log-every", type=int, default=10)
    ap.add_argument("--max-seconds", type=float, default=0, help="benchmark only: stop early")
    args = ap.parse_args()
    a = {k: getattr(args, k) for k in DEFAULTS}

    torch.manual_seed(a["seed"])
    torch.set_num_threads(int(os.environ.get("CFLOW_TRAIN_THREADS", "1")))
    torch.use_deterministic_algorithms(True)
    cfg = M.make_config(args.arch, max_pos=a["seq"])
    model = M.Model(cfg)
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": a["weight_decay"]},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=a["lr"], betas=(0.9, 0.95), eps=1e-8)
    nparams = sum(p.numel() for p in model.parameters())
    print("%s: %d parameters, %d steps × %d × %d tokens" % (args.arch, nparams, a["steps"], a["batch"], a["seq"]),
          flush=True)
    train_b, _ = data.split()
    it = data.batches(train_b, a["seq"], a["batch"], a["data_seed"])
    log, t0 = [], time.time()
    for step in range(a["steps"]):
        for g in opt.param_groups:
            g["lr"] = lr_at(step, a)
        x, y = next(it)
        logits = model(x)
        ce = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        loss = ce + a["aux_coef"] * model.aux_loss()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), a["clip"])
        opt.step()
        if step % args.log_every == 0 or step == a["steps"] - 1:
            el = time.time() - t0
            log.append({"step": step, "loss": round(ce.item(), 5), "seconds": round(el, 1)})
            print("step %4d  loss %.4f  lr %.2e  %.1fs" % (step, ce.item(), lr_at(step, a), el), flush=True)
        if args.max_seconds and time.time() - t0 > args.max_seconds:
            print("stopping (benchmark)")
            return
    wall = time.time() - t0
    name = args.name or args.arch
    out = os.path.join(args.out, name)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)
        f.write("\n")
    safetensors_io.save(os.path.join(out, "model.safetensors"), M.tensors(model), dtype="BF16",
                        metadata={"format": "pt", "trained_by": "golden/train/train.py"})
    os.makedirs(os.path.join(HERE, "logs"), exist_ok=True)
    with open(os.path.join(HERE, "logs", name + ".json"), "w") as f:
        json.dump({"architecture": args.arch, "parameters": nparams, "settings": a,
                   "tokens_seen": a["steps"] * a["batch"] * a["seq"], "wall_seconds": round(wall, 1),
                   "final_train_loss": log[-1]["loss"], "log": log}, f, indent=1)
        f.write("\n")
    print("wrote %s (%.0fs)" % (out, wall), flush=True)


if __name__ == "__main__":
    main()
