"""The Go side of the results and docs/RESULTS.md + docs/results-plane.png.

    /usr/bin/python3 golden/train/report.py            # after train.py and eval.py

For every architecture with a trained checkpoint in golden/trained/: builds
cflowc, converts the checkpoint to F32, Q8_0 and Q4_0 .cflow files (in
$CFLOW_REPORT_DIR, default /tmp/cflow-report), runs
    cflowc analyze <arch>_q4_0.cflow --json         (B_naive, B_critical)
    cflowc ppl <arch>_<q>.cflow --text golden/train/text/test.txt --json
and writes golden/train/go_results.json, then renders docs/RESULTS.md from it
and golden/train/results.json (the PyTorch reference numbers), and the
bandwidth–quality plot. --render-only skips the Go runs.
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(HERE), HERE]

import data  # noqa: E402
import model as M  # noqa: E402

ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
GO_RESULTS = os.path.join(HERE, "go_results.json")
RESULTS = os.path.join(HERE, "results.json")
DOC = os.path.join(ROOT, "docs", "RESULTS.md")
PNG = os.path.join(ROOT, "docs", "results-plane.png")
QUANTS = ("f32", "q8_0", "q4_0")
ORDER = ["llama", "arch1_decoupled_streams", "arch2_4_combined", "arch2_4_sync",
         "arch3_pipeline_registers", "arch4_async_experts", "arch5_fixed_point"]
MiB = 1 << 20


def sh(args, **kw):
    print("+ " + " ".join(args), flush=True)
    return subprocess.run(args, check=True, cwd=ROOT, stdout=subprocess.PIPE, **kw).stdout


def quants_for(name, quants):
    """Every quant for the demo model; Q4_0 (the deployable file) for the rest,
    to keep the Go runs short on a shared machine."""
    if quants:
        return quants
    return QUANTS if name == DEMO[0] else ("q4_0",)


def go_side(archs, work, quants):
    os.makedirs(work, exist_ok=True)
    cflowc = os.path.join(work, "cflowc")
    sh(["go", "build", "-o", cflowc, "./cmd/cflowc"])
    res = {}
    if os.path.exists(GO_RESULTS):
        with open(GO_RESULTS) as f:
            res = json.load(f)
    for arch in archs:
        ent = res.setdefault(arch, {})
        for q in quants_for(arch, quants):
            out = os.path.join(work, "%s_%s.cflow" % (arch, q))
            sh([cflowc, "convert", "golden/trained/" + arch, "--output", out, "--quant", q])
            if q == "q4_0":
                a = json.loads(sh([cflowc, "analyze", out, "--json"]))
                ent["analyze_q4_0"] = {k: a[k] for k in ("b_naive_bytes", "b_critical_bytes", "reduction",
                                                         "unique_bytes", "dense_delay", "expert_delay")}
            r = json.loads(sh([cflowc, "ppl", out, "--text", "golden/train/text/test.txt", "--json"]))
            ent.setdefault("ppl_test", {})[q] = r
            print("  %s %s: ppl %.4f bpb %.4f" % (arch, q, r["ppl"], r["bits_per_byte"]), flush=True)
        with open(GO_RESULTS, "w") as f:
            json.dump({k: res[k] for k in sorted(res)}, f, indent=1, sort_keys=True)
            f.write("\n")
    return res


# The committed checkpoints: the demo model (arch2_4_combined, trained longer
# than the equal-budget table's runs) and the equal-budget llama.
DEMO = ("arch2_4_combined_demo", "llama")
VERIFY = (("f32", "f32"), ("q8_0", "q8_replay"), ("q4_0", "q4_replay"), ("q8_0", "f32"), ("q4_0", "f32"))


def verify_and_sample(work):
    """cflowc verify of the committed models' files against their pinned
    traces, and one seeded sample from the demo model."""
    cflowc = os.path.join(work, "cflowc")
    sh(["go", "build", "-o", cflowc, "./cmd/cflowc"])
    out = {}
    for arch in DEMO:
        rows = []
        for q, w in VERIFY:
            for ext in (".cflow", ".vflow"):
                f = os.path.join(work, "%s_%s%s" % (arch, q, ext))
                sh([cflowc, "convert", "golden/trained/" + arch, "--output", f, "--quant", q])
                tr = "golden/trained/traces/%s_%s.json" % (arch, w)
                p = subprocess.run([cflowc, "verify", f, "--trace", tr], cwd=ROOT, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, text=True)
                verdict = [l for l in p.stdout.splitlines() if l.startswith(("PASS", "FAIL"))]
                rows.append({"file": q + ext, "trace": w, "exit": p.returncode, "verdict": verdict[-1] if verdict else p.stdout[-300:]})
                print("  %s %s vs %s: %s" % (arch, q + ext, w, rows[-1]["verdict"][:100]), flush=True)
        out[arch] = rows
    f = os.path.join(work, "%s_q4_0.vflow" % DEMO[0])
    args = ["--prompt", "Once upon a time", "-n", "200", "--temperature", "0.8", "--seed", "1"]
    p = subprocess.run([cflowc, "run", f] + args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    out["sample"] = {"command": "cflowc run %s_q4_0.vflow %s" % (DEMO[0], " ".join(
        '"%s"' % x if " " in x else x for x in args)), "text": p.stdout.strip()}
    go = {}
    if os.path.exists(GO_RESULTS):
        with open(GO_RESULTS) as fh:
            go = json.load(fh)
    go["_verify"] = out
    with open(GO_RESULTS, "w") as fh:
        json.dump({k: go[k] for k in sorted(go)}, fh, indent=1, sort_keys=True)
        fh.write("\n")
    return go


def spec_rule(cfg):
    """ARCHITECTURES.md's critical-path rule at 0.5 B/param (MiB)."""
    d, H, Hkv, hd = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    dd, de = cfg.get("dense_delay", 0), cfg.get("expert_delay", 0)
    ba = (d * H * hd + 2 * d * Hkv * hd + H * hd * d) * 0.5
    bd = 3 * d * cfg["intermediate_size"] * 0.5
    be = cfg.get("num_experts_per_tok", 0) * 3 * d * cfg.get("expert_intermediate_size", 0) * 0.5
    passes = cfg["num_hidden_layers"] * cfg.get("block_iterations", 1)
    naive = passes * max(ba, bd, be)
    crit = passes * max(ba, bd / (dd + 1), be / (de + 1))
    return naive / MiB, crit / MiB


