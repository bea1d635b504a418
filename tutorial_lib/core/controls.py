"""Honest controls: random circuits matched in size or in layers, upper bounds, permutation tests.

A circuit's ablation effect means little alone: ablating *any* handful of components hurts a small
model. Each finding in the course is therefore set against a control drawn with a seed:

* :func:`size_matched_random` -- the same number of heads and of MLPs, drawn from outside the circuit
  (Li & Subramani's control for S_P).
* :func:`layer_matched_random` -- the same number of heads in each layer, none of them selected
  (Xu's matched-random control for spectral candidates).
* :func:`layer_upper_bound` -- every head of the layers the circuit touches.
* :func:`paired_permutation_test` -- is the circuit's per-example drop larger than the control's?
"""
from __future__ import annotations

import math
from collections import Counter
from typing import Iterable, Sequence

import numpy as np
import torch

from .circuits import Circuit
from .components import all_heads, all_mlps, parse_many


def _names(circuit) -> list[str]:
    return sorted(circuit.nodes) if isinstance(circuit, Circuit) else [str(c) for c in parse_many(list(circuit))]


CONTROL_MATCHES = ("type", "count", "auto")


def size_matched_random(model, circuit: "Circuit | Iterable[str]", seed: int = 0, match: str = "type",
                        exclude: Iterable[str] = ()) -> Circuit:
    """A random circuit of ``circuit``'s size, disjoint from it (seeded): the course's one size-matched control.
    ``exclude`` names further components the control must not contain (a component taken out of a circuit on
    purpose, so that the control of the rest cannot draw it).

    ``match="type"`` (default; Li & Subramani's control): as many heads and as many MLPs; raises
    ``ValueError`` if too few are left outside the circuit. ``"count"``: as many components, heads or MLPs
    alike. ``"auto"``: ``"type"`` when possible; otherwise the missing MLPs (or heads) are replaced by the
    other kind -- a small model often leaves no MLP outside the circuit -- a *weaker* control than the
    paper's. ``control.meta["match"]`` says which was drawn (``"type"``, ``"count"`` or ``"auto: ..."``);
    :func:`is_type_matched` reads it.

    >>> size_matched_random(model, Circuit(["m0", "m1", "a0.h1"]), seed=0, match="auto").meta["match"]  # doctest: +SKIP
    'auto: 2 MLP(s) replaced by heads (only 0 MLP(s) outside the circuit)'
    """
    if match not in CONTROL_MATCHES:
        raise ValueError(f"unknown match {match!r}; accepted: {CONTROL_MATCHES}")
    names = set(_names(circuit))
    n_heads = sum(n.startswith("a") for n in names)
    n_mlps = sum(n.startswith("m") for n in names)
    banned = names | set(_names(list(exclude)))
    pool_h = [h for h in all_heads(model) if h not in banned]
    pool_m = [m for m in all_mlps(model) if m not in banned]
    rng = np.random.default_rng(seed)
    draw = lambda pool, k: [pool[i] for i in rng.choice(len(pool), k, replace=False)] if k else []  # noqa: E731
    if match == "type" or (match == "auto" and n_heads <= len(pool_h) and n_mlps <= len(pool_m)):
        if n_heads > len(pool_h) or n_mlps > len(pool_m):
            raise ValueError(
                f"cannot draw a size-matched control: need {n_heads} heads and {n_mlps} MLPs outside the circuit, "
                f"but only {len(pool_h)} heads and {len(pool_m)} MLPs are left"
            )
        heads, mlps = draw(pool_h, n_heads), draw(pool_m, n_mlps)
        return Circuit(heads + mlps, name=f"random(size-matched, seed={seed})", meta={"match": "type"})
    if n_heads + n_mlps > len(pool_h) + len(pool_m):
        raise ValueError(f"cannot draw a control of {n_heads + n_mlps} components: only "
                         f"{len(pool_h) + len(pool_m)} are outside the circuit")
    if match == "count":
        return Circuit(draw(pool_h + pool_m, n_heads + n_mlps), name=f"random(size-matched, seed={seed})",
                       meta={"match": "count"})
    k_m = min(n_mlps, len(pool_m))
    k_h = n_heads + n_mlps - k_m
    if k_h > len(pool_h):  # too few heads: fill with MLPs instead
        k_h, k_m = len(pool_h), n_heads + n_mlps - len(pool_h)
    chosen = draw(pool_h, k_h) + draw(pool_m, k_m)
    note = (f"auto: {n_mlps - k_m} MLP(s) replaced by heads (only {len(pool_m)} MLP(s) outside the circuit)" if k_m < n_mlps
            else f"auto: {n_heads - k_h} head(s) replaced by MLPs (only {len(pool_h)} head(s) outside the circuit)")
    return Circuit(chosen, name=f"random(size-matched, seed={seed})", meta={"match": note})


def is_type_matched(control: Circuit) -> bool:
    """True when ``control`` (from :func:`size_matched_random`) has as many heads and MLPs as its circuit."""
    return control.meta.get("match") == "type"


