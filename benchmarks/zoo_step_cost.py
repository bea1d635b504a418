"""Training step cost of the multi-task zoo variants, side by side (issue 49: the deep model's step may cost at most
about twice the medium's).

    python benchmarks/zoo_step_cost.py --steps 20 --threads 1

For each variant: its model and corpus as ``python -m tutorial_lib.zoo build`` makes them, timed on the mixed phase
(every task's rows plus induction and plain rows; the step index is past the induction-only warm-up) with the
trainer's own loss (grouped batches, fast forward) and AdamW, after 3 warm-up steps. Prints seconds per step, the
ratio to the medium model, parameters, and the extrapolated time of the variant's whole recipe on one thread.
"""
from __future__ import annotations

import argparse
import time
from dataclasses import replace

import torch


def step_seconds(name: str, steps: int, warmup: int = 3) -> tuple[float, int, int]:
    from tutorial_lib.tasks.tokenizers import zoo_tokenizer
    from tutorial_lib.zoo.build import VARIANTS, make_multitask_model
    from tutorial_lib.zoo.multitask import MixSpec, MultiTaskCorpus
    from tutorial_lib.zoo.train import grouped_next_token_loss

    v = VARIANTS[name]
    tok = zoo_tokenizer()
    spec = MixSpec(**v["mix"])
    spec = replace(spec, induction_warmup_steps=0, induction_vocab_curriculum=())  # the mixed phase
    corpus = MultiTaskCorpus(tok, spec, seed=0)
    torch.manual_seed(0)
    model = make_multitask_model(tok, seed=0, **v["config"])
    opt = torch.optim.AdamW(model.parameters(), 1e-3)
    g = torch.Generator().manual_seed(1)
    for i in range(warmup + steps):
        if i == warmup:
            t0 = time.perf_counter()
        loss = grouped_next_token_loss(model, corpus.batch_fn(3000 + i, g), fast=True)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    total = v["train"]["steps"] + (v["train"].get("restart") or {}).get("steps", 0)
    return (time.perf_counter() - t0) / steps, sum(p.numel() for p in model.parameters()), total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--variants", nargs="+", default=["zoo-multitask-medium", "zoo-multitask-deep"])
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    base = None
    for name in args.variants:
        s, n, total = step_seconds(name, args.steps)
        base = base or s
        print(f"{name}: {s:.3f} s/step ({s / base:.2f}x the first), {n / 1e6:.2f} M parameters, "
              f"{total} steps -> {s * total / 3600:.1f} h on {args.threads} thread(s)")
    print(f"load average {open('/proc/loadavg').read().split()[0]}")


if __name__ == "__main__":
    main()
