"""Fair predictions: one rule for when a learner's prediction counts as right.

A prediction is scored against what the run measured, and the run has noise: resampling its prompts moves its
numbers. So an answer counts as right when **the run cannot tell it from its own answer**:

* a choice (which MLP, which method) is right when the 95% bootstrap interval, over the examples, of its mean
  difference from the best option includes 0, or when it and the best both sit at the measurement's bound (within
  :data:`~tutorial_lib.methods.power.BOUND_ROOM` of the full range: a saturated sweep cannot rank them)
  (:func:`tied_with_best`);
* a ranking method (best AUROC) is right when the same paired interval, over the ranked items (the circuit's
  items and the others resampled separately), of its AUROC's difference from the best includes 0
  (:func:`tied_auroc`);
* a number is right when it lies inside the 95% bootstrap interval of the run's mean (:func:`interval_tolerance`
  gives that interval's half-width as the tolerance).
* a count (how many heads pass a filter) is right inside the 95% interval of the count over resampled examples
  (:func:`bootstrap_range`, its ends rounded outward by :func:`whole_numbers_in`);
* an answer only retraining could resample (a count of cells, per seed) ties with the best when their ranges over the
  seeds the notebook has overlap (:func:`tied_over_runs`); a number read per seed (where random circuits first reach a
  level) is right between the seeds' lowest and highest, widened to the next points of the grid it was read on
  (:func:`runs_range`);
* a yes/no question about where numbers lie ("does every task beat random by 0.2?") accepts each answer some value
  inside the intervals allows (:func:`answers_every`): both, when an interval straddles the threshold;
* a set (which tasks pass) is right up to the items whose interval straddles the test's threshold (the ``unsure``
  items, either way).

The intervals are paired (every option resampled with the same examples) and seeded, so a rerun says the same.
:data:`RULE` is the sentence a notebook prints when it scores a prediction this way.
"""
from __future__ import annotations

from typing import Mapping

import numpy as np
import torch

RULE = ("counted right when the run cannot tell it from its own answer: inside the 95% bootstrap interval, or at "
        "the same saturated bound")
LEVEL = 0.95
N_BOOT = 2000


def _as_rows(per_example: Mapping[str, "torch.Tensor | list"]) -> tuple[list[str], np.ndarray]:
    if not per_example:
        raise ValueError("per_example is empty: give {option: per-example values}")
    names = list(per_example)
    rows = [np.asarray(torch.as_tensor(per_example[n], dtype=torch.float64).cpu()).ravel() for n in names]
    sizes = {r.size for r in rows}
    if len(sizes) != 1:
        raise ValueError(f"every option needs one value per example, the same examples; got sizes "
                         f"{dict(zip(names, (r.size for r in rows)))}")
    if sizes.pop() < 2:
        raise ValueError("a bootstrap needs at least 2 examples per option")
    return names, np.stack(rows)


def tied_with_best(per_example: Mapping[str, "torch.Tensor | list"], best: str = "min", seed: int = 0,
                   level: float = LEVEL, n_boot: int = N_BOOT, bound: "float | None" = None) -> set[str]:
    """The options the run cannot tell from the best: the best by mean (``best="min"``: the lowest, e.g. the most
    negative patching effect; ``"max"``: the highest), and every option whose paired bootstrap interval of
    (option − best) over the examples includes 0. With ``bound`` (the most an option can reach, e.g. a patching
    sweep's full range, corrupted minus clean, measured from 0), options within ``BOUND_ROOM`` of it tie with a best
    that is there too: the measurement is saturated and cannot rank them.

    >>> sorted(tied_with_best({"m0": [-1.0, -1.1, -0.9, -1.0], "m1": [-1.02, -1.0, -0.95, -1.01],
    ...                        "m2": [-0.1, 0.0, -0.2, -0.1]}))
    ['m0', 'm1']
    """
    if best not in ("min", "max"):
        raise ValueError(f"best must be 'min' or 'max', got {best!r}")
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level!r}")
    names, rows = _as_rows(per_example)
    means = rows.mean(1)
    top = int(np.argmin(means) if best == "min" else np.argmax(means))
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, rows.shape[1], size=(n_boot, rows.shape[1]))
    diffs = (rows - rows[top])[:, idx].mean(2)  # [options, n_boot]
    a = (1 - level) / 2
    lo, hi = np.quantile(diffs, a, axis=1), np.quantile(diffs, 1 - a, axis=1)
    tied = {n for i, n in enumerate(names) if i == top or lo[i] <= 0 <= hi[i]}
    if bound is not None and abs(bound) > 0:
        from ..methods.power import BOUND_ROOM

        near = {n for i, n in enumerate(names) if abs(means[i] - bound) <= BOUND_ROOM * abs(bound)}
        if names[top] in near:
            tied |= near
    return tied