def layer_matched_random(model, circuit: "Circuit | Iterable[str]", seed: int = 0) -> Circuit:
    """A random set of heads with the same count per layer as ``circuit``'s heads, none of them in it."""
    names = set(_names(circuit))
    per_layer = Counter(c.layer for c in parse_many(names) if c.kind == "head")
    rng = np.random.default_rng(seed)
    chosen = []
    for layer, k in sorted(per_layer.items()):
        pool = [f"a{layer}.h{h}" for h in range(model.cfg.n_heads) if f"a{layer}.h{h}" not in names]
        if k > len(pool):
            raise ValueError(
                f"cannot draw a layer-matched control: layer {layer} has {k} selected heads but only "
                f"{len(pool)} unselected ones"
            )
        chosen += list(rng.choice(pool, size=k, replace=False))
    return Circuit(chosen, name=f"random(layer-matched, seed={seed})")


def layer_upper_bound(model, circuit: "Circuit | Iterable[str]") -> Circuit:
    """Every head in every layer that ``circuit`` has a head in."""
    layers = sorted({c.layer for c in parse_many(_names(circuit)) if c.kind == "head"})
    return Circuit([f"a{l}.h{h}" for l in layers for h in range(model.cfg.n_heads)], name="upper bound (all heads of those layers)")


def paired_permutation_test(
    a: "Sequence[float] | torch.Tensor",
    b: "Sequence[float] | torch.Tensor",
    n_permutations: int = 10_000,
    seed: int = 0,
    alternative: str = "greater",
) -> float:
    """p-value that mean(a) exceeds mean(b) by chance, for paired per-example values.

    Each permutation swaps the pair (a_i, b_i) with probability 1/2; the p-value is
    ``(#{permuted statistic >= observed} + 1) / (n_permutations + 1)``. ``alternative`` is
    ``"greater"`` (a > b) or ``"two-sided"``.
    """
    a = np.asarray(torch.as_tensor(a, dtype=torch.float64).cpu())
    b = np.asarray(torch.as_tensor(b, dtype=torch.float64).cpu())
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"paired test needs two 1-D arrays of equal length, got shapes {a.shape} and {b.shape}")
    if alternative not in ("greater", "two-sided"):
        raise ValueError(f"alternative must be 'greater' or 'two-sided', got {alternative!r}")
    d = a - b
    observed = d.mean()
    rng = np.random.default_rng(seed)
    signs = rng.choice([-1.0, 1.0], size=(n_permutations, d.size))
    stats = (signs * d).mean(axis=1)
    if alternative == "greater":
        exceed = int((stats >= observed - 1e-12).sum())
    else:
        exceed = int((np.abs(stats) >= abs(observed) - 1e-12).sum())
    return (exceed + 1) / (n_permutations + 1)


def possible_draws(model, circuit: "Circuit | Iterable[str]", kind: str = "type", exclude: Iterable[str] = ()) -> int:
    """How many distinct controls of ``kind`` could be drawn for ``circuit`` (0: none can): the room a control has.

    ``"type"``: :func:`size_matched_random` with ``match="type"`` (as many heads and MLPs, from outside the circuit
    and ``exclude``); ``"count"``: as many components of either kind; ``"layer"``: :func:`layer_matched_random`.
    A control with a handful of possible draws cannot tell a circuit from the components around it: a claim
    against it is not testable (:mod:`tutorial_lib.course.claims`).

    >>> from math import comb
    >>> comb(3, 1) * comb(2, 2)  # 3 heads and 2 MLPs outside; the circuit has 1 head and 2 MLPs
    3
    """
    names = set(_names(circuit))
    banned = names | set(_names(list(exclude)))
    heads = [c for c in parse_many(names) if c.kind == "head"]
    pool_h = [h for h in all_heads(model) if h not in banned]
    pool_m = [m for m in all_mlps(model) if m not in banned]
    n_m = sum(n.startswith("m") for n in names)
    if kind == "type":
        return math.comb(len(pool_h), len(heads)) * math.comb(len(pool_m), n_m)
    if kind == "count":
        return math.comb(len(pool_h) + len(pool_m), len(heads) + n_m)
    if kind == "layer":
        per_layer = Counter(c.layer for c in heads)
        out = 1
        for layer, k in per_layer.items():
            free = sum(1 for h in range(model.cfg.n_heads) if f"a{layer}.h{h}" not in banned)
            out *= math.comb(free, k)
        return out
    raise ValueError(f"unknown control kind {kind!r}; accepted: 'type', 'count', 'layer'")


def bootstrap_interval(values: "Sequence[float] | torch.Tensor", n_boot: int = 2000, seed: int = 0,
                       level: float = 0.95) -> tuple[float, float]:
    """The percentile bootstrap interval of the mean of ``values`` (per-example or per-seed numbers, e.g. paired
    differences), resampled with a seeded generator: ``(low, high)``.

    >>> lo, hi = bootstrap_interval([1.0, 1.2, 0.9, 1.1, 1.0, 0.8])
    >>> 0.8 < lo < 1.0 < hi < 1.2
    True
    """
    v = np.asarray(torch.as_tensor(values, dtype=torch.float64).cpu()).ravel()
    if v.size < 2:
        raise ValueError(f"a bootstrap needs at least 2 values, got {v.size}")
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level!r}")
    rng = np.random.default_rng(seed)
    means = v[rng.integers(0, v.size, size=(n_boot, v.size))].mean(axis=1)
    a = (1 - level) / 2
    return float(np.quantile(means, a)), float(np.quantile(means, 1 - a))