def plot(rows):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7.5, 5), dpi=120)
    for r in rows:
        x0, x1, y = r["naive"], r["crit"], r["bpb"]
        moe = r["moe"]
        c = "tab:red" if r["arch"] == "arch2_4_combined" else ("tab:blue" if moe else "tab:gray")
        if abs(x1 - x0) > 1e-9:
            ax.annotate("", xy=(x1, y), xytext=(x0, y), arrowprops=dict(arrowstyle="->", color=c, lw=1))
            ax.plot([x0], [y], "o", mfc="none", mec=c, ms=7)
        ax.plot([x1], [y], "o", color=c, ms=7)
        dy = -12 if r["arch"] == "arch2_4_sync" else 4
        ax.annotate(r["arch"], (x1, y), textcoords="offset points", xytext=(6, dy), fontsize=8)
    ax.set_xlabel("critical-path weight bytes per token, Q4_0 file (MiB; hollow = naive, filled = delayed)")
    ax.set_ylabel("test bits per byte (f32 reference; lower is better)")
    ax.set_title("Bandwidth–quality plane at toy scale (d 128, 6 passes, byte-level TinyStories)", fontsize=9)
    ax.set_xlim(0, max(r["naive"] for r in rows) * 1.45)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(PNG)
    print("wrote " + os.path.relpath(PNG, ROOT))


def fmt_mib(b):
    return "%.3f" % (b / MiB)


def row(name, p, go):
    """One model's numbers for the tables and the plot."""
    arch = p["train"].get("architecture", name)
    # train.py writes exactly make_config's dict; most checkpoints are not committed.
    cfg = M.make_config(arch, max_pos=p["train"]["settings"]["seq"])
    t = p["test"]["f32"]
    g = go.get(name, {})
    an = g.get("analyze_q4_0")
    rn, rc = spec_rule(cfg)
    return dict(arch=name, p=p, t=t, g=g, an=an, cfg=cfg, spec_naive=rn, spec_crit=rc,
                naive=an["b_naive_bytes"] / MiB if an else rn,
                crit=an["b_critical_bytes"] / MiB if an else rc,
                bpb=t["bits_per_byte"], moe=bool(cfg.get("num_experts")))


