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

from collections import Counter
from typing import Iterable, Sequence

import numpy as np
import torch

from .circuits import Circuit
from .components import all_heads, all_mlps, parse_many


def _names(circuit) -> list[str]:
    return sorted(circuit.nodes) if isinstance(circuit, Circuit) else [str(c) for c in parse_many(list(circuit))]


def size_matched_random(model, circuit: "Circuit | Iterable[str]", seed: int = 0) -> Circuit:
    """A random circuit with as many heads and as many MLPs as ``circuit``, disjoint from it.

    Raises ``ValueError`` if there are not enough components outside the circuit to draw from.
    """
    names = set(_names(circuit))
    n_heads = sum(n.startswith("a") for n in names)
    n_mlps = sum(n.startswith("m") for n in names)
    pool_h = [h for h in all_heads(model) if h not in names]
    pool_m = [m for m in all_mlps(model) if m not in names]
    if n_heads > len(pool_h) or n_mlps > len(pool_m):
        raise ValueError(
            f"cannot draw a size-matched control: need {n_heads} heads and {n_mlps} MLPs outside the circuit, "
            f"but only {len(pool_h)} heads and {len(pool_m)} MLPs are left"
        )
    rng = np.random.default_rng(seed)
    heads = list(rng.choice(pool_h, size=n_heads, replace=False)) if n_heads else []
    mlps = list(rng.choice(pool_m, size=n_mlps, replace=False)) if n_mlps else []
    return Circuit(heads + mlps, name=f"random(size-matched, seed={seed})")


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
