"""Checks for notebook 03 (the spectral recipe: participation ratio, induction selectivity, matched control)."""
from __future__ import annotations

from collections import Counter
from typing import Callable

import torch

from .common import ExerciseError, call_exercise, compare, passed


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
        compare(torch.as_tensor(float(got)), torch.as_tensor(ref(X)), f"PR of the {what}", atol=1e-3, rtol=1e-3)
    passed("check_participation_ratio", "PR = exp(entropy of the normalised squared singular values)")


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
    compare(got, expected, "induction selectivity [n_layers, n_heads]", atol=1e-3, rtol=1e-3)
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
