"""The spectral recipe's three steps over a hub model's own training checkpoints: Pythia and OLMo-1B-0724 (study
3's models: the paper's code reads both) and OLMo-2 (the family whose training the consistency study followed).

Step 1 reads every head's participation ratio (PR) on a planted-pair probe at a few training checkpoints and
ranks the heads by the PR integral over log(tokens seen); steps 2-3 (the induction filter and the group ablation
against layer-matched random heads) run on the last checkpoint loaded. One model is held in memory at a time::

    recipe = checkpoint_recipe("pythia-70m", n_checkpoints=3)    # or "olmo-1b-0724", "olmo-2-1b"
    recipe.steps, recipe.tokens, recipe.pr.shape                  # [3, n_layers, n_heads]
    recipe.top                                                    # step 1's ranking, [(head, integral), ...]
    recipe.final.heads, recipe.final.result                       # steps 2-3 on the last checkpoint
    print(recipe.reading())

Which checkpoints: ``n_checkpoints`` spread evenly in log(step) over the model's pre-training checkpoints (Pythia's
154, OLMo-1B-0724's ``step…-tokens…B`` branches, OLMo-2's ``stage1-`` branches), the last one always included; or
name them with ``checkpoints=[step, ...]``. Tokens seen: Pythia trains on 2,097,152 tokens a step (1,024 sequences of
2,048 tokens); OLMo-1B-0724's and OLMo-2's branch names carry their token count (``step1000-tokens2B``: 2 billion;
``stage1-step1000-tokens5B``: 5 billion).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Optional, Sequence

import torch
from torch import Tensor

from ..methods.spectral import head_participation_ratios, pr_integral, rank_heads
from ..zoo import hub_models
from ..zoo.loading import load_model, training_checkpoints
from .spectral_loaded import Minority, induction_minority, model_probe

PYTHIA_TOKENS_PER_STEP = 1024 * 2048
_TOKENS_B = re.compile(r"(?:^|-)tokens(\d+)B(?:-|$)")


def tokens_seen(kind: str, step: int, revision: str) -> int:
    """Training tokens behind checkpoint ``step`` / ``revision`` of a ``kind`` ("pythia", "olmo" for OLMo-1B-0724,
    or "olmo2") model."""
    if kind == "pythia":
        return int(step) * PYTHIA_TOKENS_PER_STEP
    if kind in ("olmo", "olmo2"):
        m = _TOKENS_B.search(revision)
        if m is None:
            raise ValueError(f"{'OLMo-2' if kind == 'olmo2' else 'OLMo-1'} revision {revision!r} does not name its "
                             "tokens (…-tokens5B)")
        return int(m.group(1)) * 10 ** 9
    raise ValueError(f"unknown checkpoint kind {kind!r}; accepted: 'pythia', 'olmo', 'olmo2'")


def pick_checkpoints(available: Sequence[tuple[int, str]], n: int,
                     steps: Optional[Sequence[int]] = None) -> list[tuple[int, str]]:
    """``n`` of the ``(step, revision)`` checkpoints, spread evenly in log(step) over the pre-training ones (step > 0;
    OLMo-2's later stages left out), the last always included; or exactly the ``steps`` asked for."""
    if steps is not None:
        by_step = {}
        for s, r in available:
            by_step.setdefault(s, r)  # training_checkpoints lists stage 1 first
        missing = [s for s in steps if s not in by_step]
        if missing:
            have = sorted(by_step)
            raise ValueError(f"no checkpoint at step(s) {missing}; this model has {len(have)} "
                             f"(steps {have[0]}..{have[-1]}, e.g. {have[:4]})")
        return [(s, by_step[s]) for s in sorted(set(steps))]
    if not isinstance(n, int) or n < 2:
        raise ValueError(f"n_checkpoints={n!r}: step 1's integral needs at least 2 checkpoints")
    pre = sorted({(s, r) for s, r in available if s > 0 and not (r.startswith("stage") and not r.startswith("stage1-"))})
    if len(pre) < 2:
        raise ValueError(f"only {len(pre)} pre-training checkpoint(s) with step > 0: {pre}")
    lo, hi = math.log(pre[0][0]), math.log(pre[-1][0])
    chosen = []
    for i in range(n):
        target = lo + (hi - lo) * i / (n - 1)
        best = min(pre, key=lambda sr: abs(math.log(sr[0]) - target))
        if best not in chosen:
            chosen.append(best)
    return sorted(chosen)


@dataclass
class HubCheckpointRecipe:
    """Steps 1-3 on one hub model's training checkpoints (see the module's docstring)."""

    name: str
    steps: list
    revisions: list
    tokens: list
    pr: Tensor                 # [n_checkpoints, n_layers, n_heads]
    integral: Tensor           # [n_layers, n_heads]: the PR integral over log(tokens seen)
    final: Minority            # steps 2-3 on the last checkpoint
    n_probe: int

    @property
    def top(self) -> list[tuple[str, float]]:
        """Step 1's ranking: the heads with the largest PR integral, as many as step 2 found (at least 3)."""
        return rank_heads(self.integral, max(3, len(self.final.heads)))

    def overlap(self) -> list[str]:
        """The heads both in step 1's top list and among step 2's induction heads."""
        return [h for h, _ in self.top if h in self.final.heads]

    def reading(self) -> str:
        f, top = self.final, [h for h, _ in self.top]
        r = f.result
        causal = ("" if r is None else
                  f" Ablating the {len(f.tested)} tested heads together takes top-1 on the probe from "
                  f"{100 * float(r.baseline['top1']):.0f}% to {100 * float(r.candidate['top1']):.0f}% "
                  f"(layer-matched random heads: {100 * float(r.control_mean()):.0f}%).")
        return (f"{self.name}, {len(self.steps)} checkpoints (steps {', '.join(map(str, self.steps))}; "
                f"{self.tokens[0] / 1e9:.3g}–{self.tokens[-1] / 1e9:.3g} B tokens), probe of {self.n_probe} "
                f"sequences. Step 1's top {len(top)} heads by PR integral: {', '.join(top)}. Step 2 at the last "
                f"checkpoint: {len(f.heads)} of {f.n_heads} heads pass {f.induction_threshold:.0f}× induction "
                f"selectivity ({', '.join(f.heads[:8]) or 'none'}); {len(self.overlap())} of them are in step 1's "
                f"list.{causal}")


def checkpoint_recipe(name: str, n_checkpoints: int = 3, checkpoints: Optional[Sequence[int]] = None,
                      probe_n: int = 64, seq_len: int = 48, n_control_seeds: int = 5, device=None,
                      verbose: bool = True, **load_kwargs) -> HubCheckpointRecipe:
    """Run steps 1-3 on ``name``'s training checkpoints (Pythia, OLMo-1B-0724 or OLMo-2; see the module's docstring).

    The probe is built once from the first checkpoint's tokenizer (the same tokens at every checkpoint);
    ``load_kwargs`` go to :func:`~tutorial_lib.zoo.loading.load_model` (``dtype=`` ...)."""
    entry = hub_models.find(name)
    if entry is None or entry.checkpoints is None:
        raise ValueError(f"{name!r} has no training checkpoints; Pythia (pythia-70m ...), OLMo-1B-0724 "
                         "(olmo-1b-0724) and OLMo-2 (olmo-2-1b) have them")
    chosen = pick_checkpoints(training_checkpoints(name), n_checkpoints, checkpoints)
    if len(chosen) < 2:
        raise ValueError(f"step 1's integral needs at least 2 distinct checkpoints; got {chosen}")
    prs, probe, model = [], None, None
    for i, (step, revision) in enumerate(chosen):
        if verbose:
            print(f"checkpoint {i + 1}/{len(chosen)}: {entry.official} at {revision}")
        del model  # one model in memory at a time
        model = load_model(name, device=device, verbose=False, revision=revision, **load_kwargs)
        if probe is None:
            probe = model_probe(model, n=probe_n, seq_len=seq_len)
        prs.append(head_participation_ratios(model, probe).float().cpu())
    tokens = [tokens_seen(entry.checkpoints, s, r) for s, r in chosen]
    pr = torch.stack(prs)
    final = induction_minority(model, probe, n_control_seeds=n_control_seeds)
    return HubCheckpointRecipe(entry.official, [s for s, _ in chosen], [r for _, r in chosen], tokens, pr,
                               pr_integral(pr, tokens), final, int(probe.tokens.shape[0]))
