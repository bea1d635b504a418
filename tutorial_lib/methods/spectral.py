"""Step 1 of the spectral recipe (Xu 2026): the participation ratio of each head over training.

For one head, stack its output at the query position over a probe batch into a matrix ``X``
(``[n_examples, d_head]``: the head's ``hook_z`` -- its output *before* ``W_O``, which is what the
public code takes; ``space="result"`` uses ``z @ W_O[head]``, ``[n_examples, d_model]``, instead).
``X`` is **not** mean-centred. Its participation ratio (PR) is an effective rank:

* ``"exp_entropy"`` (the public code): singular values ``σ``, ``p_i = σ_i² / Σ σ_j²``,
  ``PR = exp(-Σ p_i log p_i)`` (terms with ``p_i = 0`` count 0).
* ``"order2"`` (the paper summary's formula): ``PR = (Σ λ)² / Σ λ²`` for the eigenvalues ``λ`` of
  the second-moment matrix ``XᵀX / n`` (``λ_i = σ_i² / n``).

On every family the papers used (grouped-query attention, QK-norm, rotary, soft caps, local windows, sandwich and
post norms, parallel blocks, experts) ``X`` is the query head's own ``hook_z`` row: no key/value group is read and
no query ``q`` either, so QK-norm enters only through the attention pattern, after the norm, as the model computes
it (:func:`~tutorial_lib.methods.selectivity.collect_query_activations`). A float64 model's PRs are computed from
float64 outputs.

Both give ``k`` for ``k`` equal singular values and ≈ 1 when one direction dominates. A head that
writes the same vector for every example has PR ≈ 1; a head whose output depends on the content
(an induction head copying a different ``B`` each time) has a high PR. An all-zero ``X`` has no
spectrum: its PR is ``nan``.

Over training, a head's *integral* ``I = Σ_t max(PR_t − 1, 0) Δ log(tokens_t)`` (trapezoid rule over
checkpoints, ``x = log tokens seen``) ranks heads that held a high PR for long. The ranking says a
head is doing *some* content-dependent work, not which: step 2 (:mod:`tutorial_lib.methods.selectivity`)
says which, step 3 (:mod:`tutorial_lib.methods.head_ablation`) tests it causally.

>>> X = torch.eye(3)                                    # three equal singular values
>>> round(participation_ratio(X), 6), round(participation_ratio(X, "order2"), 6)
(3.0, 3.0)
"""
from __future__ import annotations

import math
from contextlib import contextmanager
from typing import Optional, Sequence

import torch
from jaxtyping import Float, Int
from torch import Tensor
from ..core.progress import tqdm

from .selectivity import PATTERNS, Baseline, PlantedPairProbe, collect_query_activations, selectivity

PR_DEFINITIONS = ("exp_entropy", "order2")
SPACES = ("z", "result")
Checkpoint = tuple  # (step: int, tokens_seen: int, state_dict: dict[str, Tensor])


def _check_definition(definition: str) -> None:
    if definition not in PR_DEFINITIONS:
        raise ValueError(f"unknown PR definition {definition!r}; accepted: {PR_DEFINITIONS}")


def pr_from_singular_values(s: Float[Tensor, "... k"], definition: str = "exp_entropy") -> Float[Tensor, "..."]:
    """PR from singular values (vectorised over leading axes); ``nan`` where all are zero."""
    _check_definition(definition)
    s2 = s.double() ** 2
    total = s2.sum(-1)
    if definition == "exp_entropy":
        p = s2 / total[..., None]
        pr = torch.exp(-torch.xlogy(p, p).sum(-1))
    else:
        pr = total**2 / (s2**2).sum(-1)
    return torch.where(total > 0, pr, torch.full_like(pr, float("nan")))


