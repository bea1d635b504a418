"""Checks for notebook 03 (the spectral recipe: participation ratio, induction selectivity, matched control)."""
from __future__ import annotations

from collections import Counter
from typing import Callable

import torch

from .common import ExerciseError, as_number, call_exercise, compare, compare_number, passed


def _pr_slips(X: torch.Tensor):
    """The usual wrong participation ratios of ``X``, as ``(message, function)`` for :func:`compare_number`."""
    from ...methods.spectral import participation_ratio as ref

    def spectrum():
        return torch.linalg.svdvals(X.double())

    def exp_entropy(p):
        p = p[p > 0]
        return float(torch.exp(-(p * p.log()).sum()))

    def entropy():
        s2 = spectrum() ** 2
        p = s2 / s2.sum()
        p = p[p > 0]
        return float(-(p * p.log()).sum())

    return [
        ("you centred X (subtracted its mean row): this PR is taken of X as it is, not mean-centred (the public "
         "code's choice)", lambda: ref(X - X.mean(0))),
        ("that is the order-2 participation ratio (Σσ²)² / Σσ⁴: the exercise asks for the exp-entropy one, "
         "exp(-Σ p log p) with p = σ² / Σσ²", lambda: ref(X, "order2")),
        ("p must come from the *squared* singular values: p_i = σ_i² / Σ σ_j², not σ_i / Σ σ_j",
         lambda: exp_entropy(spectrum() / spectrum().sum())),
        ("that is the entropy -Σ p log p itself: the PR is its exponential, exp(-Σ p log p)", entropy),
        ("that is the number of nonzero singular values (the rank): the PR weighs each direction by its share p_i "
         "of Σσ², exp(-Σ p log p)", lambda: float((spectrum() > 1e-6 * spectrum().max()).sum())),
    ]


def check_participation_ratio(participation_ratio: Callable) -> None:
    """``participation_ratio(X)`` must equal ``exp(entropy of σ²/Σσ²)`` (not mean-centred) on several matrices."""
    from ...methods.spectral import participation_ratio as ref

    g = torch.Generator().manual_seed(0)
    cases = {
        "identity 3×3 (3 equal directions)": torch.eye(3),
        "rank-1 matrix": torch.randn(20, 1, generator=g) @ torch.randn(1, 8, generator=g),
        "random 40×6": torch.randn(40, 6, generator=g),
        "random 30×5 with an offset (not centred)": torch.randn(30, 5, generator=g) + 3.0,
        "uneven spectrum": torch.randn(50, 4, generator=g) * torch.tensor([5.0, 2.0, 1.0, 0.1]),
    }
    for what, X in cases.items():
        got = call_exercise(participation_ratio, X.clone())
        if got is None:
            raise ExerciseError("participation_ratio returned None: return the PR as a float")
        compare_number(as_number(got, f"PR of the {what}"), ref(X), f"PR of the {what}", atol=1e-3, rtol=1e-3,
                       wrong=_pr_slips(X), fmt=".4g")
    passed("check_participation_ratio", "PR = exp(entropy of the normalised squared singular values)")


def _selectivity_slips(att: torch.Tensor, a_pos: torch.Tensor, base_pos: torch.Tensor):
    """The usual wrong induction selectivities, as ``(message, function)`` for :func:`compare`."""
    rows = torch.arange(att.shape[0])
    idx = base_pos[:, None, None, :].expand(-1, att.shape[1], att.shape[2], -1)

    def at(pos):
        return att[rows, :, :, pos]  # [n, L, H]

    def base(per_example=False):
        b = att.gather(3, idx).mean(3)
        return b if per_example else b.mean(0)

    return [
        ("you read the attention to a_pos, the earlier A itself (the duplicate-token target): induction attends to "
         "the token after it, a_pos + 1", lambda: at(a_pos).mean(0) / base().clamp(min=1e-8)),
        ("the ratio is upside down: selectivity is the target attention divided by the baseline attention",
         lambda: base() / at(a_pos + 1).mean(0).clamp(min=1e-8)),
        ("you averaged the per-example ratios: divide the mean (over examples) of the target attention by the "
         "mean of the baseline attention -- a ratio of means, as the library does",
         lambda: (at(a_pos + 1) / base(per_example=True).clamp(min=1e-8)).mean(0)),
        ("the baseline is the attention to base_pos, averaged over its positions: you summed over them",
         lambda: at(a_pos + 1).mean(0) / att.gather(3, idx).sum(3).mean(0).clamp(min=1e-8)),
        ("you divided by 1/T, the uniform baseline of the paper's text: this exercise uses the public code's, the "
         "mean attention on the random positions base_pos", lambda: at(a_pos + 1).mean(0) * att.shape[-1]),
    ]


