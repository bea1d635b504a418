"""Issue 30 pilot "taskdrop": issue30_pilot_candidate's restart (m0 frozen, 10,000 steps, seed 1) with head dropout
p 0.1 (seed 4321) on the TASK rows only: the induction rows and the plain rows (the copying rows) run with every
head. Pilot code (the trainer's grouped loss patched); a library version must reproduce it bit for bit.
Resumable: run again to continue."""
import sys
from pathlib import Path

import tutorial_lib.zoo.multitask as M
import tutorial_lib.zoo.split_induction as S
import tutorial_lib.zoo.train as T

sys.path.insert(0, str(Path(__file__).parent))
from issue30_pilot_candidate import run_restart  # noqa: E402


def exempt(group):
    """Mark a group to run with every head: its tokens tensor carries the mark (the trainer's ``.to("cpu")``
    returns the same tensor)."""
    group[0]._no_head_dropout = True
    return group


_induction, _plain = M.MultiTaskCorpus._induction_group, S.PlainRows.__call__
M.MultiTaskCorpus._induction_group = lambda self, *a, **k: exempt(_induction(self, *a, **k))
S.PlainRows.__call__ = lambda self, g: exempt(_plain(self, g))


def grouped(model, groups, fast=False, head_keep=None):
    """The trainer's grouped loss, with no head dropout on the marked groups."""
    total, count = 0.0, 0
    for g in groups:
        tokens, mask = g[0], g[1]
        vocab = g[2] if len(g) == 3 else None
        n = float(mask[:, :-1].sum()) if mask.is_floating_point() else int(mask[:, :-1].bool().sum())
        if n == 0:
            continue
        keep = None if getattr(tokens, "_no_head_dropout", False) else head_keep
        total = total + T.masked_next_token_loss(model, tokens, mask, fast=fast, vocab=vocab, head_keep=keep) * n
        count += n
    return total / count


T.grouped_next_token_loss = grouped

if __name__ == "__main__":
    run_restart("taskdrop", 10000, 0.1, 1, note="(head dropout on the task rows only)")