def participation_ratio(X: Float[Tensor, "n d"], definition: str = "exp_entropy") -> float:
    """The participation ratio of one matrix (rows = examples), not mean-centred.

    >>> participation_ratio(torch.diag(torch.tensor([10.0, 1e-4, 1e-4])))  # doctest: +ELLIPSIS
    1.000...
    """
    if not isinstance(X, Tensor) or X.ndim != 2 or X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"X must be a non-empty 2-D tensor [n_examples, dim], got {getattr(X, 'shape', type(X))}")
    return float(pr_from_singular_values(torch.linalg.svdvals(X.double()), definition))


def _as_tokens_and_query(probe) -> tuple[Tensor, "int | Tensor"]:
    if isinstance(probe, PlantedPairProbe):
        return probe.tokens, probe.query_pos
    if isinstance(probe, Tensor) and probe.ndim == 2:
        return probe, probe.shape[1] - 1
    raise ValueError(f"probe must be a PlantedPairProbe or a token tensor [n, pos], got {type(probe).__name__}")


def head_outputs(
    model, z: Float[Tensor, "n n_layers n_heads d_head"], space: str = "z"
) -> Float[Tensor, "n n_layers n_heads d"]:
    """Per-head outputs in ``space``: ``"z"`` returns ``z``; ``"result"`` maps through ``W_O`` (head ``h``'s own
    slice ``W_O[h]``, a query head under grouped-query attention): ``z_h @ W_O[h]``, the head's share of the
    summed attention output *before* any norm on that sum (Gemma 2's ``ln1_post``, OLMo-2's ``ln1``), i.e.
    ``hook_result``."""
    if space not in SPACES:
        raise ValueError(f"unknown space {space!r}; accepted: {SPACES}")
    if space == "z":
        return z
    W_O = torch.stack([b.attn.W_O.detach() for b in model.blocks]).to(z.device, z.dtype)  # [L, H, d_head, d_model]
    return torch.einsum("nlhd,lhdm->nlhm", z, W_O)


def prs_from_outputs(X: Float[Tensor, "n n_layers n_heads d"], definition: str = "exp_entropy") -> Float[Tensor, "n_layers n_heads"]:
    """PR of every head at once from stacked per-head outputs."""
    s = torch.linalg.svdvals(X.double().permute(1, 2, 0, 3))  # [L, H, min(n, d)]
    return pr_from_singular_values(s, definition).float()


def head_participation_ratios(
    model,
    tokens: "Int[Tensor, 'n pos'] | PlantedPairProbe",
    query_pos: "int | Int[Tensor, 'n'] | None" = None,
    definition: str = "exp_entropy",
    space: str = "z",
    fwd_hooks: Sequence = (),
    batch_size: int = 64,
) -> Float[Tensor, "n_layers n_heads"]:
    """PR of every head's output at ``query_pos`` over the batch ``tokens``.

    ``tokens`` may be a :class:`PlantedPairProbe` (then ``query_pos`` defaults to its ``T-1``), or a
    token tensor (``query_pos`` defaults to the last position).

    >>> pr = head_participation_ratios(model, probe)   # doctest: +SKIP
    >>> pr.shape                                        # doctest: +SKIP
    torch.Size([2, 4])
    """
    _check_definition(definition)
    if space not in SPACES:
        raise ValueError(f"unknown space {space!r}; accepted: {SPACES}")
    toks, q = _as_tokens_and_query(tokens)
    q = q if query_pos is None else query_pos
    zs = []
    collect_query_activations(model, toks, q, lambda rows, z, p: zs.append(z), True, False, fwd_hooks, batch_size)
    return prs_from_outputs(head_outputs(model, torch.cat(zs), space).cpu(), definition)


@contextmanager
def loaded_weights(model, state_dict: dict):
    """Temporarily load ``state_dict`` into ``model``; the original weights come back on exit."""
    original = {k: v.detach().clone() for k, v in model.state_dict().items()}
    was_training = model.training
    try:
        model.load_state_dict(state_dict)
        model.eval()
        yield model
    finally:
        model.load_state_dict(original)
        model.train(was_training)


