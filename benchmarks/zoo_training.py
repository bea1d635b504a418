"""Training step time of the default zoo-multitask recipe: grouped batches vs one padded batch.

The multi-task corpus mixes prompts of 8 (addition) to 34 (multiple choice) tokens. Padded into one
``[rows, 34]`` batch, most of each step computes padding; :meth:`MultiTaskCorpus.batch_fn` returns one
group per task (two for boolean logic, whose rows differ in length), and the trainer sums the loss
over the groups. Both give the same loss (checked here, and in ``tests/test_train.py``).

    python benchmarks/zoo_training.py --steps 60 --threads 1

Prints seconds per step for each form (after 5 warm-up steps, same model, same optimiser settings), the
speedup, the loss difference on the first batch, and the extrapolated time of a full rebuild
(``MULTITASK_TRAIN["steps"]`` steps; pool generation and held-out evaluation are timed separately by
``python -m tutorial_lib.zoo build``).
"""
from __future__ import annotations

import argparse
import resource
import time

import torch


def time_steps(model, loss_fn, corpus_fn, steps: int, warmup: int = 5) -> float:
    opt = torch.optim.AdamW(model.parameters(), 1e-3)
    g = torch.Generator().manual_seed(1)
    for i in range(warmup + steps):
        if i == warmup:
            t0 = time.perf_counter()
        loss = loss_fn(model, corpus_fn(i, g))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return (time.perf_counter() - t0) / steps


def main() -> None:
    from tutorial_lib.tasks.tokenizers import zoo_tokenizer
    from tutorial_lib.zoo.build import MULTITASK_TRAIN, make_multitask_model
    from tutorial_lib.zoo.multitask import MixSpec, MultiTaskCorpus
    from tutorial_lib.zoo.train import grouped_next_token_loss, masked_next_token_loss

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)

    tok = zoo_tokenizer()
    t0 = time.perf_counter()
    corpus = MultiTaskCorpus(tok, MixSpec(), seed=0)
    pools_s = time.perf_counter() - t0
    torch.manual_seed(0)
    model = make_multitask_model(tok)

    g = torch.Generator().manual_seed(0)
    groups = corpus.batch_fn(0, g)
    g = torch.Generator().manual_seed(0)
    padded = corpus.padded_batch_fn(0, g)
    diff = abs(grouped_next_token_loss(model, groups, fast=True).item()
               - masked_next_token_loss(model, *padded, fast=True).item())
    real = sum(t.numel() for t, _ in groups)
    print(f"one batch: {padded[0].shape[0]} rows; padded {padded[0].numel()} tokens, grouped {real} tokens "
          f"in {len(groups)} groups; |loss difference| {diff:.2e}")

    s_pad = time_steps(model, lambda m, b: masked_next_token_loss(m, *b, fast=True), corpus.padded_batch_fn, args.steps)
    s_grp = time_steps(model, lambda m, b: grouped_next_token_loss(m, b, fast=True), corpus.batch_fn, args.steps)
    steps = MULTITASK_TRAIN["steps"]
    print(f"padded batch : {s_pad:.3f} s/step -> {steps} steps {s_pad * steps / 60:.1f} min")
    print(f"grouped batch: {s_grp:.3f} s/step -> {steps} steps {s_grp * steps / 60:.1f} min")
    print(f"pools built in {pools_s:.1f} s; threads {args.threads}; "
          f"load average {open('/proc/loadavg').read().split()[0]}")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"RESULT zoo_training speedup={s_pad / s_grp:.2f} loss_diff={diff:.2e} s_per_step={s_grp:.3f} peak_mb={peak:.0f}")


if __name__ == "__main__":
    main()