def interval_tolerance(values: "torch.Tensor | list", seed: int = 0, level: float = LEVEL,
                       n_boot: int = N_BOOT) -> float:
    """Half the width of the 95% bootstrap interval of the mean of ``values`` (per example, or per seed): the
    tolerance within which a predicted number cannot be told from the run's.

    >>> round(interval_tolerance([0.0, 1.0] * 50), 2)
    0.1
    """
    from ..core.controls import bootstrap_interval

    lo, hi = bootstrap_interval(values, n_boot=n_boot, seed=seed, level=level)
    return (hi - lo) / 2


def tied_auroc(scores: Mapping[str, "torch.Tensor"], truth: "torch.Tensor", seed: int = 0, level: float = LEVEL,
               n_boot: int = N_BOOT) -> set[str]:
    """The ranking methods the run cannot tell from the one with the best AUROC (highest ``|score|`` first, ties
    shared, as :func:`tutorial_lib.methods.recovery.roc`): the best, and every method whose paired bootstrap
    interval of (AUROC − best AUROC) includes 0. Items are resampled within the circuit and outside it, so that
    every resample has both.

    >>> truth = torch.tensor([True] * 3 + [False] * 20)
    >>> good = torch.cat([torch.tensor([5.0, 4.0, 3.0]), torch.linspace(0, 2, 20)])
    >>> close = torch.cat([torch.tensor([5.0, 4.0, 1.0]), torch.linspace(0, 2, 20)])
    >>> sorted(tied_auroc({"good": good, "close": close, "none": -good.flip(0) * 0}, truth))
    ['close', 'good']
    """
    truth = torch.as_tensor(truth).flatten().bool()
    pos, neg = torch.nonzero(truth)[:, 0], torch.nonzero(~truth)[:, 0]
    if len(pos) < 2 or len(neg) < 2:
        raise ValueError(f"an AUROC interval needs at least 2 items in the circuit and 2 outside; got {len(pos)} "
                         f"and {len(neg)}")
    names = list(scores)
    pairs = []
    for n in names:
        key = torch.as_tensor(scores[n], dtype=torch.float64).flatten().abs()
        if key.shape != truth.shape:
            raise ValueError(f"{n}: {key.numel()} scores for {truth.numel()} items")
        a, b = key[pos][:, None], key[neg][None, :]
        pairs.append(((a > b).double() + 0.5 * (a == b).double()).numpy())  # [n_pos, n_neg]
    pairs = np.stack(pairs)
    full = pairs.mean((1, 2))
    top = int(np.argmax(full))
    rng = np.random.default_rng(seed)
    boot = np.empty((len(names), n_boot))
    for i in range(n_boot):
        ip, ineg = rng.integers(0, len(pos), len(pos)), rng.integers(0, len(neg), len(neg))
        boot[:, i] = pairs[:, ip][:, :, ineg].mean((1, 2))
    diffs = boot - boot[top]
    a = (1 - level) / 2
    lo, hi = np.quantile(diffs, a, axis=1), np.quantile(diffs, 1 - a, axis=1)
    return {n for i, n in enumerate(names) if i == top or lo[i] <= 0 <= hi[i]}


def bootstrap_range(statistic, n_items: int, seed: int = 0, level: float = LEVEL, n_boot: int = 200
                    ) -> tuple[float, float]:
    """The ``level`` percentile interval of ``statistic(indices)`` over ``n_boot`` resamples (with replacement) of
    ``n_items`` items: for a number that is not a plain mean (how many heads pass a filter, a fraction of a sweep).
    ``statistic`` receives a ``LongTensor`` of item indices and returns a number. A predicted number counts as right
    inside the interval (or, for a whole number, inside it after rounding its ends outward).

    >>> values = torch.arange(10.0)
    >>> lo, hi = bootstrap_range(lambda idx: float((values[idx] >= 5).sum()), 10)
    >>> lo <= 5 <= hi
    True
    """
    if n_items < 2:
        raise ValueError(f"a bootstrap needs at least 2 items, got {n_items}")
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level!r}")
    g = torch.Generator().manual_seed(seed)
    vals = np.array([float(statistic(torch.randint(0, n_items, (n_items,), generator=g))) for _ in range(n_boot)])
    a = (1 - level) / 2
    return float(np.quantile(vals, a)), float(np.quantile(vals, 1 - a))


def whole_numbers_in(lo: float, hi: float, actual: "int | None" = None) -> set[int]:
    """The whole numbers a count's interval ``[lo, hi]`` holds, its ends rounded outward (a bootstrap percentile of a
    count can fall between two counts), with the run's own ``actual`` count always among them: the set a predicted
    count is scored against (:func:`bootstrap_range` gives ``lo`` and ``hi``).

    >>> sorted(whole_numbers_in(2.5, 4.0)), sorted(whole_numbers_in(3.0, 3.0, actual=3))
    ([2, 3, 4], [3])
    """
    import math

    if hi < lo:
        raise ValueError(f"the interval's ends are reversed: [{lo}, {hi}]")
    out = set(range(math.floor(lo), math.ceil(hi) + 1))
    return out | ({int(actual)} if actual is not None else set())