def as_checkpoint_list(checkpoints) -> list[Checkpoint]:
    """``[(step, tokens_seen, state_dict), ...]`` sorted by step.

    Accepts that list itself or a trainer result with ``.checkpoints`` (``{step: state_dict}``) and
    ``.tokens_seen`` (``{step: int}``), such as :class:`tutorial_lib.zoo.train.TrainResult`.
    """
    if hasattr(checkpoints, "checkpoints") and hasattr(checkpoints, "tokens_seen"):
        res = checkpoints
        checkpoints = [(s, res.tokens_seen[s], res.checkpoints[s]) for s in sorted(res.checkpoints)]
    checkpoints = list(checkpoints or [])
    if not checkpoints:
        raise ValueError("checkpoints is empty; pass a list of (step, tokens_seen, state_dict) or a TrainResult")
    for c in checkpoints:
        if not (isinstance(c, (tuple, list)) and len(c) == 3 and isinstance(c[2], dict)):
            raise ValueError(f"each checkpoint must be (step, tokens_seen, state_dict), got {type(c).__name__} of length {len(c) if hasattr(c, '__len__') else '?'}")
    return sorted(checkpoints, key=lambda c: c[0])


def pr_trajectory(
    checkpoints: "Sequence[Checkpoint] | TrainResult",
    model,
    probe: "PlantedPairProbe | Int[Tensor, 'n pos']",
    definition: str = "exp_entropy",
    space: str = "z",
    batch_size: int = 64,
) -> Float[Tensor, "n_ckpt n_layers n_heads"]:
    """PR of every head at every checkpoint (``model`` is only borrowed: its weights are restored)."""
    out = []
    for step, _, sd in tqdm(as_checkpoint_list(checkpoints), desc="PR over checkpoints", leave=False):
        with loaded_weights(model, sd):
            out.append(head_participation_ratios(model, probe, None, definition, space, batch_size=batch_size))
    return torch.stack(out)


def selectivity_trajectory(
    checkpoints: "Sequence[Checkpoint] | TrainResult",
    model,
    probe: PlantedPairProbe,
    patterns: Sequence[str] = PATTERNS,
    n_baseline: int = 50,
    seed: int = 0,
    batch_size: int = 64,
    baseline: "str | Baseline" = Baseline.RANDOM_POSITIONS,
) -> dict[str, Float[Tensor, "n_ckpt n_layers n_heads"]]:
    """Selectivity of every head for each pattern at every checkpoint (``baseline``: see
    :class:`~tutorial_lib.methods.selectivity.Baseline`)."""
    per = []
    for _, _, sd in tqdm(as_checkpoint_list(checkpoints), desc="selectivity over checkpoints", leave=False):
        with loaded_weights(model, sd):
            per.append(selectivity(model, probe, patterns, n_baseline, seed, batch_size=batch_size, baseline=baseline))
    return {p: torch.stack([s[p] for s in per]) for p in patterns}


def pr_integral(
    pr: Float[Tensor, "n_ckpt n_layers n_heads"],
    tokens_seen: "Sequence[float] | Tensor",
    x: str = "log_tokens",
) -> Float[Tensor, "n_layers n_heads"]:
    """``I(L,H)``: the trapezoid integral of ``max(PR − 1, 0)`` over checkpoints.

    ``x="log_tokens"`` integrates over ``log(tokens_seen)`` (natural log). A checkpoint with
    ``tokens_seen == 0`` (the initial weights) has no place on a log axis and is left out.
    ``x="tokens"`` integrates over ``tokens_seen`` itself (pass steps to integrate over steps, as the
    public code's Pythia scripts do). ``x`` must be strictly increasing; ``nan`` PRs give ``nan``.

    >>> pr = torch.tensor([2.0, 3.0, 1.0]).reshape(3, 1, 1)
    >>> pr_integral(pr, [1, math.e, math.e**3])  # (1+2)/2*1 + (2+0)/2*2
    tensor([[3.5000]])
    """
    if x not in ("log_tokens", "tokens"):
        raise ValueError(f"unknown x {x!r}; accepted: 'log_tokens', 'tokens'")
    t = torch.as_tensor(tokens_seen, dtype=torch.float64).flatten()
    if pr.ndim != 3 or pr.shape[0] != t.numel():
        raise ValueError(f"pr must be [n_ckpt, n_layers, n_heads] with n_ckpt = len(tokens_seen) = {t.numel()}, got {tuple(pr.shape)}")
    if (t < 0).any():
        raise ValueError(f"tokens_seen must be >= 0, got {t.tolist()}")
    f = (pr.double() - 1).clamp(min=0)
    if x == "log_tokens":
        keep = t > 0
        f, xs = f[keep], torch.log(t[keep])
    else:
        xs = t
    if xs.numel() < 2:
        raise ValueError("the integral needs at least two checkpoints (with tokens_seen > 0 for x='log_tokens')")
    dx = xs[1:] - xs[:-1]
    if (dx <= 0).any():
        raise ValueError(f"x must be strictly increasing over checkpoints, got {xs.tolist()}")
    return (((f[1:] + f[:-1]) / 2) * dx[:, None, None]).sum(0).float()