def check_induction_selectivity(induction_selectivity: Callable, model, probe, n_baseline: int = 50, seed: int = 0) -> None:
    """``induction_selectivity(att, a_pos, base_pos)`` must match :func:`tutorial_lib.selectivity.selectivity`."""
    from ...methods.selectivity import baseline_positions, selectivity
    from ...studies.spectral import query_attention

    att = query_attention(model, probe)
    base = baseline_positions(probe, n_baseline, seed)
    got = call_exercise(induction_selectivity, att.clone(), probe.a_pos.clone(), base.clone())
    if got is None:
        raise ExerciseError("induction_selectivity returned None: return a [n_layers, n_heads] tensor")
    expected = selectivity(model, probe, ("induction",), n_baseline, seed)["induction"]
    compare(got, expected, "induction selectivity [n_layers, n_heads]", atol=1e-3, rtol=1e-3,
            wrong=_selectivity_slips(att.float().cpu(), probe.a_pos.cpu(), base.cpu()), dims=("layer", "head"))
    passed("check_induction_selectivity", f"best head {float(expected.max()):.0f}× its baseline")


def check_matched_control(layer_matched_control: Callable, n_layers: int = 2, n_heads: int = 8) -> None:
    """``layer_matched_control(heads, n_heads, seed)`` must draw, per layer, as many non-candidate heads."""
    cases = [["a1.h0", "a1.h3"], ["a0.h2", "a1.h1", "a1.h5"], ["a0.h0"]]
    for heads in cases:
        draws = []
        for seed in range(6):
            got = call_exercise(layer_matched_control, list(heads), n_heads, seed)
            if got is None:
                raise ExerciseError("layer_matched_control returned None: return a list of head names like 'a1.h2'")
            got = [str(h) for h in got]
            if len(set(got)) != len(got):
                raise ExerciseError(f"control for {heads} (seed {seed}) repeats a head: {got}")
            overlap = set(got) & set(heads)
            if overlap:
                raise ExerciseError(f"control for {heads} (seed {seed}) contains candidate head(s) {sorted(overlap)}")
            want = Counter(int(h.split(".")[0][1:]) for h in heads)
            have = Counter(int(h.split(".")[0][1:]) for h in got)
            if want != have:
                raise ExerciseError(f"control for {heads} (seed {seed}) has heads per layer {dict(have)}, expected {dict(want)}")
            bad = [h for h in got if not 0 <= int(h.split(".h")[1]) < n_heads]
            if bad:
                raise ExerciseError(f"control heads {bad} do not exist in a model with {n_heads} heads per layer")
            again = [str(h) for h in call_exercise(layer_matched_control, list(heads), n_heads, seed)]
            if sorted(again) != sorted(got):
                raise ExerciseError(f"the same seed ({seed}) gave different controls: {got} then {again}; draw from a seeded generator")
            draws.append(tuple(sorted(got)))
        if len(set(draws)) < 2:
            raise ExerciseError(f"six seeds all gave the same control {draws[0]} for {heads}: the draw must depend on the seed")
    passed("check_matched_control", "same heads per layer, never a candidate, seeded")
