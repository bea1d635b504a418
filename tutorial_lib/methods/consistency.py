"""Consistency and specificity of per-example circuits (Li & Subramani 2026).

Start from per-example component scores (:func:`tutorial_lib.methods.attribution.eap_scores`). A per-example
circuit is the top-K% components of one example. Then:

* **consistency** -- the shared set ``S_P`` holds the components present in at least P% of the
  per-example circuits (at least ``ceil(P/100 * N)`` of them); ``reuse@P`` is the fraction of each
  per-example circuit that ``S_P`` covers, averaged over examples (:func:`shared_set`,
  :func:`reuse_at`, :func:`reuse_sweep` with a random-circuit baseline);
* **necessity** -- ablating ``S_P`` should hurt more than ablating size-matched random components
  (:func:`necessity`: paired permutation test, ratio and difference of the two drops);
* **specificity** -- ablating task A's ``S_P`` should hurt task A more than task B
  (:func:`cross_task_matrix`), the shared sets of two tasks should overlap little beyond chance
  (:func:`jaccard_matrix`), and :func:`decompose` splits a pair into a shared core and the two
  task-specific parts and ablates each;
* **composition** -- the share of MLPs vs heads, and the layers, as K grows (:func:`composition`).

A second node score beside the paper's sum: :func:`mean_edge_scores`. Helpers: :func:`shared_sets` (S_P of every task), :func:`matched_control` (the size-matched control, with a
documented fallback when a small model has too few MLPs left) and :func:`task_evaluator`
(``evaluate(ablated)`` for the ablation panel, one bar per task). Notebook 02's glue (its five tasks, necessity
on every task, the flip table) lives in :mod:`tutorial_lib.studies.consistency`. Ablations read
the logits at each example's ``end_pos`` only.

Every function returns plain data (dataclasses of tensors, floats, dicts); the ``plot_*`` functions
of :mod:`tutorial_lib.viz.consistency` turn each into a plotly figure.

>>> scores = eap_scores(model, task)                                 # doctest: +SKIP
>>> s100 = shared_set(scores.top_k(0.10), scores.components, p=100)  # doctest: +SKIP
>>> reuse_at(scores.top_k(0.10), p=100)      # a float in [0, 1]     # doctest: +SKIP
>>> result = necessity(model, task, s100, seeds=range(5))            # doctest: +SKIP
>>> tutorial_lib.viz.consistency.plot_necessity(result)              # doctest: +SKIP
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Iterable, Optional, Sequence

import numpy as np
import torch
from jaxtyping import Bool, Float, Int
from torch import Tensor

from ..core.circuits import (ABLATION_MODES, Circuit, ablated_value, hooks_of, jaccard, real_token_mask, reference_values,
                             resample_sources, stacked_ablation_hooks)
from ..core.device import work_budget_bytes
from ..core.components import all_heads, all_mlps, parse
from ..core.controls import CONTROL_MATCHES, is_type_matched, paired_permutation_test, size_matched_random  # noqa: F401
from ..core.forward import BUDGET_BYTES, apply_ln_final_and_unembed
from ..tasks.base import TaskData

DEFAULT_KS = (0.01, 0.02, 0.05, 0.10, 0.15, 0.20, 0.25, 0.30)
DEFAULT_PS = (50, 75, 90, 95, 100)
MEASURES = ("accuracy", "metric", "answer_logprob", "logit_diff")


def shared_sets(scores: dict, k: float, p: float = 100) -> dict:
    """``{task: S_P}`` from ``{task: EAPScores}``: components in at least P% of the top-K per-example circuits."""
    return {name: shared_set(s.top_k(k), s.components, p, name=f"S_{p:g} {name}") for name, s in scores.items()}


def mean_edge_scores(scores):
    """The same per-example EAP scores under a second node score, **mean-edge**: a component's mean |edge score|
    over the edges leaving it (``EAPScores.nodes``, the paper's **sum** of |edge scores|, divided by its number
    of outgoing edges). The sum favours fan-out by construction (a layer-0 MLP feeds every later receiver, a
    last-layer head only the logits); the mean does not. Returns a new ``EAPScores`` (``meta["node_score"]``)."""
    n_out = scores.graph.edge_mask().sum(1).to(scores.nodes.dtype)[-len(scores.components):]
    if (n_out == 0).any():
        raise ValueError("a component with no outgoing edge has no mean-edge score")
    return replace(scores, nodes=scores.nodes / n_out, meta={**scores.meta, "node_score": "mean-edge"})


# ----------------------------------------------------------------------------------- consistency
def _threshold(p: float, n: int) -> int:
    if not 0 < p <= 100:
        raise ValueError(f"P must be a percentage in (0, 100], got {p!r}")
    return max(1, math.ceil(p / 100 * n - 1e-9))


def shared_mask(membership: Bool[Tensor, "n_examples n_components"], p: float) -> Bool[Tensor, "n_components"]:
    """True for components in at least ``ceil(p/100 * N)`` of the N per-example circuits."""
    if membership.ndim != 2 or membership.dtype != torch.bool:
        raise ValueError(f"membership must be a bool tensor [n_examples, n_components], got {membership.dtype} {tuple(membership.shape)}")
    return membership.sum(0) >= _threshold(p, membership.shape[0])


def shared_set(membership: Bool[Tensor, "n_examples n_components"], components: Sequence[str], p: float = 100,
               name: Optional[str] = None) -> Circuit:
    """The shared set ``S_P`` as a :class:`Circuit` (``components`` names the columns of ``membership``)."""
    if len(components) != membership.shape[1]:
        raise ValueError(f"{len(components)} component names for {membership.shape[1]} membership columns")
    mask = shared_mask(membership, p)
    return Circuit([c for c, m in zip(components, mask.tolist()) if m], name=name or f"S_{p:g}")


def largest_shared_p(scores: dict, k: float, ps: Sequence[float] = (100, 95, 90, 75, 50),
                     tasks: Optional[Sequence[str]] = None) -> Optional[float]:
    """The largest P of ``ps`` at which every task of ``tasks`` (default: all of ``scores``) has a non-empty
    shared set S_P of its top-``k`` per-example circuits; None if none does."""
    names = list(tasks if tasks is not None else scores)
    for p in sorted(ps, reverse=True):
        if all(bool(shared_mask(scores[n].top_k(k), p).any()) for n in names):
            return p
    return None


def reuse_at(membership: Bool[Tensor, "n_examples n_components"], p: float = 100) -> float:
    """reuse@P: mean over examples of |C_i ∩ S_P| / |C_i| (examples with empty circuits are skipped)."""
    mask = shared_mask(membership, p)
    sizes = membership.sum(1)
    keep = sizes > 0
    covered = (membership & mask[None]).sum(1)
    return float((covered[keep].float() / sizes[keep].float()).mean()) if keep.any() else float("nan")


def random_membership(n_examples: int, n_components: int, k: int, seed: int = 0) -> Bool[Tensor, "n_examples n_components"]:
    """Random per-example circuits: ``k`` components drawn uniformly for each example (seeded)."""
    if not 0 < k <= n_components:
        raise ValueError(f"k must be in 1..{n_components}, got {k!r}")
    g = torch.Generator().manual_seed(seed)
    idx = torch.rand(n_examples, n_components, generator=g).argsort(1)[:, :k]
    return torch.zeros(n_examples, n_components, dtype=torch.bool).scatter_(1, idx, True)


@dataclass
class ReuseSweep:
    """reuse@P and |S_P| for each P (rows) and K (columns), with the random-circuit baseline."""

    ks: list
    ps: list
    reuse: Float[Tensor, "n_p n_k"]
    shared_size: Float[Tensor, "n_p n_k"]
    random_reuse: Float[Tensor, "n_p n_k"]
    n_examples: int
    n_components: int


def reuse_sweep(scores, ks: Iterable[float] = DEFAULT_KS, ps: Iterable[float] = DEFAULT_PS, seed: int = 0) -> ReuseSweep:
    """reuse@P for K in ``ks`` (fractions, e.g. 0.10) and P in ``ps`` (percent), from ``EAPScores``.

    The baseline draws, for each K, random per-example circuits of the same size (seeded) and
    computes reuse@P the same way: what consistency would look like if circuits were noise.
    """
    ks, ps = [float(k) for k in ks], [float(p) for p in ps]
    n, c = scores.nodes.shape
    reuse = torch.zeros(len(ps), len(ks))
    size = torch.zeros(len(ps), len(ks))
    rand = torch.zeros(len(ps), len(ks))
    for j, k in enumerate(ks):
        member = scores.top_k(k)
        fake = random_membership(n, c, scores.k_for(k), seed=seed + j)
        for i, p in enumerate(ps):
            reuse[i, j] = reuse_at(member, p)
            size[i, j] = float(shared_mask(member, p).sum())
            rand[i, j] = reuse_at(fake, p)
    return ReuseSweep(ks, ps, reuse, size, rand, n, c)


# ----------------------------------------------------------------------------------- ablations
def _end_logits(model, tokens: Int[Tensor, "batch pos"], end_pos: Int[Tensor, "batch"]) -> Float[Tensor, "batch 1 d_vocab"]:
    """Logits ``[batch, 1, d_vocab]`` at ``end_pos`` only (the unembedding is most of a small model's cost)."""
    resid = model(tokens, stop_at_layer=model.cfg.n_layers)
    resid = resid[torch.arange(tokens.shape[0], device=resid.device), end_pos.to(resid.device)][:, None]
    return apply_ln_final_and_unembed(model, resid)


def _values(model, task: TaskData, components, mode: str, measure: str, seed: int, batch_size: int, reference=None):
    """Per-example ``measure`` with ``components`` ablated (nothing ablated if empty): :func:`_values_many` of one."""
    return _values_many(model, task, [(components, seed)], mode, measure, batch_size, reference)[0]


def _values_many(model, task: TaskData, jobs: Sequence[tuple], mode: str, measure: str, batch_size: int,
                 reference=None) -> list[Tensor]:
    """Per-example ``measure`` for each job ``(components, seed)``: ``components`` ablated (nothing if empty),
    batch by batch, the jobs' runs stacked along the batch (:func:`~tutorial_lib.core.circuits.stacked_ablation_hooks`).

    The ablation means the same as in :func:`tutorial_lib.core.circuits.ablation_hooks`, over the *whole* task,
    whatever the batch size: ``"mean"`` takes the mean over the reference's real tokens (padding after
    ``end_pos`` left out); ``"resample"`` gives example ``i`` the activations of example
    ``resample_sources(len(task), seed)[i]``, never its own (a last batch of one row is ablated too).
    """
    if measure not in MEASURES:
        raise ValueError(f"unknown measure {measure!r}; accepted: {MEASURES}")
    if mode not in ABLATION_MODES:
        raise ValueError(f"unknown ablation mode {mode!r}; accepted: {ABLATION_MODES}")
    ref_tokens = task.clean if reference is None else reference
    if mode == "resample" and ref_tokens.shape[0] != len(task):
        raise ValueError(f"a resample reference needs one row per example ({len(task)}); got {ref_tokens.shape[0]}")
    sets = [sorted(comps.nodes) if isinstance(comps, Circuit) else list(comps) for comps, _ in jobs]
    names = sorted({n for comps in sets for n in hooks_of(model, comps)})  # (checks every component's name)
    ref_acts = {}
    if mode == "mean" and names:  # the mean over the whole reference, taken once
        valid = real_token_mask(task.end_pos, ref_tokens.shape[1]) if reference is None else None
        ref_acts = reference_values(model, names, "mean", ref_tokens, valid)
    sources = [resample_sources(len(task), seed) if mode == "resample" else None for _, seed in jobs]
    cfg, P = model.cfg, task.clean.shape[1]
    per_row = P * max(cfg.d_model * 6, (cfg.d_mlp or 0) * 2, cfg.n_heads * P) * 4 + cfg.d_vocab * 8
    if mode == "resample":
        per_row += P * cfg.n_layers * 2 * cfg.d_model * 4  # the reference rows' activations
    chunk = max(1, work_budget_bytes(cfg.device, BUDGET_BYTES) // max(min(batch_size, len(task)) * per_row, 1))
    out = [[] for _ in jobs]
    for start in range(0, len(task), batch_size):
        sub = task.subset(slice(start, start + batch_size))
        b = len(sub)
        for first in range(0, len(jobs), chunk):
            part = list(range(first, min(first + chunk, len(jobs))))
            k = len(part)
            if mode == "resample":  # the rows this batch's ablated copies take, each run once
                live = {j: i for i, j in enumerate(j for j in part if sets[j])}
                rows = torch.cat([sources[j][start:start + b] for j in live]) if live else torch.zeros(0, dtype=torch.long)
                uniq, inverse = torch.unique(rows, return_inverse=True)
                ref = reference_values(model, sorted({n for j in live for n in hooks_of(model, sets[j])}), "resample",
                                       ref_tokens[uniq], sources=torch.arange(len(uniq))) if live else {}
                replace_with = lambda name, jj, a: ref[name][inverse[live[part[jj]] * b:(live[part[jj]] + 1) * b]]  # noqa: E731
            else:
                replace_with = lambda name, jj, a: ablated_value(name, a, mode, ref_acts)  # noqa: E731
            hooks = stacked_ablation_hooks(model, [sets[j] for j in part], b, replace_with)
            with torch.no_grad(), model.hooks(fwd_hooks=hooks):
                logits = _end_logits(model, sub.clean.repeat(k, 1), sub.end_pos.repeat(k))
            at_end = task.subset(slice(start, start + batch_size))
            at_end.end_pos = torch.zeros_like(at_end.end_pos)  # the logits hold the end positions only
            for jj, j in enumerate(part):
                out[j].append(getattr(at_end, measure)(logits[jj * b:(jj + 1) * b]).float().cpu())
    return [torch.cat(o) for o in out]


def per_example_after_ablation(model, task: TaskData, components, mode: str = "zero", measure: str = "accuracy",
                               seed: int = 0, batch_size: int = 64, reference=None) -> dict:
    """Per-example ``{"clean", "ablated", "drop"}`` of ``measure`` with ``components`` ablated.

    Runs the model batch by batch with :func:`tutorial_lib.core.circuits.ablation_hooks`. ``reference`` (tokens) defaults to
    ``task.clean``: for ``mode="mean"`` the mean over the whole task's real tokens, for ``mode="resample"``
    another example's activations (:func:`tutorial_lib.core.circuits.resample_sources` over the whole task,
    seeded; no example keeps its own).
    """
    clean, ablated = _values_many(model, task, [((), seed), (components, seed)], mode, measure, batch_size, reference)
    return {"clean": clean, "ablated": ablated, "drop": clean - ablated}


def matched_control(model, circuit: Circuit, seed: int = 0, match: str = "auto") -> Circuit:
    """The study's size-matched control: :func:`tutorial_lib.core.controls.size_matched_random` with ``match="auto"``
    by default (a small model often leaves no MLP outside S_P; ``control.meta["match"]`` then says the control
    is weaker than the paper's, and :attr:`NecessityResult.type_matched` is False)."""
    return size_matched_random(model, circuit, seed=seed, match=match)


def task_evaluator(model, tasks: dict, measure: str = "accuracy", mode: str = "zero", batch_size: int = 64):
    """``evaluate(ablated) -> {"metrics", "x", "y"}`` for :class:`tutorial_lib.viz.widgets.AblationPanel`:
    the mean ``measure`` on every task (one bar per task) with the components ``ablated`` ablated.
    ``evaluate.many(sets)`` gives the same for several sets at once (their runs stacked along the batch)."""
    if measure not in MEASURES:
        raise ValueError(f"unknown measure {measure!r}; accepted: {MEASURES}")

    def many(sets) -> list[dict]:
        jobs = [(sorted(ablated), 0) for ablated in sets]
        per_task = {name: [float(v.mean()) for v in _values_many(model, t, jobs, mode, measure, batch_size)]
                    for name, t in tasks.items()}
        out = []
        for i in range(len(jobs)):
            vals = {name: means[i] for name, means in per_task.items()}
            out.append({"metrics": vals, "x": list(vals), "y": list(vals.values())})
        return out

    def evaluate(ablated) -> dict:
        return many([ablated])[0]

    evaluate.many = many
    return evaluate


@dataclass
class NecessityResult:
    """Ablating a circuit vs size-matched random controls, per example."""

    circuit: Circuit
    controls: list
    measure: str
    mode: str
    clean: Float[Tensor, "n"]
    circuit_drop: Float[Tensor, "n"]
    random_drops: Float[Tensor, "n_seeds n"]
    p_value: float  # circuit drop vs the per-example mean control drop
    p_values: list  # circuit drop vs each control seed
    meta: dict = field(default_factory=dict)

    @property
    def random_drop(self) -> float:
        return float(self.random_drops.mean())

    @property
    def type_matched(self) -> bool:
        """True when every control has as many heads and as many MLPs as the circuit (the paper's control);
        False when ``match="auto"`` had to replace one kind by the other (a weaker control)."""
        return all(is_type_matched(c) for c in self.controls)

    @property
    def control_kind(self) -> str:
        """What the controls matched, in words, for claims and tables."""
        if self.type_matched:
            return "type-matched (as many heads and MLPs)"
        return "weaker than the paper's: " + "; ".join(sorted({c.meta.get("match", "?") for c in self.controls}))

    @property
    def excess(self) -> float:
        """Mean drop of the circuit minus that of the controls (the necessity score)."""
        return float(self.circuit_drop.mean()) - self.random_drop

    @property
    def ratio(self) -> float:
        """Mean drop of the circuit over that of the controls (``inf`` if the controls drop nothing)."""
        r = self.random_drop
        return float(self.circuit_drop.mean()) / r if r > 0 else float("inf")

    def summary(self) -> dict:
        return {"circuit size": len(self.circuit), "clean": float(self.clean.mean()),
                "circuit drop": float(self.circuit_drop.mean()), "random drop": self.random_drop,
                "excess": self.excess, "control": self.control_kind,
                "ratio": self.ratio if math.isfinite(self.ratio) else "- (control drops nothing)", "p": self.p_value}


def necessity(model, task: TaskData, circuit: Circuit, mode: str = "zero", measure: str = "accuracy",
              seeds: Iterable[int] = range(5), n_permutations: int = 10_000, batch_size: int = 64,
              match: str = "auto") -> NecessityResult:
    """Ablate ``circuit`` (e.g. S_P) and size-matched random controls (one per seed) on ``task``.

    The control for each seed has as many heads and as many MLPs as ``circuit``, none of them in it
    (:func:`matched_control`; ``match`` says what to do when the model has too few left). The paired
    permutation test asks whether the circuit's per-example drop exceeds the control's (mean over
    seeds per example; also per seed).
    """
    seeds = list(seeds)
    if not seeds:
        raise ValueError("seeds must name at least one control seed")
    controls = [matched_control(model, circuit, seed=s, match=match) for s in seeds]
    clean, ablated, *controlled = _values_many(model, task, [((), 0), (circuit, 0), *zip(controls, seeds)], mode,
                                               measure, batch_size)
    drop = clean - ablated
    drops = torch.stack([clean - v for v in controlled])
    p_mean = paired_permutation_test(drop, drops.mean(0), n_permutations, seed=0)
    p_each = [paired_permutation_test(drop, d, n_permutations, seed=0) for d in drops]
    return NecessityResult(circuit, controls, measure, mode, clean, drop, drops, p_mean, p_each,
                           meta={"task": task.name, "seeds": seeds, "match": sorted({c.meta["match"] for c in controls})})


@dataclass
class CrossTaskResult:
    """``drop[src, tgt]``: mean drop of ``measure`` on task ``tgt`` when ``S_src`` is ablated."""

    names: list
    drop: Float[Tensor, "n_src n_tgt"]
    clean: Float[Tensor, "n_tgt"]
    random_drop: Float[Tensor, "n_src n_tgt"]  # size-matched random control of S_src, on tgt
    sizes: dict
    measure: str

    def specificity(self) -> dict:
        """For each target: own-circuit drop minus the mean drop from the other tasks' circuits."""
        out = {}
        for j, name in enumerate(self.names):
            others = [self.drop[i, j] for i in range(len(self.names)) if i != j]
            out[name] = float(self.drop[j, j] - (torch.stack(others).mean() if others else 0.0))
        return out


def cross_task_matrix(model, tasks: dict, shared: dict, mode: str = "zero", measure: str = "accuracy",
                      control_seeds: Iterable[int] = (0,), batch_size: int = 64, match: str = "auto") -> CrossTaskResult:
    """Ablate each task's shared set on every task (Li & Subramani's matrix[src][tgt]).

    ``tasks`` maps names to :class:`TaskData`, ``shared`` maps the same names to circuits (S_P).
    Also ablates a size-matched random control of each ``S_src`` (mean over ``control_seeds``).
    """
    if set(tasks) != set(shared):
        raise ValueError(f"tasks {sorted(tasks)} and shared sets {sorted(shared)} must have the same names")
    names = list(tasks)
    seeds = list(control_seeds)
    drop = torch.zeros(len(names), len(names))
    rand = torch.zeros(len(names), len(names))
    clean = torch.zeros(len(names))
    controls = {src: [matched_control(model, shared[src], seed=s, match=match) for s in seeds] for src in names}
    jobs = [((), 0)] + [(shared[src], 0) for src in names] + [(c, s) for src in names for c, s in zip(controls[src], seeds)]
    for j, tgt in enumerate(names):  # every source's circuit and controls on this target: one stacked pass
        means = [float(v.mean()) for v in _values_many(model, tasks[tgt], jobs, mode, measure, batch_size)]
        clean[j] = means[0]
        for i in range(len(names)):
            drop[i, j] = clean[j] - means[1 + i]
            ctrl = means[1 + len(names) + i * len(seeds):1 + len(names) + (i + 1) * len(seeds)]
            rand[i, j] = clean[j] - float(np.mean(ctrl)) if seeds else float("nan")
    return CrossTaskResult(names, drop, clean, rand, {n: len(shared[n]) for n in names}, measure)


# ----------------------------------------------------------------------------------- overlap
def _random_like(counts: tuple, pools: tuple, rng: np.random.Generator) -> set:
    """Random component indices with ``counts = (n_heads, n_mlps)`` drawn from ``pools`` (index arrays)."""
    return {int(i) for k, pool in zip(counts, pools) if k for i in rng.choice(pool, k, replace=False)}


@dataclass
class JaccardResult:
    """Observed Jaccard overlap of shared sets, and that of random sets of the same sizes."""

    names: list
    observed: Float[Tensor, "n n"]
    random_mean: Float[Tensor, "n n"]
    random_std: Float[Tensor, "n n"]
    n_random: int


def jaccard_matrix(model, shared: dict, n_random: int = 200, seed: int = 0) -> JaccardResult:
    """Pairwise Jaccard overlap of ``shared`` circuits vs random circuits with the same head/MLP counts."""
    names = list(shared)
    n = len(names)
    obs, mean, std = torch.zeros(n, n), torch.zeros(n, n), torch.zeros(n, n)
    rng = np.random.default_rng(seed)
    n_h, n_m = len(all_heads(model)), len(all_mlps(model))
    pools = (np.arange(n_h), np.arange(n_h, n_h + n_m))  # heads, then MLPs, as integers
    counts = {k: (len(c.heads), len(c.mlps)) for k, c in shared.items()}
    for i in range(n):
        for j in range(n):
            obs[i, j] = shared[names[i]].jaccard(shared[names[j]])
            if j < i:
                mean[i, j], std[i, j] = mean[j, i], std[j, i]
                continue
            draws = [jaccard(_random_like(counts[names[i]], pools, rng), _random_like(counts[names[j]], pools, rng))
                     for _ in range(n_random)]
            mean[i, j], std[i, j] = float(np.mean(draws)), float(np.std(draws))
    return JaccardResult(names, obs, mean, std, n_random)


@dataclass
class DecompositionResult:
    """``drop[set][task]``: mean drop on each task when one part of the pair's circuits is ablated."""

    sets: dict
    drop: dict
    random_drop: dict
    clean: dict
    measure: str


def decompose(model, task_a: TaskData, task_b: TaskData, shared_a: Circuit, shared_b: Circuit, mode: str = "zero",
              measure: str = "accuracy", seeds: Iterable[int] = (0, 1, 2), batch_size: int = 64,
              names: Optional[tuple] = None, match: str = "auto") -> DecompositionResult:
    """Split two shared sets into three disjoint parts and ablate each on both tasks (Li & Subramani):

    * ``"shared core"`` = S_A ∩ S_B, * ``"task-specific"`` = S_A − S_B, * ``"complementary"`` = S_B − S_A,

    each next to size-matched random controls (:func:`matched_control`, mean over ``seeds``; an empty
    part drops nothing). ``names`` labels the two tasks (default: their ``.name``).
    """
    a, b = names or (task_a.name, task_b.name)
    if a == b:
        raise ValueError(f"the two tasks need different names, got {a!r} twice; pass names=(..., ...)")
    sets = {"shared core": Circuit(shared_a.nodes & shared_b.nodes, name=f"{a} ∩ {b}"),
            "task-specific": Circuit(shared_a.nodes - shared_b.nodes, name=f"{a} − {b}"),
            "complementary": Circuit(shared_b.nodes - shared_a.nodes, name=f"{b} − {a}")}
    seeds = list(seeds)
    controls = {key: [matched_control(model, circuit, seed=s, match=match) for s in seeds] for key, circuit in sets.items()}
    jobs = [((), 0)] + [(circuit, 0) for circuit in sets.values()] + [(c, s) for key in sets for c, s in zip(controls[key], seeds)]
    clean, drop, rand = {}, {key: {} for key in sets}, {key: {} for key in sets}
    for name, task in ((a, task_a), (b, task_b)):  # every part and its controls on this task: one stacked pass
        means = [float(v.mean()) for v in _values_many(model, task, jobs, mode, measure, batch_size)]
        clean[name] = means[0]
        for i, key in enumerate(sets):
            drop[key][name] = clean[name] - means[1 + i]
            ctrl = means[1 + len(sets) + i * len(seeds):1 + len(sets) + (i + 1) * len(seeds)]
            rand[key][name] = clean[name] - float(np.mean(ctrl)) if seeds else float("nan")
    return DecompositionResult(sets, drop, rand, clean, measure)


# ----------------------------------------------------------------------------------- composition
@dataclass
class CompositionResult:
    """Mean share of MLPs in per-example circuits and their layer distribution, per K."""

    ks: list
    mlp_share: Float[Tensor, "n_k"]
    layer_share: Float[Tensor, "n_k n_layers"]  # fraction of a circuit's members in each layer


def composition(scores, ks: Iterable[float] = DEFAULT_KS) -> CompositionResult:
    """How per-example circuits are made up as K grows: MLPs vs heads, and which layers."""
    ks = [float(k) for k in ks]
    comps = [parse(c) for c in scores.components]
    is_mlp = torch.tensor([c.kind == "mlp" for c in comps])
    layers = torch.tensor([c.layer for c in comps])
    n_layers = int(layers.max()) + 1
    onehot = torch.nn.functional.one_hot(layers, n_layers).float()  # [n_components, n_layers]
    mlp_share, layer_share = torch.zeros(len(ks)), torch.zeros(len(ks), n_layers)
    for j, k in enumerate(ks):
        member = scores.top_k(k).float()
        size = member.sum(1, keepdim=True)
        mlp_share[j] = (member[:, is_mlp].sum(1, keepdim=True) / size).mean()
        layer_share[j] = (member @ onehot / size).mean(0)
    return CompositionResult(ks, mlp_share, layer_share)
