"""Notebook 04's predictions, scored by the fair-prediction rule (:mod:`tutorial_lib.studies.fair`): the answers the
run cannot rule out, from its own examples (a bootstrap) or its own seeds.

* :func:`ig_above_answers`: "EAP-IG's curve above EAP's at more small sizes than below?", resampling the examples;
* :func:`random_at_range`: where random circuits first reach f ≥ 0.8, known to the seeds' range on the sizes' grid;
* :func:`closest_answers`: which method's top-k heads and MLPs overlap exact node patching's most, resampling the
  examples behind every score.
"""
from __future__ import annotations

import torch

from ..methods import faithfulness as fa
from ..core.circuits import jaccard
from .comparing import MethodComparison, _top, closest_to_exact, curve_facts
from .fair import runs_range

__all__ = ["ig_above_answers", "random_at_range", "closest_answers"]


def ig_above_answers(model, task, c: MethodComparison, seed: int = 0, n_boot: int = 1000) -> set:
    """The answers to "EAP-IG's curve above EAP's at more of the small sizes (≤ 10% of the edges) than below?" that
    the run cannot rule out (:mod:`~tutorial_lib.studies.fair`): each example's metric is measured for both methods'
    circuits at those sizes and for the full and empty circuits, the examples are resampled ``n_boot`` times
    (seeded), and the faithfulness curves recomputed on each; an answer counts when at least 2.5% of the resamples
    give it. The run's own answer (:func:`curve_facts`) is always among them."""
    e = c.edge_curves["EAP"]
    small = [x for x in e.fractions if 0 < x <= 0.1]
    if not small:
        raise ValueError(f"no size in (0, 10%] among the curves' fractions {e.fractions}")
    masks = [fa.full_circuit(c.graph), torch.zeros_like(fa.full_circuit(c.graph))]
    for name in ("EAP", "EAP-IG"):
        masks += list(fa.top_edges(c.graph, c.edge_scores[name], small, "absolute"))
    per = fa.patched_metric(model, task, torch.stack(masks), c.metric, per_example=True).double()
    g = torch.Generator().manual_seed(seed)
    idx = torch.randint(0, per.shape[1], (n_boot, per.shape[1]), generator=g)
    m = per[:, idx].mean(-1)  # [circuits, n_boot]
    f = (m[2:] - m[1]) / (m[0] - m[1])
    f_eap, f_ig = f[:len(small)], f[len(small):]
    above = ((f_ig > f_eap + 1e-6).sum(0) > (f_ig < f_eap - 1e-6).sum(0)).double().mean().item()
    out = {curve_facts(c)["ig_above_at_most"]}
    return out | ({True} if above >= 0.025 else set()) | ({False} if 1 - above >= 0.025 else set())


def random_at_range(c: MethodComparison, level: float = 0.8) -> tuple[float, float]:
    """Where random circuits first reach f ≥ ``level``, as a fraction of the edges: the range over the random seeds,
    widened to the neighbouring sizes the curves were read at (:func:`~tutorial_lib.studies.fair.runs_range`); a seed
    that never reaches it counts as the whole model (1.0), as in :func:`~tutorial_lib.studies.comparing.curve_facts`."""
    first = curve_facts(c, level)["random_first_at"]
    return runs_range([1.0 if x is None else x for x in first], grid=c.edge_curves["EAP"].fractions)


def closest_answers(c: MethodComparison, k: int, seed: int = 0, n_boot: int = 1000) -> set:
    """The methods the run cannot rule out as the one whose top-``k`` heads and MLPs overlap exact node patching's
    most (Jaccard): the examples behind every node score (EAP's, EAP-IG's and exact patching's) are resampled
    ``n_boot`` times (seeded), each method's top-``k`` set and its Jaccard with exact patching's recomputed (the
    path-patching circuit is fixed: it is not a mean over these examples); a method counts when it is among the best
    on at least 2.5% of the resamples. The run's own answer (:func:`closest_to_exact`) is always among them."""
    exact = "exact node patching"
    if exact not in c.node_scores_each:
        raise ValueError("this comparison has no per-example node scores (node_scores_each); rebuild it with "
                         "compare_methods")
    each = c.node_scores_each
    n = each[exact].shape[0]
    g = torch.Generator().manual_seed(seed)
    wins = dict.fromkeys([m for m in each if m != exact] + (["path patching"] if len(c.pp_nodes) == k else []), 0)
    for _ in range(n_boot):
        idx = torch.randint(0, n, (n,), generator=g)
        ref = _top(c.components, each[exact][idx].mean(0)[1:], k)
        sets = {m: _top(c.components, each[m][idx].mean(0)[1:], k) for m in wins if m != "path patching"}
        if "path patching" in wins:
            sets["path patching"] = list(c.pp_nodes)
        j = {m: jaccard(v, ref) for m, v in sets.items()}
        for m in wins:
            wins[m] += j[m] >= max(j.values()) - 1e-12
    return set(closest_to_exact(c, k)) | {m for m, w in wins.items() if w >= 0.025 * n_boot}
