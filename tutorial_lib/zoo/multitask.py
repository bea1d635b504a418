"""The multi-task training corpus: rows drawn from every task generator's *train* split (and, optionally, induction).

Each training row is one prompt followed by its answer token (loss on the answer only), exactly the
layout the evaluation reads: BOS at position 0, the prediction at ``end_pos``. Held-out test examples
never appear: every generator's ``split="train"`` excludes the identities its ``split="test"`` uses
(see :func:`tutorial_lib.tasks.tokenizers.split_of`). Induction rows are random word tokens with a
repeated segment at a random offset and of random length (loss on the repeated tokens), so the model
must build an induction mechanism instead of a positional shortcut.

The shipped ``zoo-multitask`` is trained without induction rows (``MixSpec().rows`` has none): in a
run with 12 induction rows out of 108 per batch the induction loss stayed near ln|V| and dominated the
loss, and the other tasks came out worse (multiple choice 24% against 100% without them). Induction is
taught on the attention-only induction models of :mod:`tutorial_lib.zoo.induction_models` instead.

The pools are generated once (a few seconds), then every step samples rows from them with the
trainer's seeded generator.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import torch
from torch import Tensor

from ..tasks.tokenizers import TrainBatch


@dataclass
class MixSpec:
    """How many rows of each task go into one training batch, and the generators' options."""

    rows: dict = field(default_factory=lambda: {
        "greater_than": 16, "ioi": 8, "addition": 36, "boolean": 28, "multiple_choice": 20})
    pool_size: int = 40_000  # prompts pre-generated per task (the train split is sampled from it)
    greater_than_window: int = 15
    boolean_ops: tuple = (1, 4)
    induction_seq_len: int = 34
    induction_len: tuple = (4, 12)


def _samplers(spec: MixSpec) -> dict[str, Callable[[int, int], TrainBatch]]:
    from ..tasks.addition import sample_addition_ids
    from ..tasks.boolean import sample_boolean_ids
    from ..tasks.greater_than import sample_greater_than_ids
    from ..tasks.ioi import sample_ioi_ids
    from ..tasks.multiple_choice import sample_multiple_choice_ids

    lo, hi = spec.boolean_ops
    return {
        "greater_than": lambda n, s: sample_greater_than_ids(n, seed=s, split="train", window=spec.greater_than_window),
        "ioi": lambda n, s: sample_ioi_ids(n, seed=s, split="train"),
        "addition": lambda n, s: sample_addition_ids(n, seed=s, split="train"),
        "boolean": lambda n, s: sample_boolean_ids(n, seed=s, split="train", min_ops=lo, max_ops=hi),
        "multiple_choice": lambda n, s: sample_multiple_choice_ids(n, seed=s, split="train"),
    }


def _append_answers(batch: TrainBatch, pad: int) -> tuple[Tensor, Tensor]:
    """Rows ``prompt + answer`` (padded) and the loss mask selecting the prediction at ``end_pos``."""
    n, T = batch.tokens.shape
    tokens = torch.full((n, T + 1), pad, dtype=torch.long)
    tokens[:, :T] = batch.tokens
    rows = torch.arange(n)
    tokens[rows, batch.end_pos + 1] = batch.answers
    mask = torch.zeros_like(tokens)
    mask[rows, batch.end_pos] = 1
    return tokens, mask


class MultiTaskCorpus:
    """Pools of training rows per task and a seeded ``batch_fn(step, generator)`` for the trainer."""

    def __init__(self, tokenizer, spec: MixSpec = MixSpec(), seed: int = 0):
        from ..tasks.induction import induction_batch_fn

        self.spec, self.pad = spec, tokenizer.pad_token_id
        self.pools: dict[str, tuple[Tensor, Tensor]] = {}
        for i, (name, sample) in enumerate(_samplers(spec).items()):
            if spec.rows.get(name, 0):
                self.pools[name] = _append_answers(sample(spec.pool_size, seed * 1000 + i), self.pad)
        lo, hi = spec.induction_len
        self.induction = induction_batch_fn(tokenizer, batch_size=spec.rows.get("induction", 0) or 1,
                                            seq_len=spec.induction_seq_len, min_len=lo, max_len=hi)

    def batch_fn(self, step: int, g: torch.Generator) -> tuple[Tensor, Tensor]:
        parts = []
        for name, (tokens, mask) in self.pools.items():
            k = self.spec.rows[name]
            idx = torch.randint(0, tokens.shape[0], (k,), generator=g)
            parts.append((tokens[idx], mask[idx]))
        if self.spec.rows.get("induction", 0):
            parts.append(self.induction(step, g))
        T = max(t.shape[1] for t, _ in parts)
        toks = torch.cat([torch.nn.functional.pad(t, (0, T - t.shape[1]), value=self.pad) for t, _ in parts])
        masks = torch.cat([torch.nn.functional.pad(m, (0, T - m.shape[1]), value=0) for _, m in parts])
        return toks, masks
