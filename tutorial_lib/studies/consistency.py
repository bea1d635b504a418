"""Notebook 02's study as a whole: its tasks (:func:`study_tasks`: five generated, ARC's two from the hub), necessity on every task
(:func:`necessity_all`), and which of its conclusions flip with the study's choices (:func:`flip_table`).

The consistency claim (per-example circuits reuse their shared set S_P by at least ``min_margin`` more than
random circuits of the same size) depends on the metric EAP attributes and on P; the necessity claim (ablating
S_P costs more accuracy than a size-matched control, p < ``alpha``, on every performed task) depends on those
and on the ablation mode. :func:`flip_table` evaluates both on a grid and marks each cell pass or fail.
"""
from __future__ import annotations

import statistics
from typing import Iterable, Optional, Sequence

from ..core.circuits import ABLATION_MODES
from ..core.progress import tqdm
from ..methods.consistency import necessity, reuse_sweep, shared_mask, shared_sets
from ..tasks import DATASET_MAKERS, MAKERS, TaskNotBuildable, make_task
from ..tasks.arc import arc_cached
from ..zoo.hub_access import hub_status

__all__ = ["STUDY_TASKS", "KNOWLEDGE_TASKS", "StudyTasks", "study_tasks", "necessity_all", "flip_table",
           "teaching_setting", "specificity_degenerate", "reuse_margin_range", "necessity_unsure"]

STUDY_TASKS = ("addition", "boolean", "ioi", "multiple_choice", "greater_than")
KNOWLEDGE_TASKS = ("arc_easy", "arc_challenge")  #: the paper's knowledge tasks, from the hub


class StudyTasks(dict):
    """``{name: TaskData}`` plus ``skipped``: ``{name: why}`` for each task that could not be built here."""

    skipped: dict


def study_tasks(model, n: int = 128, seed: int = 0, names: Sequence[str] = STUDY_TASKS + KNOWLEDGE_TASKS,
                verbose: bool = True) -> StudyTasks:
    """The study's tasks as ``{name: TaskData}``, tokenized for ``model``; a task that cannot be built is skipped
    and the reason printed (and kept in ``.skipped``).

    * The five generated tasks work on GPT-2's, the zoo's and the papers' families' tokenizers (Llama 3, Gemma 2,
      Qwen3), except greater-than, which needs GPT-2's year tokens (the zoo's tokenizer copies them).
    * ARC Easy and ARC Challenge (the paper's knowledge tasks, ``allenai/ai2_arc``; in ``names`` by default) come from the
      Hugging Face cache, else downloaded when the hub answers (a short probe); offline they are skipped, and said
      so. The zoo models' word-level vocabulary cannot write ARC's questions, so they skip it too.
    * Boolean logic uses the paper's 2-6 operators, except on a zoo model, which is evaluated on the operator counts
      its held-out metric uses (``model.zoo_entry["mix"]["boolean_eval_ops"]``, 2-4 for the multi-task model, which
      trains on 1-5; older entries name only the training range, ``"boolean_ops"``): held-out *lengths* would test
      length generalisation, not the circuit.
    * No chat template, on -IT / -Instruct models too: the paper's code feeds them plain prompts.

    >>> tasks = study_tasks(model, n=128)        # doctest: +SKIP
    skipping arc_easy: offline (...)
    >>> {k: len(t) for k, t in tasks.items()}    # doctest: +SKIP
    {'addition': 128, 'boolean': 128, 'ioi': 128, 'multiple_choice': 128, 'greater_than': 128}
    """
    bad = [t for t in names if t not in MAKERS and t not in DATASET_MAKERS]
    if bad:
        raise ValueError(f"unknown task(s) {bad}; accepted: {sorted(MAKERS) + sorted(DATASET_MAKERS)}")
    options = {name: {} for name in names}
    entry = getattr(model, "zoo_entry", None)
    if entry is not None and "boolean" in options:
        mix = entry.get("mix") or {}
        lo, hi = mix.get("boolean_eval_ops", mix.get("boolean_ops", (1, 4)))
        options["boolean"] = {"min_ops": int(lo), "max_ops": int(hi)}
    out, skipped = StudyTasks(), {}
    for name in names:
        why = _knowledge_unavailable(name, entry) if name in DATASET_MAKERS else None
        if why is None:
            try:
                out[name] = make_task(name, model.tokenizer, n=n, seed=seed, **options[name])
                continue
            except TaskNotBuildable as err:
                why = str(err)
        skipped[name] = why
        if verbose:
            print(f"skipping {name}: {why}")
    out.skipped = skipped
    return out


