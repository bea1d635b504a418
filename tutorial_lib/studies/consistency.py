"""Notebook 02's study as a whole: which of its conclusions flip with the study's choices.

The consistency claim (per-example circuits reuse their shared set S_P by at least ``min_margin`` more than
random circuits of the same size) depends on the metric EAP attributes and on P; the necessity claim (ablating
S_P costs more accuracy than a size-matched control, p < ``alpha``, on every performed task) depends on those
and on the ablation mode. :func:`flip_table` evaluates both on a grid and marks each cell pass or fail.
"""
from __future__ import annotations

from typing import Iterable, Sequence

from ..core.circuits import ABLATION_MODES
from ..methods.consistency import necessity_all, reuse_sweep, shared_sets

__all__ = ["flip_table"]


def flip_table(model, tasks: dict, scores_by_metric: dict, performed: Sequence[str], k: float, ps: Iterable[float],
               modes: Iterable[str] = ABLATION_MODES, seeds: Iterable[int] = range(2), min_margin: float = 0.2,
               alpha: float = 0.05, sweep_seed: int = 0):
    """One row per (metric, P): the consistency claim's numbers and pass/fail, and the necessity claim's pass/fail
    (with the worst p over the performed tasks) under each ablation mode, as a pandas DataFrame.

    ``scores_by_metric``: ``{metric name: {task: EAPScores}}`` (e.g. ``"logit_diff"`` and ``"answer_logprob"``).
    The random baseline of reuse@P is :func:`~tutorial_lib.methods.consistency.reuse_sweep`'s (seed
    ``sweep_seed``), as in the notebook's reuse table. A P at which some performed task has an empty S_P fails
    the necessity claim (there is nothing to ablate). Necessity runs are shared between cells whose shared sets
    and mode are the same.
    """
    import pandas as pd

    performed, modes, seeds = list(performed), list(modes), list(seeds)
    if not performed:
        raise ValueError("performed is empty: name at least one task the model performs")
    rows, cache = [], {}
    for metric, scores in scores_by_metric.items():
        missing = [n for n in performed if n not in scores]
        if missing:
            raise ValueError(f"scores for metric {metric!r} lack the performed tasks {missing}")
        for p in ps:
            shared = shared_sets({n: scores[n] for n in performed}, k, p)
            sweeps = {n: reuse_sweep(scores[n], ks=[k], ps=[p], seed=sweep_seed) for n in performed}
            margin = min(float(sw.reuse[0, 0] - sw.random_reuse[0, 0]) for sw in sweeps.values())
            sizes = [len(shared[n]) for n in performed]
            row = {"metric": metric, "P": p, "|S_P| (min-max)": f"{min(sizes)}-{max(sizes)}",
                   "min reuse margin": round(margin, 3),
                   f"consistent (margin ≥ {min_margin:g})": "pass" if margin >= min_margin else "fail"}
            key_sets = tuple(tuple(sorted(shared[n].nodes)) for n in performed)
            for mode in modes:
                if min(sizes) == 0:
                    row[f"necessary ({mode})"] = "fail: empty S_P"
                    continue
                key = (mode, key_sets)
                if key not in cache:
                    cache[key] = necessity_all(model, {n: tasks[n] for n in performed}, shared, mode=mode, seeds=seeds)
                res = cache[key]
                worst = max(r.p_value for r in res.values())
                ok = all(r.excess > 0 and r.p_value < alpha for r in res.values())
                row[f"necessary ({mode})"] = f"{'pass' if ok else 'fail'}, worst p = {worst:.2g}"
            rows.append(row)
    return pd.DataFrame(rows).set_index(["metric", "P"])