def render(go):
    with open(RESULTS) as f:
        py = json.load(f)
    rows = [row(a, py["models"][a], go) for a in ORDER if a in py["models"]]
    demo = row(DEMO[0], py["models"][DEMO[0]], go) if DEMO[0] in py["models"] else None
    if demo:
        demo["budget"] = demo["p"]["train"]["tokens_seen"] / rows[0]["p"]["train"]["tokens_seen"]
    plot(rows)
    tr = rows[0]["p"]["train"]
    s = tr["settings"]
    L = []
    w = L.append
    w("# Results: seven architectures trained at toy scale\n")
    w("Issue 10's quality table and bandwidth–quality plane, on our own models. **Scale, stated plainly:** "
      "d = 128, 6 layer passes, 0.6–4 M parameters, byte-level tokens, **%d optimizer steps of %d × %d "
      "tokens (%d tokens, %.0f%% of one pass over the 615 KB training text)**. Each model took %.0f–%.0f "
      "minutes of wall time (one thread, nice 10–15) on a 2-core machine shared with other builds and fuzzers. These models are far from converged. Differences of a few hundredths of a bit per "
      "byte between architectures are within what a different seed or a longer run could reorder. Nothing here "
      "supports a claim about the report's scale (its models train for 10,000 steps on full TinyStories). The "
      "numbers are reproducible with the commands given, and each is tied to one.\n"
      % (s["steps"], s["batch"], s["seq"], tr["tokens_seen"], 100.0 * tr["tokens_seen"] / 615433,
         min(r["p"]["train"]["wall_seconds"] for r in rows) / 60, max(r["p"]["train"]["wall_seconds"] for r in rows) / 60))
    w("## Setup\n")
    w("- **Data**: `data/tinystories_sample.txt` (683,757 bytes). It is split by bytes at the first "
      "blank line at or after 90%: train = 615,433 bytes, test = 68,324 bytes "
      "(`golden/train/text/test.txt`, written by `eval.py`).")
    w("- **Tokenizer**: bytes 0–255, BOS = 256, EOS = 257, vocabulary 258 (`\"tokenizer\": \"byte\"` in "
      "config.json; cflow's `byte` tokenizer kind). EOS never appears in the raw text, so the models do not learn "
      "to stop. Generation runs to `--max-tokens`.")
    w("- **Geometry (all)**: d 128, 4 heads of 32 (Hkv 4), dense SwiGLU FFN 512, RoPE θ 10⁴, untied LM head, "
      "`max_position_embeddings` 256. Six layer passes: 6 layers, or for arch5 2 blocks × 3 iterations. "
      "MoE archs (arch2_4_combined, arch2_4_sync, arch4) add 8 experts, top-2, of width 128 per layer beside the "
      "dense FFN. RMSNorm eps is 1e-5 for llama and 1e-6 for the pipeline-native models (the spec's defaults).")
    w("- **Training** (`golden/train/train.py`, same for all): AdamW (β 0.9/0.95, wd 0.1 on matrices), lr %g, "
      "%d warm-up steps, cosine decay to %g×, grad-clip %g, batch %d × %d, %d steps, seed %d, and the same batch "
      "sequence for every model (data seed %d). Windows are `[BOS] + bytes[o:o+%d]` predicting `bytes[o:o+%d]`, "
      "which is the ppl protocol's chunk. MoE models add a Switch-style load-balancing loss (coefficient %g). It is "
      "a training aid only and not part of the architecture. Init: N(0, 0.02), with residual-output projections "
      "scaled by 1/sqrt(2·passes). The training forward (`golden/train/model.py`, batched) equals the golden "
      "reference's `forward_logits` on every trained checkpoint within 1e-5 (`golden/train/test_parity.py`). "
      "Checkpoints are stored as bf16. Every number below is computed from the stored bf16 values."
      % (s["lr"], s["warmup"], s["min_lr_frac"], s["clip"], s["batch"], s["seq"], s["steps"], s["seed"],
         s["data_seed"], s["seq"] - 1, s["seq"], s["aux_coef"]))
    w("- **Evaluation** (`golden/train/eval.py`, the protocol of `cflowc ppl`): the test text's bytes, no BOS, "
      "in consecutive chunks of ctx − 1 = 255, each scored as `[BOS] + chunk`. loss = mean NLL (nats/byte), "
      "ppl = exp(loss), bits/byte = total NLL / ln 2 / bytes. For a byte tokenizer, bits/byte = loss / ln 2. "
      "The reference is golden/cflow_ref's spec-literal sequence forward.")
    w("- **Bandwidth**: `cflowc analyze <arch>_q4_0.cflow --json` on the converted Q4_0 file. It gives real "
      "tile bytes per token along the execution plan (tile headers, f16 scales and the f32 router included; norms, the embedding row and the LM head left out). B_critical = Σ max(attn, "
      "dense/(δd+1), top-k experts/(δe+1)). The spec's 0.5 B/param rule at the same geometry is shown next to "
      "it.\n")
    w("## Quality and bandwidth per architecture\n")
    w("| architecture | params | δd | δe | test loss (nats/byte) | test ppl | bits/byte | B_naive MiB | "
      "B_critical MiB | reduction | spec rule naive → crit MiB |")
    w("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in rows:
        an = r["an"]
        w("| %s | %.2f M | %d | %d | %.4f | %.3f | %.4f | %s | %s | %s | %.3f → %.3f |" % (
            r["arch"], r["p"]["train"]["parameters"] / 1e6, r["cfg"].get("dense_delay", 0),
            r["cfg"].get("expert_delay", 0), r["t"]["loss"], r["t"]["ppl"], r["t"]["bits_per_byte"],
            fmt_mib(an["b_naive_bytes"]) if an else "–", fmt_mib(an["b_critical_bytes"]) if an else "–",
            ("%.2f×" % an["reduction"]) if an else "–", r["spec_naive"], r["spec_crit"]))
    w("")
    w("Commands: `CFLOW_BLAS_DIR=/usr/lib/x86_64-linux-gnu/openblas-pthread golden/train/run_all.sh` "
      "(training), `/usr/bin/python3 golden/train/eval.py` (loss, ppl, bits/byte → `golden/train/results.json`, "
      "`models.<arch>.test.f32`), `/usr/bin/python3 golden/train/report.py` (conversion, `cflowc analyze`, "
      "`cflowc ppl` → `golden/train/go_results.json`, this page and the plot). Final training loss and wall time per "
      "model are in `golden/train/logs/<arch>.json`.\n")
    if demo:
        ds, dt = demo["p"]["train"]["settings"], demo["p"]["train"]
        w("### The demo model: the same arch2_4_combined, trained longer\n")
        w("`make demo` runs `golden/trained/%s`: arch2_4_combined at the same geometry, trained %d steps of %d × %d "
          "tokens (%s tokens, %.1f passes over the training text, %.1f× the table's budget; lr %g, %d warm-up steps, "
          "otherwise the table's settings) in %.0f minutes on 2 threads. It is not a row of the table above, whose "
          "point is an equal budget. Test loss **%.4f** nats/byte, ppl %.3f, **%.4f bits/byte**, against %.4f for "
          "the equal-budget arch2_4_combined: at this scale the training budget moves quality far more than the "
          "architecture does. Its bandwidth is the same file geometry as the table's row.\n"
          % (DEMO[0], ds["steps"], ds["batch"], ds["seq"], format(dt["tokens_seen"], ","), dt["tokens_seen"] / 615433,
             demo["budget"], ds["lr"], ds["warmup"], dt["wall_seconds"] / 60, demo["t"]["loss"], demo["t"]["ppl"],
             demo["bpb"], next((r["bpb"] for r in rows if r["arch"] == "arch2_4_combined"), float("nan"))))
        w("Command: `LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-pthread OPENBLAS_NUM_THREADS=1 "
          "CFLOW_TRAIN_THREADS=2 /usr/bin/python3 golden/train/train.py --arch arch2_4_combined --name %s "
          "--steps %d --batch %d --warmup %d` (log: `golden/train/logs/%s.json`), then `eval.py --arch %s`.\n"
          % (DEMO[0], ds["steps"], ds["batch"], ds["warmup"], DEMO[0], DEMO[0]))
    w("![bandwidth–quality plane](results-plane.png)\n")
    w("*docs/results-plane.png*: x is the Q4_0 file's critical-path bytes per token. A hollow marker is the "
      "naive schedule, and an arrow leads to the delayed one. y is the test bits/byte of the f32 reference. "
      "Red is arch2_4_combined, blue the other MoE models, gray the dense models.\n")
    w("### Reading it, at this scale\n")
    best = min(rows, key=lambda r: r["bpb"])
    a24 = next((r for r in rows if r["arch"] == "arch2_4_combined"), None)
    if a24:
        sync = next((r for r in rows if r["arch"] == "arch2_4_sync"), None)
        w("- arch2_4_combined's delayed schedule reads %.3f MiB instead of %.3f MiB per token (%.2f×). Our "
          "geometry has the report's proportions (d_ff = 4d, d_e = d, top-2). The dense FFN (3·d·d_ff) is 3× the "
          "attention (4·d²), and the top-2 experts (2·3·d·d_e) are 1.5× it. δd = 1 halves the dense read to "
          "1.5× attention, and δe = 2 cuts the expert read to 0.5×, so the halved dense FFN binds: 2×. arch4 "
          "(δd = 0) keeps the whole dense read: 1×. That is the report's \"dense_delay is the bandwidth knob\" at "
          "our scale." % (a24["crit"], a24["naive"], a24["naive"] / a24["crit"]))
        if sync and sync["an"]:
            w("- arch2_4_sync (δe = 0) ties under the spec's 0.5 B/param rule: the halved dense FFN and the "
              "undelayed top-2 experts are both 1.5× attention, so 2.00×. On the real Q4_0 file the expert "
              "stream also carries the f32 router (8 × 128 × 4 B per layer) and its tiles' own scales, so it "
              "binds at %.3f MiB: %.2f×. arch2_4_combined's δe = 2 leaves room for that. The bandwidth columns "
              "are exact arithmetic on the file, not a timing." % (sync["crit"], sync["naive"] / sync["crit"]))
    w("- Best test bits/byte: **%s** (%.4f). The spread across architectures is %.4f bits/byte. Read it against "
      "the scale caveat above: these runs test whether each dependency graph trains on real text and how far it "
      "gets in a fixed tiny budget. They do not settle which graph is better." % (
          best["arch"], best["bpb"], max(r["bpb"] for r in rows) - best["bpb"]))
    w("- MoE models have 2.4× the parameters of the dense ones (the experts sit beside the dense FFN) but "
      "run the same number of steps on the same tokens.\n")
    w("## The Go runtime reproduces the reference\n")
    w("`cflowc ppl` on the converted files, full test split (68,324 bytes, ctx 256, default kernel). F32 and Q8_0 are run for the arch2_4_combined models only and Q4_0 for all, to keep the runs short on the shared machine. `go test ./ppl` covers F32 and Q8_0 of both committed models:\n")
    w("| architecture | PyTorch f32 ppl | cflowc F32 | cflowc Q8_0 (gap) | cflowc Q4_0 (gap) | PyTorch q4_replay |")
    w("|---|---:|---:|---:|---:|---:|")
    for r in rows + ([demo] if demo else []):
        g = r["g"].get("ppl_test", {})
        ref = r["t"]["ppl"]

        def cell(q):
            if q not in g:
                return "–"
            v = g[q]["ppl"]
            return "%.4f (%+.2f%%)" % (v, 100 * (v / ref - 1)) if q != "f32" else "%.4f" % v
        q4r = r["p"]["test"].get("q4_replay")
        w("| %s | %.4f | %s | %s | %s | %s |" % (r["arch"], ref, cell("f32"), cell("q8_0"), cell("q4_0"),
                                               ("%.4f" % q4r["ppl"]) if q4r else "–"))
    w("")
    w("Commands: `cflowc convert golden/trained/<arch> --output <arch>_<q>.cflow --quant <q>` then "
      "`cflowc ppl <arch>_<q>.cflow --text golden/train/text/test.txt --json` (run by `report.py`). "
      "`go test ./ppl` pins the same comparison on the first 1,024 bytes of the test split "
      "(`golden/train/text/head.txt`, reference numbers in `results.json` under `models.<arch>.head`). It checks "
      "the F32 file within 0.1% of PyTorch (it agrees to ~1e-6), the Q8_0 file within 1%, and (the demo model) "
      "each quantized file with f32 activations within 0.1% of its `*_replay` reference. It logs the Q4_0 gap.\n")
    v = go.get("_verify")
    if v:
        w("## The committed models against their pinned traces\n")
        w("`cflowc verify FILE --trace golden/trained/traces/<arch>_<weights>.json` (TRACE.md rules; prompt = BOS + "
          "\"Once upon a time\", 24 greedy tokens, 41 teacher-forced steps):\n")
        w("| model | file | trace | verdict |")
        w("|---|---|---|---|")
        for arch in DEMO:
            for r in v.get(arch, []):
                vd = r["verdict"]
                vd = vd.split(":", 1)[0] + " —" + vd.split("):", 1)[1] if "):" in vd else vd
                w("| %s | %s | %s | %s |" % (arch, r["file"], r["trace"], vd.replace("|", "/")))
        w("")
        w("The same-precision checks (F32 against `f32`, Q8_0 against `q8_replay`, Q4_0 against `q4_replay`) are "
          "the exact ones, and they agree to ~1e-6 on both formats. The cross-precision rows hold a quantized file "
          "to the f32 trace with TRACE.md's bars: residual norms within 1% (Q8_0) or 5% (Q4_0) at every step. "
          "Those bars are the paper's, set for trained 512-wide models. Q8_0 meets its bar on both models and both "
          "formats, and `go test ./verify` (TestTrainedTraces) asserts it. Q4_0 does not yet: 4-bit rounding (~10% "
          "per weight) moves some per-layer residual norms by 5–8% at d 128, so a few of the 41 steps miss the "
          "5% bar while the argmax and the top-32 agree (the rows above). The longer-trained demo model misses "
          "by less than the 160-step llama. At this scale the ppl gaps above are the better measure of "
          "quantization quality.\n")
        smp = v.get("sample")
        if smp:
            w("**What it writes.** `%s` prints:\n" % smp["command"])
            w("```\n%s\n```\n" % smp["text"])
            if demo:
                w("At %.2f bits/byte the demo model writes TinyStories English: real words, names and "
                  "the genre's openings, with grammar that still breaks within a sentence or two. The 160-step "
                  "models of the table (≈ 2.9 bits/byte) write pseudo-English. The context is 256 bytes, so `run` "
                  "stops there (\"context full\").\n" % demo["bpb"])
    w("## Reproducing\n")
    w("```\n"
      "CFLOW_BLAS_DIR=/usr/lib/x86_64-linux-gnu/openblas-pthread golden/train/run_all.sh   # ~10-25 min per pair here\n"
      "/usr/bin/python3 golden/train/eval.py          # results.json, text/{test,head}.txt (committed: --weights f32 for the six uncommitted models)\n"
      "# the demo model: the train.py command under \"The demo model\" above, then eval.py --arch %s\n"
      "/usr/bin/python3 golden/train/traces.py        # golden/trained/traces/*.json\n"
      "/usr/bin/python3 golden/train/report.py        # go_results.json, docs/RESULTS.md, docs/results-plane.png\n"
      "/usr/bin/python3 -m unittest discover -s golden/train -p 'test_*.py'\n"
      "go test ./ppl\n"
      "```\n" % DEMO[0])
    w("Training is deterministic for a given BLAS and thread count: fixed seeds, `torch.use_deterministic_algorithms`. "
      "Debian's python3-torch links the system `libblas.so.3`, the reference BLAS by default. The committed "
      "checkpoints were trained with OpenBLAS (`CFLOW_BLAS_DIR`, ~5× faster), so a reference-BLAS rerun gives "
      "slightly different weights, though not different conclusions. Two checkpoints are committed (bf16, "
      "`golden/trained/`): the demo model `arch2_4_combined_demo` (7.7 MiB) and the equal-budget `llama` (3.2 MiB). "
      "The table's other six, the equal-budget arch2_4_combined among them, are regenerated by the training "
      "command, and their metrics are kept in `results.json` and `go_results.json`.")
    with open(DOC, "w") as f:
        f.write("\n".join(L) + "\n")
    print("wrote " + os.path.relpath(DOC, ROOT))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--render-only", action="store_true")
    ap.add_argument("--verify", action="store_true", help="only the verify + sample step, then render")
    ap.add_argument("--arch", nargs="*", default=None)
    ap.add_argument("--quants", nargs="*", default=None)
    a = ap.parse_args()
    archs = a.arch or data.trained_models()
    go = {}
    if os.path.exists(GO_RESULTS):
        with open(GO_RESULTS) as f:
            go = json.load(f)
    if a.verify:
        go = verify_and_sample(os.environ.get("CFLOW_REPORT_DIR", "/tmp/cflow-report"))
    elif not a.render_only:
        go = go_side(archs, os.environ.get("CFLOW_REPORT_DIR", "/tmp/cflow-report"), a.quants)
    render(go)


if __name__ == "__main__":
    main()