def _knowledge_unavailable(name: str, zoo_entry) -> str | None:
    """Why an ARC task cannot be had here (None: cached, or the hub answers)."""
    if zoo_entry is not None:
        return ("a zoo model's word-level vocabulary cannot write ARC's science questions (the paper's knowledge "
                "tasks need one of the papers' models, e.g. MODEL_NAME = 'gpt2' or 'qwen3-0.6b')")
    if arc_cached(name):
        return None
    online, reason = hub_status()
    if online:
        return None
    return (f"offline ({reason}). ARC comes from the Hugging Face hub (allenai/ai2_arc) and is downloaded once, "
            "then read from the cache, when the hub can be reached")


def teaching_setting(scores: dict, performed: Sequence[str], ks: Sequence[float], ps: Sequence[float], min_size: int = 3,
                     paper_k: float = 0.10, paper_ps: Sequence[float] = (100, 95)) -> tuple:
    """``(k, p, rule)``: the setting notebook 02 teaches at, chosen by a rule from the run, so that its shared sets
    S_P have several components (a one-component S_P on every task empties the specificity sections).

    The rule: the paper's K (``paper_k``) and the largest P of ``paper_ps`` if there the median |S_P| over the
    ``performed`` tasks is at least ``min_size``; else the smallest K of ``ks`` from ``paper_k`` up and, at it, the
    largest P of ``ps`` with that median; else (no setting of the grid has one) the largest K and smallest P.
    ``rule`` says in words which branch was taken.
    """
    names = list(performed) or list(scores)

    def median_size(k, p):
        return statistics.median(int(shared_mask(scores[n].top_k(k), p).sum()) for n in names)

    for p in sorted(paper_ps, reverse=True):
        if median_size(paper_k, p) >= min_size:
            return paper_k, p, f"the paper's setting: its median |S_P| is at least {min_size}"
    for k in sorted(k for k in ks if k >= paper_k - 1e-9):
        for p in sorted(ps, reverse=True):
            if median_size(k, p) >= min_size:
                return k, p, (f"at the paper's K = {paper_k:.0%} and P = {', '.join(f'{q:g}' for q in paper_ps)} the median "
                              f"|S_P| is under {min_size}: the smallest K of the grid, and the largest P there, where it is not")
    return max(ks), min(ps), f"no setting of the grid gives a median |S_P| of {min_size}: the largest K and the smallest P"


def specificity_degenerate(shared: dict) -> Optional[str]:
    """Why the specificity measures (cross-task matrix, Jaccard, decomposition) are fixed in advance by these
    shared sets, or None. They are when fewer than two tasks are compared, when some S_P is empty (nothing to
    ablate or overlap), or when every task's S_P is the same set (identical rows, Jaccard 1, differences 0)."""
    if len(shared) < 2:
        return f"only {len(shared)} task has a shared set, and specificity compares two or more"
    empty = [n for n, c in shared.items() if not len(c)]
    if empty:
        return f"the shared set of {', '.join(empty)} is empty, so there is nothing to ablate or overlap"
    if len({frozenset(c.nodes) for c in shared.values()}) == 1:
        nodes = ", ".join(sorted(next(iter(shared.values())).nodes))
        return (f"every task's S_P is the same set ({nodes}): the matrix rows are identical, every Jaccard overlap is 1 "
                "and every specificity difference is 0 by construction")
    return None


def reuse_margin_range(scores, k: float, p: float, ks: Sequence[float], seed: int = 0) -> tuple[float, float]:
    """The 95% bootstrap interval, over the examples, of reuse@P minus the random baseline's at top-``k`` (both
    recomputed on each resample: S_P is re-derived from the resampled circuits). The baseline's circuits are
    :func:`~tutorial_lib.methods.consistency.reuse_sweep`'s for the same ``ks`` and ``seed``."""
    from ..methods.consistency import random_membership, reuse_at
    from .fair import bootstrap_range

    member = scores.top_k(k)
    fake = random_membership(*member.shape, scores.k_for(k), seed=seed + list(ks).index(k))
    return bootstrap_range(lambda i: reuse_at(member[i], p) - reuse_at(fake[i], p), member.shape[0])


def necessity_unsure(results: dict) -> set:
    """The tasks whose necessity the run cannot place either way: the 95% bootstrap interval, over the examples, of
    S_P's accuracy drop minus its controls' mean drop straddles 0."""
    from ..core.controls import bootstrap_interval

    out = set()
    for name, r in results.items():
        lo, hi = bootstrap_interval(r.circuit_drop - r.random_drops.mean(0))
        if lo <= 0 <= hi:
            out.add(name)
    return out


