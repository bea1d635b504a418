"""Benchmark: peak memory of a path-patching sweep, with the caches keeping every position's logits or only END's.

A GPT-2-small-shaped model with random weights (GPT-2's configuration: 12 layers, d_model 768, 12 heads,
d_mlp 3072, d_vocab 50257; ``--layers`` for fewer), 200 greater-than prompts from GPT-2's own tokenizer, the
probability difference read at END. The measured call is ``path_patch_sweep(..., senders=<12 senders>,
sender_positions=end, logit_positions=end)`` into ``--receiver`` (default the logits); the few senders keep
the time short, and the memory that changed does not grow with their number (runs are chunked).

Each measurement runs in a fresh Python process that imports ``tutorial_lib`` from a given source tree: this
checkout, or ``--before <commit>`` (its ``tutorial_lib`` extracted with ``git archive`` into a temporary folder;
``TUTORIAL_DATA`` points both at this checkout's ``data/``). In the child, the
peak resident set size is reset just before the call (``/proc/self/clear_refs``, Linux) and read after it
(``VmHWM``); the figure reported is that peak minus the resident size just before the call, i.e. what the
call itself added on top of the model and the prompts. The median of ``--repeats`` processes per tree.

    python benchmarks/logit_memory.py --before 6f8bc59            # before/after, 3 repeats each
    python benchmarks/logit_memory.py --repeats 1 --prompts 20    # a smoke test of this tree only

The last line is ``RESULT logit_memory before_mb=<x> after_mb=<y>`` (``before_mb`` only with ``--before``).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _status_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def child(args) -> None:
    """One measurement, in this process: print a JSON line with the figures."""
    sys.path.insert(0, args.tree)
    import warnings

    warnings.filterwarnings("ignore")
    import torch
    from transformer_lens import HookedTransformer, HookedTransformerConfig

    import tutorial_lib
    from tutorial_lib.methods.path_patching import path_patch_sweep
    from tutorial_lib.tasks.greater_than import make_greater_than
    from tutorial_lib.tasks.tokenizers import gpt2_tokenizer

    assert Path(tutorial_lib.__file__).resolve().is_relative_to(Path(args.tree).resolve()), tutorial_lib.__file__
    torch.set_num_threads(args.threads)
    cfg = HookedTransformerConfig(n_layers=args.layers, d_model=768, n_heads=12, d_head=64, d_mlp=3072,
                                  d_vocab=50257, n_ctx=1024, act_fn="gelu_new", normalization_type="LN", seed=0,
                                  device="cpu")
    model = HookedTransformer(cfg).eval()
    task = make_greater_than(gpt2_tokenizer(), args.prompts, seed=0)
    senders = [f"a{l}.h{h}" for l in range(min(args.layers, 3)) for h in (0, 5, 11)] + ["m0", "m1", "embed"]
    before = _status_kb("VmRSS")
    Path("/proc/self/clear_refs").write_text("5")  # reset the peak resident size (VmHWM) to the current one
    t0 = time.perf_counter()
    res = path_patch_sweep(model, task.clean, task.corrupt, args.receiver, task.metric, senders=senders,
                           sender_positions=task.end_pos, logit_positions=task.end_pos, progress=False)
    wall = time.perf_counter() - t0
    peak = _status_kb("VmHWM")
    print(json.dumps({"added_mb": (peak - before) / 1024, "rss_before_mb": before / 1024, "wall_s": wall,
                      "shape": list(task.clean.shape), "effect_a0.h0": res.effects["a0.h0"]}))


def measure(tree: str, args) -> list[dict]:
    out = []
    for _ in range(args.repeats):
        cmd = [sys.executable, __file__, "--child", "--tree", tree, "--prompts", str(args.prompts),
               "--layers", str(args.layers), "--receiver", args.receiver, "--threads", str(args.threads)]
        env = {**os.environ, "TUTORIAL_DATA": str(ROOT / "data")}  # the tokenizer files, for either tree
        run = subprocess.run(cmd, capture_output=True, text=True, check=True, env=env)
        out.append(json.loads(run.stdout.strip().splitlines()[-1]))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--tree", default=str(ROOT), help="the source tree to import tutorial_lib from")
    ap.add_argument("--before", help="a commit to compare with (its tutorial_lib, via git archive)")
    ap.add_argument("--prompts", type=int, default=200)
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--receiver", default="logits")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    if args.child:
        return child(args)
    trees = {"after": str(ROOT)}
    tmp = None
    if args.before:
        tmp = tempfile.TemporaryDirectory(prefix="logit-memory-")
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.before, "tutorial_lib"],
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", tmp.name], input=archive, check=True)
        trees = {"before": tmp.name, **trees}
    medians = {}
    for label, tree in trees.items():
        runs = measure(tree, args)
        medians[label] = statistics.median(r["added_mb"] for r in runs)
        each = ", ".join(f"{r['added_mb']:.0f}" for r in runs)
        print(f"{label:>6}: added {each} MB (median "
              f"{medians[label]:.0f}); RSS before the call {runs[0]['rss_before_mb']:.0f} MB; "
              f"wall {statistics.median(r['wall_s'] for r in runs):.1f} s; prompts {runs[0]['shape']}; "
              f"effect of a0.h0 {runs[0]['effect_a0.h0']:+.3g}")
    print(f"{args.layers} layers, receiver {args.receiver}, {args.threads} thread(s), {args.repeats} repeat(s)")
    print("RESULT logit_memory " + " ".join(f"{k}_mb={v:.0f}" for k, v in medians.items()))
    if tmp is not None:
        tmp.cleanup()


if __name__ == "__main__":
    main()
