"""Notebook 01's whole path-patching search on the GPT-2 shape, at the paper's 200 prompts (issue 54, item 2).

GPT-2 small's shape and real tokenizer, random weights (``gpt2_shape.py``). Random weights give path effects
below any threshold, so the search would stop after step 1; as in the notebook tests, the paper's circuit is
planted in the *selection* (``tests/planted_gpt2.py``): every step's sweep runs in full over every sender, and
only which senders are kept is the paper's. So the time is the search's as on real GPT-2 small.

    python benchmarks/search_gpt2.py --n 200 --threads 2

Prints each step's time and the total, the floating-point work of the whole search (counted by
``torch.utils.flop_counter``; matrix products only) and this machine's best rate for the search's largest
product (the unembedding of a chunk of runs, best of five), hence the search's arithmetic floor on these
threads; writes build/search_gpt2.json.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from gpt2_shape import gpt2_shaped_model  # (puts the package and tests/ on the path)

import torch  # noqa: E402


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=200, help="greater-than prompts (the paper: 200)")
    p.add_argument("--threads", type=int, default=2)
    a = p.parse_args(argv)
    torch.set_num_threads(a.threads)
    from planted_gpt2 import PRELUDE

    exec(PRELUDE, {})  # the paper's components chosen at each step; every sweep still runs in full
    import tutorial_lib.methods.path_discovery as pd
    from tutorial_lib.studies.greater_than import greater_than_circuit_search
    from tutorial_lib.tasks.greater_than import make_greater_than

    steps: dict = {}
    original = pd.discover_step

    def timed(model, task, receivers, *args, **kw):  # each sweep's time, by receiver
        t = time.perf_counter()
        out = original(model, task, receivers, *args, **kw)
        steps.setdefault(str(receivers), []).append(time.perf_counter() - t)
        return out

    import tutorial_lib.studies.greater_than as gt

    for mod in (pd, gt):
        if hasattr(mod, "discover_step"):
            mod.discover_step = timed
    from torch.utils.flop_counter import FlopCounterMode

    model = gpt2_shaped_model(seed=0)
    task = make_greater_than(model.tokenizer, n=a.n, seed=0)
    counter = FlopCounterMode(display=False)
    t = time.perf_counter()
    with counter:
        search = greater_than_circuit_search(model, task, threshold=0.005)
    total = time.perf_counter() - t
    print(f"{a.n} prompts x {task.clean.shape[1]} tokens, {a.threads} threads: the whole search {total:.1f} s; "
          f"circuit {len(search.circuit.nodes)} nodes")
    for r, ts in steps.items():
        print(f"  into {r}: {sum(ts):.1f} s ({len(ts)} sweep(s))")
    flops = counter.get_total_flops()
    rate = best_rate(model)
    print(f"matrix products: {flops / 1e12:.1f} TFLOP; this machine's best for the unembedding on {a.threads} "
          f"thread(s): {rate / 1e9:.0f} GFLOP/s, so at least {flops / rate:.0f} s of arithmetic "
          f"({total / (flops / rate):.2f}x that floor)")
    out = Path(__file__).resolve().parents[1] / "build" / "search_gpt2.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"n": a.n, "threads": a.threads, "seconds": round(total, 1),
                               "tflop": round(flops / 1e12, 2), "best_gflops": round(rate / 1e9),
                               "floor_seconds": round(flops / rate, 1),
                               "sweeps": {r: round(sum(ts), 1) for r, ts in steps.items()}}, indent=1))
    print(f"RESULT search_gpt2 n={a.n} seconds={total:.1f}")
    return 0


def best_rate(model, rows: int = 600, repeats: int = 5) -> float:
    """FLOP/s of ``rows`` residual rows times the unembedding (the search's largest matrix product), best of
    ``repeats``."""
    w_t = model.unembed.W_U.T.contiguous()
    x = torch.randn(rows, model.cfg.d_model)
    best = float("inf")
    with torch.no_grad():
        for _ in range(repeats + 1):
            t = time.perf_counter()
            torch.nn.functional.linear(x, w_t, model.unembed.b_U)
            best = min(best, time.perf_counter() - t)
    return 2 * rows * model.cfg.d_model * model.cfg.d_vocab / best


if __name__ == "__main__":
    sys.exit(main())
