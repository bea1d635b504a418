"""How well a ranking recovers a known circuit: ROC, AUROC, precision at the true size (InterpBench's convention).

A method ranks the edges (or nodes) of a model; the answer key (:mod:`tutorial_lib.zoo.answer_key`) says which are
the circuit's. Sweeping the size ``k`` of the top-k set from 0 to every item gives, at each size,

    TPR(k) = |top-k ∩ circuit| / |circuit|        FPR(k) = |top-k \\ circuit| / |not circuit|

and the ROC curve ``(FPR(k), TPR(k))`` from (0, 0) to (1, 1); **AUROC** is its trapezoid area (1: every circuit
item ranked above every other; 0.5: no better than chance). Items with *tied* scores enter together (one step of
the sweep, the diagonal between the two points), so an order among equal scores cannot help or hurt a method:
this is the usual ROC (e.g. scikit-learn's), and AUROC then equals the probability that a random circuit item
outscores a random other one, ties counting one half. Rankings are by ``|score|`` unless ``absolute=False``.

:func:`roc_point` places a circuit a method returns as a set (the path-patching search) on the same plane.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

import torch
from torch import Tensor


@dataclass
class ROC:
    """A ROC curve: ``fpr[i]``, ``tpr[i]`` after the ``sizes[i]`` top items; ``auroc`` its trapezoid area."""

    fpr: list
    tpr: list
    sizes: list
    auroc: float
    n_positive: int
    n_negative: int

    def tpr_at(self, fpr: float) -> float:
        """The curve's TPR at false-positive rate ``fpr``, on the straight segments between its points (the curve
        whose area is ``auroc``); where the curve rises at that very FPR (a vertical step), its top.

        >>> r = ROC([0.0, 0.0, 0.5, 0.5, 1.0], [0.0, 0.5, 0.5, 1.0, 1.0], [0, 1, 2, 3, 4], 0.75, 2, 2)
        >>> r.tpr_at(0.25), r.tpr_at(0.5), r.tpr_at(0.0)
        (0.5, 1.0, 0.5)
        """
        if not 0.0 <= fpr <= 1.0:
            raise ValueError(f"fpr must lie in [0, 1], got {fpr!r}")
        at = [t for f, t in zip(self.fpr, self.tpr) if f == fpr]
        if at:
            return max(at)
        left = max((f, t) for f, t in zip(self.fpr, self.tpr) if f < fpr)
        right = min(((f, t) for f, t in zip(self.fpr, self.tpr) if f > fpr), key=lambda p: (p[0], p[1]))
        return left[1] + (right[1] - left[1]) * (fpr - left[0]) / (right[0] - left[0])

    def below(self, point: tuple[float, float]) -> bool:
        """Whether ``point`` (FPR, TPR) lies strictly above this curve: more true positives than the ranking
        reaches at that false-positive rate."""
        return point[1] > self.tpr_at(point[0])


def _check(scores: Tensor, truth: Tensor) -> tuple[Tensor, Tensor]:
    scores = torch.as_tensor(scores, dtype=torch.float64).flatten()
    truth = torch.as_tensor(truth).flatten().bool()
    if scores.shape != truth.shape:
        raise ValueError(f"scores ({scores.numel()} items) and truth ({truth.numel()} items) must have one entry each")
    n_pos = int(truth.sum())
    if n_pos == 0 or n_pos == len(truth):
        raise ValueError(f"ROC needs both circuit and non-circuit items; got {n_pos} of {len(truth)} in the circuit")
    if not bool(torch.isfinite(scores).all()):
        raise ValueError("scores must be finite (a NaN would sort arbitrarily)")
    return scores, truth


def roc(scores: Tensor, truth: Tensor, absolute: bool = True) -> ROC:
    """The ROC curve of ranking ``scores`` (highest ``|score|`` first; ``absolute=False``: highest score first)
    against ``truth`` (True on the circuit's items); tied scores enter together.

    >>> r = roc(torch.tensor([0.9, 0.1, 0.5, 0.3]), torch.tensor([True, False, False, True]))
    >>> [round(x, 2) for x in r.fpr], [round(x, 2) for x in r.tpr], r.auroc
    ([0.0, 0.0, 0.5, 0.5, 1.0], [0.0, 0.5, 0.5, 1.0, 1.0], 0.75)
    """
    scores, truth = _check(scores, truth)
    key = scores.abs() if absolute else scores
    order = torch.argsort(key, descending=True, stable=True)
    key, hit = key[order], truth[order]
    tp, fp = torch.cumsum(hit, 0).double(), torch.cumsum(~hit, 0).double()
    last = torch.ones(len(key), dtype=torch.bool)  # a point only after the last item of a group of ties
    last[:-1] = key[1:] != key[:-1]
    n_pos, n_neg = int(truth.sum()), int((~truth).sum())
    tpr = [0.0] + (tp[last] / n_pos).tolist()
    fpr = [0.0] + (fp[last] / n_neg).tolist()
    sizes = [0] + (torch.nonzero(last)[:, 0] + 1).tolist()
    return ROC(fpr, tpr, sizes, auroc_of(fpr, tpr), n_pos, n_neg)


def auroc_of(fpr: Sequence[float], tpr: Sequence[float]) -> float:
    """Trapezoid area under the points ``(fpr[i], tpr[i])``, which must run from (0, 0) to (1, 1) with fpr
    non-decreasing."""
    x, y = torch.as_tensor(fpr, dtype=torch.float64), torch.as_tensor(tpr, dtype=torch.float64)
    if x.shape != y.shape or len(x) < 2:
        raise ValueError(f"fpr and tpr must be two lists of the same length >= 2, got {len(x)} and {len(y)}")
    if bool((x[1:] < x[:-1]).any()):
        raise ValueError("fpr must not decrease along the curve (sort the points by size)")
    return float(torch.trapezoid(y, x))


def auroc(scores: Tensor, truth: Tensor, absolute: bool = True) -> float:
    """The AUROC of ranking ``scores`` against ``truth`` (see :func:`roc`)."""
    return roc(scores, truth, absolute).auroc


def precision_at(scores: Tensor, truth: Tensor, k: int | None = None, absolute: bool = True) -> float:
    """The fraction of the top ``k`` items (default: as many as the circuit has) that are in the circuit. Ties at
    the cut are shared out by their share of circuit items (the expected precision over orders of the ties)."""
    scores, truth = _check(scores, truth)
    k = int(truth.sum()) if k is None else int(k)
    if not 1 <= k <= len(truth):
        raise ValueError(f"k must be in 1..{len(truth)}, got {k}")
    key = scores.abs() if absolute else scores
    kth = key.sort(descending=True).values[k - 1]
    above, tied = key > kth, key == kth
    hits = float((above & truth).sum()) + (k - int(above.sum())) * float((tied & truth).sum()) / int(tied.sum())
    return hits / k


def roc_point(chosen: Iterable, items: Sequence, truth: Iterable) -> tuple[float, float]:
    """``(FPR, TPR)`` of the set ``chosen`` among ``items`` against the circuit ``truth`` (names)."""
    chosen, truth, items = {str(x) for x in chosen}, {str(x) for x in truth}, [str(x) for x in items]
    unknown = sorted((chosen | truth) - set(items))
    if unknown:
        raise ValueError(f"names not among the items: {unknown[:5]}")
    pos = [i for i in items if i in truth]
    neg = [i for i in items if i not in truth]
    return (sum(i in chosen for i in neg) / len(neg), sum(i in chosen for i in pos) / len(pos))
