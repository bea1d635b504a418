"""A whole faithfulness curve, two ways in one process: the library's edge patching against a per-edge reference.

GPT-2-small-shaped model with random weights (12 layers, d_model 768, 12 heads, d_mlp 3072, GPT-2's real
tokenizer; 157 senders, 445 receivers, 32,491 edges), greater-than prompts from the course's generator, the
logit difference (it varies more than the probability difference on random weights), circuits of the top-k edges of one random ranking at the 21 sizes of
``faithfulness.DEFAULT_FRACTIONS`` (0 to 100%):

* **reference** (``tests/faithfulness_reference.py``) -- one hooked forward per circuit; at each receiver's
  input hook the input is rebuilt edge by edge in a Python loop over its senders;
* **``patched_metric``** -- the library: several circuits side by side in one forward, the correction at every
  receiver one batched matrix product over all senders, only from the first position where the prompts differ,
  logits only at END.

    python benchmarks/faithfulness_curve.py --n 8
"""
from __future__ import annotations

import argparse
import sys
import time

from gpt2_shape import gpt2_shaped_model  # (puts the package and tests/ on the path)

import torch  # noqa: E402

from tutorial_lib.methods import faithfulness as fa  # noqa: E402
from tutorial_lib.methods.attribution import EAPGraph  # noqa: E402
from tutorial_lib.tasks.greater_than import make_greater_than  # noqa: E402
from faithfulness_reference import reference_patched_metric  # noqa: E402  (the tests' independent reference)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=8, help="prompts")
    p.add_argument("--threads", type=int, default=2)
    a = p.parse_args(argv)
    torch.set_num_threads(a.threads)
    model = gpt2_shaped_model(seed=0)
    task = make_greater_than(model.tokenizer, n=a.n, seed=0)
    graph = EAPGraph.from_model(model)
    masks = fa.top_edges(graph, fa.random_scores(graph, 0), fa.DEFAULT_FRACTIONS)
    t = time.time(); c0 = time.process_time()
    fast = fa.patched_metric(model, task, masks, metric="logit_diff")
    fast_wall, fast_cpu = time.time() - t, time.process_time() - c0
    t = time.time(); c0 = time.process_time()
    ref = torch.tensor([reference_patched_metric(model, task, m, metric=task.logit_diff) for m in masks])
    ref_wall, ref_cpu = time.time() - t, time.process_time() - c0
    diff = float((fast - ref).abs().max())
    print(f"{a.n} greater-than prompts x {task.clean.shape[1]} tokens, {fa.n_edges(graph)} edges, "
          f"{len(masks)} circuit sizes, {a.threads} threads")
    print("| method | wall s | CPU s | speedup (wall) |")
    print(f"| per-edge reference | {ref_wall:.1f} | {ref_cpu:.1f} | 1.00x |")
    print(f"| patched_metric | {fast_wall:.1f} | {fast_cpu:.1f} | {ref_wall / fast_wall:.2f}x |")
    print(f"max abs difference of the metric {diff:.2e} (metric range {float(ref.min()):.3f}..{float(ref.max()):.3f})")
    print(f"RESULT faithfulness_curve speedup={ref_wall / fast_wall:.2f} max_abs_diff={diff:.2e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
