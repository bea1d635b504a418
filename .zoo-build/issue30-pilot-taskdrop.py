"""Issue 30 pilot E ("taskdrop"): as candidate.py (m0 frozen, 10,000-step restart, seed 1), head dropout p 0.1 seed
4321 on the TASK rows only: the induction rows and the plain rows (the copying rows) run with every head. Pilot code
(monkeypatched); a library version must reproduce it bit for bit. Resumable: run again to continue."""
import json, shutil, sys
import torch
CALLS = {False: 0, True: 0}
from pathlib import Path
import tutorial_lib.zoo.train as T
import tutorial_lib.zoo.multitask as M
import tutorial_lib.zoo.split_induction as S
from tutorial_lib.zoo.build import build_multitask
from tutorial_lib.zoo.multitask import MixSpec


def Exempt(group):
    """a group that runs with every head (no head dropout): its tokens tensor is marked (the trainer's .to("cpu")
    returns the same tensor)"""
    group[0]._no_head_dropout = True
    return group


_ind = M.MultiTaskCorpus._induction_group
M.MultiTaskCorpus._induction_group = lambda self, *a, **k: Exempt(_ind(self, *a, **k))
_plain = S.PlainRows.__call__
S.PlainRows.__call__ = lambda self, g: Exempt(_plain(self, g))


def grouped(model, groups, fast=False, head_keep=None):
    global CALLS
    total, count = 0.0, 0
    for g in groups:
        tokens, mask = g[0], g[1]
        vocab = g[2] if len(g) == 3 else None
        n = float(mask[:, :-1].sum()) if mask.is_floating_point() else int(mask[:, :-1].bool().sum())
        if n == 0:
            continue
        CALLS[isinstance(tokens, torch.Tensor) and getattr(tokens, '_no_head_dropout', False)] += 1
        hk = None if getattr(tokens, '_no_head_dropout', False) else head_keep
        total = total + T.masked_next_token_loss(model, tokens, mask, fast=fast, vocab=vocab, head_keep=hk) * n
        count += n
    return total / count


T.grouped_next_token_loss = grouped
name, p = "taskdrop", 0.1
root = Path("/work/var") / name
entry = json.loads(Path("/work/build/data/zoo/manifest.json").read_text())["models"]["zoo-multitask-medium"]
if not (root / "zoo").exists():
    shutil.copytree("/work/build/data/zoo", root / "zoo")
    (root / "work").mkdir(parents=True, exist_ok=True)
    shutil.copy("/work/build/.zoo-build/zoo-multitask-medium/train_state.pt", root / "work" / "train_state.pt")
train = dict(entry["train"])
train["restart"] = {**train["restart"], "frozen": ["embed.", "unembed.", "blocks.0.mlp."], "steps": 10000,
                    "head_dropout": {"p": p, "seed": 4321}}
mix = {k: (tuple(tuple(x) if isinstance(x, list) else x for x in v) if isinstance(v, list) else v) for k, v in entry["mix"].items()}
print("train:", train, "(head dropout on task rows only)", flush=True)
import atexit
atexit.register(lambda: print('group calls (dropped, exempt):', CALLS, flush=True))
build_multitask(name="zoo-multitask-medium", train=train, spec=MixSpec(**mix), config=None,
                directory=root / "zoo", work_dir=root / "work", resume=True, num_threads=1, progress=True)