def rank_heads(score: Float[Tensor, "n_layers n_heads"], k: Optional[int] = None) -> list[tuple[str, float]]:
    """Heads sorted by ``score`` (highest first; ``nan`` last): ``[("a1.h2", 12.3), ...]``."""
    if score.ndim != 2:
        raise ValueError(f"score must be [n_layers, n_heads], got {tuple(score.shape)}")
    items = [(f"a{l}.h{h}", float(score[l, h])) for l in range(score.shape[0]) for h in range(score.shape[1])]
    items.sort(key=lambda kv: (math.isnan(kv[1]), -kv[1] if not math.isnan(kv[1]) else 0.0))
    return items if k is None else items[:k]


def emergence_timing(
    pr: Float[Tensor, "n_ckpt n_layers n_heads"],
    induction_sel: Float[Tensor, "n_ckpt n_layers n_heads"],
    pr_fraction: float = 0.5,
    sel_threshold: float = 50.0,
    baseline: str = "min",
) -> dict[str, tuple[Optional[int], Optional[int]]]:
    """For each head, ``(pr_rise_index, selectivity_index)``: does the PR rise before selectivity?

    * ``selectivity_index``: the first checkpoint with ``induction_sel >= sel_threshold``.
    * ``pr_rise_index`` with ``baseline="one"``: the first checkpoint with
      ``PR − 1 >= pr_fraction · (PR_final − 1)``. Random-init heads often start with a high PR that
      collapses before it rises, which makes that index 0; ``baseline="min"`` (default) instead
      measures the rise from the trajectory's minimum ``m``: the first checkpoint *at or after the
      minimum* with ``PR − m >= pr_fraction · (PR_final − m)``.

    Either index is ``None`` when the crossing never happens (e.g. ``PR_final`` is the minimum).
    """
    if pr.shape != induction_sel.shape or pr.ndim != 3:
        raise ValueError(f"pr and induction_sel must both be [n_ckpt, n_layers, n_heads], got {tuple(pr.shape)} and {tuple(induction_sel.shape)}")
    if baseline not in ("min", "one"):
        raise ValueError(f"baseline must be 'min' or 'one', got {baseline!r}")
    if not 0 < pr_fraction <= 1:
        raise ValueError(f"pr_fraction must be in (0, 1], got {pr_fraction}")
    out = {}
    for l in range(pr.shape[1]):
        for h in range(pr.shape[2]):
            traj, sel = pr[:, l, h].double(), induction_sel[:, l, h]
            start = int(traj.argmin()) if baseline == "min" else 0
            ref = float(traj[start]) if baseline == "min" else 1.0
            rise_to = float(traj[-1]) - ref
            pr_idx = None
            if rise_to > 0:
                hits = ((traj[start:] - ref) >= pr_fraction * rise_to).nonzero()
                pr_idx = start + int(hits[0, 0]) if len(hits) else None
            sel_hits = (sel >= sel_threshold).nonzero()
            out[f"a{l}.h{h}"] = (pr_idx, int(sel_hits[0, 0]) if len(sel_hits) else None)
    return out