def tied_over_runs(per_run: Mapping[str, "list[float]"], best: str = "max") -> set[str]:
    """For an answer that only retraining could resample (a count of cells of a table, per seed): the options whose
    range over the runs (seeds) the notebook has reaches the best option's range. The best is the highest mean over
    the runs (``best="max"``; ``"min"``: the lowest); an option ties with it when its highest value is at least the
    best's lowest (``"min"``: its lowest at most the best's highest). With one run, only equal values tie.

    >>> sorted(tied_over_runs({"zero": [2, 1], "mean": [2, 3], "resample": [0, 0]}))
    ['mean', 'zero']
    >>> sorted(tied_over_runs({"zero": [2], "mean": [1]}))
    ['zero']
    """
    if best not in ("min", "max"):
        raise ValueError(f"best must be 'min' or 'max', got {best!r}")
    if not per_run or any(len(v) == 0 for v in per_run.values()):
        raise ValueError("per_run needs every option's value in at least one run")
    vals = {k: [float(x) for x in v] for k, v in per_run.items()}
    mean = {k: sum(v) / len(v) for k, v in vals.items()}
    top = max(mean, key=mean.get) if best == "max" else min(mean, key=mean.get)
    if best == "max":
        return {k for k, v in vals.items() if max(v) >= min(vals[top])}
    return {k for k, v in vals.items() if min(v) <= max(vals[top])}


def answers_every(intervals: Mapping[str, "tuple[float, float]"], threshold: float, side: str = ">=") -> set[bool]:
    """The answers to "does every value lie ``side`` ``threshold``?" that the run cannot rule out, each value known
    only to its 95% interval ``(lo, hi)``: ``True`` unless some interval lies wholly on the other side, ``False``
    unless every interval lies wholly on the asked side. Both answers count when an interval straddles the
    threshold. With no values at all the answer is yes (as ``all([])``).

    >>> sorted(answers_every({"a": (0.3, 0.5), "b": (0.25, 0.4)}, 0.2)), sorted(answers_every({"a": (0.1, 0.3)}, 0.2))
    ([True], [False, True])
    >>> sorted(answers_every({"necessity": (-0.4, -0.1)}, 0.0, side="<"))
    [True]
    """
    if side not in (">=", "<"):
        raise ValueError(f"side must be '>=' or '<', got {side!r}")
    if not intervals:  # "every" over nothing: vacuously yes (as all() says), and the run cannot say no
        return {True}
    for name, (lo, hi) in intervals.items():
        if hi < lo:
            raise ValueError(f"{name}: the interval's ends are reversed: ({lo}, {hi})")
    if side == ">=":
        sure = all(lo >= threshold for lo, _ in intervals.values())
        possible = all(hi >= threshold for _, hi in intervals.values())
    else:
        sure = all(hi < threshold for _, hi in intervals.values())
        possible = all(lo < threshold for lo, _ in intervals.values())
    return ({True} if possible else set()) | (set() if sure else {False})


def runs_range(values: "list[float]", grid: "list[float] | None" = None) -> tuple[float, float]:
    """The range a number read once per run (seed) can be told apart from: the runs' lowest and highest values,
    widened to the neighbouring points of ``grid`` (the sizes a curve was read at: a first crossing is only known
    to lie between two of them).

    >>> runs_range([0.2, 0.3], grid=[0.0, 0.1, 0.2, 0.3, 0.5, 1.0])
    (0.1, 0.5)
    """
    if not values:
        raise ValueError("values is empty: give one value per run")
    lo, hi = float(min(values)), float(max(values))
    if grid:
        below, above = [g for g in grid if g < lo], [g for g in grid if g > hi]
        lo, hi = (max(below) if below else lo), (min(above) if above else hi)
    return lo, hi


def ratio_interval(part: "torch.Tensor | list", whole: "torch.Tensor | list", seed: int = 0, level: float = LEVEL,
                   n_boot: int = N_BOOT) -> tuple[float, float]:
    """The 95% bootstrap interval, over the examples, of ``mean(part) / mean(whole)`` (a fraction of the full model's
    metric, as sufficiency reports it); both resampled with the same examples.

    >>> lo, hi = ratio_interval([0.8, 0.9, 0.7, 0.85] * 10, [1.0, 1.0, 0.9, 1.1] * 10)
    >>> lo < 0.8125 < hi
    True
    """
    p = torch.as_tensor(part, dtype=torch.float64).flatten()
    w = torch.as_tensor(whole, dtype=torch.float64).flatten()
    if p.shape != w.shape or p.numel() < 2:
        raise ValueError(f"part and whole need the same examples, at least 2; got {p.numel()} and {w.numel()}")
    g = torch.Generator().manual_seed(seed)
    idx = torch.randint(0, p.numel(), (n_boot, p.numel()), generator=g)
    r = (p[idx].mean(1) / w[idx].mean(1)).numpy()
    a = (1 - level) / 2
    return float(np.quantile(r, a)), float(np.quantile(r, 1 - a))