def necessity_all(model, tasks: dict, shared: dict, mode: str = "zero", measure: str = "accuracy",
                  seeds: Iterable[int] = range(5), n_permutations: int = 10_000, match: str = "auto") -> dict:
    """:func:`necessity` of every task's shared set on its own task: ``{task: NecessityResult}``."""
    seeds = list(seeds)
    return {name: necessity(model, tasks[name], shared[name], mode, measure, seeds, n_permutations, match=match)
            for name in tqdm(list(tasks), desc=f"necessity ({mode})")}


def flip_table(model, tasks: dict, scores_by_metric: dict, performed: Sequence[str], k: float, ps: Iterable[float],
               modes: Iterable[str] = ABLATION_MODES, seeds: Iterable[int] = range(2), min_margin: float = 0.2,
               alpha: float = 0.05, sweep_seed: int = 0, known: Optional[dict] = None):
    """One row per (metric, P): the consistency claim's numbers and pass/fail, and the necessity claim's pass/fail
    (with the worst p over the performed tasks) under each ablation mode, as a pandas DataFrame.

    ``scores_by_metric``: ``{metric name: {task: EAPScores}}`` (e.g. ``"logit_diff"`` and ``"answer_logprob"``).
    The random baseline of reuse@P is :func:`~tutorial_lib.methods.consistency.reuse_sweep`'s (seed
    ``sweep_seed``), as in the notebook's reuse table. A P at which some performed task has an empty S_P fails
    the necessity claim (there is nothing to ablate). Necessity runs are shared between cells whose shared sets
    and mode are the same.

    ``known``: ``{mode: {task: NecessityResult}}`` computed elsewhere (the notebook's section 3, with more control
    seeds). A cell whose shared sets are those results' circuits reuses them, so that it says what that section
    says; each necessity cell names its number of control seeds. Rows are indexed by (metric, K, P).
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
            row = {"metric": metric, "K": f"{k:.0%}", "P": p, "|S_P| (min-max)": f"{min(sizes)}-{max(sizes)}",
                   "min reuse margin": round(margin, 3),
                   f"consistent (margin ≥ {min_margin:g})": "pass" if margin >= min_margin else "fail"}
            key_sets = tuple(tuple(sorted(shared[n].nodes)) for n in performed)
            for mode in modes:
                if min(sizes) == 0:
                    row[f"necessary ({mode})"] = "fail: empty S_P"
                    continue
                key = (mode, key_sets)
                given = (known or {}).get(mode)
                if given is not None and all(n in given and set(given[n].circuit.nodes) == set(shared[n].nodes)
                                             for n in performed):
                    cache[key] = {n: given[n] for n in performed}
                if key not in cache:
                    cache[key] = necessity_all(model, {n: tasks[n] for n in performed}, shared, mode=mode, seeds=seeds)
                res = cache[key]
                worst = max(r.p_value for r in res.values())
                ok = all(r.excess > 0 and r.p_value < alpha for r in res.values())
                n_seeds = len(next(iter(res.values())).controls)
                row[f"necessary ({mode})"] = (f"{'pass' if ok else 'fail'}, worst p = {worst:.2g} "
                                              f"({n_seeds} seed{'s' if n_seeds > 1 else ''})")
            rows.append(row)
    return pd.DataFrame(rows).set_index(["metric", "K", "P"])


def readme_figures(model, clean_accuracy: dict, reuse_table, shared: dict, necessity_results: dict, mode_pass: dict,
                   performed: Sequence[str], n: int, k: float, p: float, setting: str = "") -> dict:
    """The figures of notebook 02 that the README quotes, as plain values for
    :func:`tutorial_lib.course.record.record` (``record("02", **readme_figures(...))``); ``setting`` says in words
    which setting K and P are (e.g. the teaching setting, and what the paper's gives)."""
    from .spectral_loaded import zoo_name

    tasks = {}
    for name, r in necessity_results.items():
        tasks[name] = {"clean": float(clean_accuracy[name]), "reuse": float(reuse_table.loc[name, "reuse@P"]),
                       "random_reuse": float(reuse_table.loc[name, "random reuse@P"]),
                       "shared": sorted(shared[name].nodes), "drop": float(r.circuit_drop.mean()),
                       "control_drop": float(r.random_drop), "control": "type" if r.type_matched else "weaker",
                       "p": float(r.p_value)}
    return {"model": zoo_name(model) or model.cfg.model_name, "n": int(n), "k": float(k), "p": int(p), "seeds": len(next(iter(
        necessity_results.values())).controls) if necessity_results else 0, "tasks": tasks,
        "modes": {m: list(v) for m, v in mode_pass.items()}, "n_performed": len(performed), "setting": setting}
