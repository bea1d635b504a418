"""Exact per-component activation patching (what EAP's node scores estimate), two ways in one process.

GPT-2-small-shaped model with random weights (12 layers, d_model 768, 12 heads, d_mlp 3072, GPT-2's real
tokenizer), IOI prompts from the course's generator, metric log p(answer) at END, every head and MLP
(156 components), per example:

* **reference** -- one full hooked forward per component (its output replaced by the corrupted run's at
  every position), full logits: the loop notebook 02 used before;
* **``exact_node_effects``** -- the activation-patching engine: heads of a layer batched, only the layers
  after the patched one recomputed, only from the first position where the prompts differ, logits only
  at END.

    python benchmarks/exact_node_effects.py --n 16
"""
from __future__ import annotations

import argparse
import sys
import time

from gpt2_shape import gpt2_shaped_model  # (puts the package and tests/ on the path)

import torch  # noqa: E402

from tutorial_lib.methods.attribution import EAPGraph, exact_node_effects  # noqa: E402
from tutorial_lib.tasks.ioi import make_ioi  # noqa: E402
from test_attribution import exact_node_effects_reference  # noqa: E402  (the tests' independent reference)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=16)
    p.add_argument("--threads", type=int, default=2)
    a = p.parse_args(argv)
    torch.set_num_threads(a.threads)
    model = gpt2_shaped_model(seed=0)
    task = make_ioi(model.tokenizer, n=a.n, seed=0)
    comps = [c for c in EAPGraph.from_model(model).components if c != "embed"]
    t = time.time(); c0 = time.process_time()
    fast = exact_node_effects(model, task, "answer_logprob", components=comps)
    fast_wall, fast_cpu = time.time() - t, time.process_time() - c0
    t = time.time(); c0 = time.process_time()
    ref = exact_node_effects_reference(model, task, comps, "answer_logprob").float()
    ref_wall, ref_cpu = time.time() - t, time.process_time() - c0
    diff = float((fast - ref).abs().max())
    scale = float(ref.abs().max())
    print(f"{a.n} IOI prompts x {task.clean.shape[1]} tokens, {len(comps)} components, {a.threads} threads")
    print(f"| method | wall s | CPU s | speedup (wall) |")
    print(f"| reference loop | {ref_wall:.1f} | {ref_cpu:.1f} | 1.00x |")
    print(f"| exact_node_effects | {fast_wall:.1f} | {fast_cpu:.1f} | {ref_wall / fast_wall:.2f}x |")
    print(f"max abs difference {diff:.2e} (largest effect {scale:.2e})")
    print(f"RESULT exact_node_effects speedup={ref_wall / fast_wall:.2f} max_abs_diff={diff:.2e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
