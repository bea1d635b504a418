"""Glue for notebook 01 (greater-than): year-probability tables, curves over YY, the circuit search, the panel.

Hanna, Liu & Variengien (2023), "How does GPT-2 compute greater-than?", find their circuit by path
patching in four steps (GPT-2 small's layer numbers):

1. senders at END -> the logits (heads a5.h1 ... a9.h1 and MLPs 8-11 show up);
2. senders at END -> the inputs of the MLPs found in step 1 (more heads, the earlier MLPs);
3. senders at YY -> the keys and values of the circuit heads (what they read at the start year);
4. senders at YY -> the lower MLPs found in step 3 (MLPs 0-3, heads a0.h1/h3/h5).

:func:`greater_than_circuit_search` chains these steps with one threshold, for any model, and
returns the circuit it found with each component's position (``"END"`` or ``"YY"``), ready for
:func:`~tutorial_lib.methods.circuit_eval.circuit_sufficiency` / :func:`~tutorial_lib.methods.circuit_eval.circuit_necessity`.

>>> task = make_greater_than(model.tokenizer, 200, seed=0)                       # doctest: +SKIP
>>> table = year_probability_table(model, task); table.plot()                    # doctest: +SKIP
>>> search = greater_than_circuit_search(model, task, threshold=0.01)             # doctest: +SKIP
>>> search.circuit, search.log                                                   # doctest: +SKIP
>>> panel_eval = ablation_evaluator(model, task)     # for widgets.AblationPanel    # doctest: +SKIP
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Iterable, Optional

import numpy as np
import plotly.graph_objects as go
import torch
from jaxtyping import Float
from torch import Tensor

from ..methods.circuit_eval import ABLATIONS, circuit_necessity, circuit_sufficiency, evaluate_circuit_tests, evaluate_circuits
from ..core.circuits import Circuit
from ..core.components import sort_key
from ..core.forward import shared_caches
from ..methods.path_discovery import discover_step, head_inputs
from ..methods.path_patching import (
    PathPatchingResult,
    ReceiversMode,
    ReceiversModeLike,
    as_receivers_mode,
    parse_receivers,
    top_senders,
)
from ..tasks.greater_than import make_greater_than


# ----------------------------------------------------------------------------------------- dataset views
@dataclass
class YearTable:
    """``values[i, y]``: mean probability of end year ``y`` ("00".."99") over prompts whose YY is ``yy[i]``."""

    values: Tensor
    yy: list

    def plot(self, title: str = "Mean probability of each end year, by start year YY", zmax="auto"):
        """Heatmap of the table, YY increasing upward.

        ``zmax`` caps the colour scale: a number, ``None`` (no cap: the largest value), or ``"auto"``
        (default): the 99.5th percentile of the values, rounded up to a multiple of 0.01, used only
        when it is below half the largest value, i.e. when a few cells (a model piling its mass on
        "99" for YY near 99) would otherwise squeeze everything else into the bottom colour. The
        colour-bar title says when the scale is capped; hovering shows the exact probability.
        """
        z = self.values.float().numpy()
        top = float(z.max()) if z.size else 1.0
        if isinstance(zmax, str):
            if zmax != "auto":
                raise ValueError(f"zmax must be a number, None or 'auto', got {zmax!r}")
            robust = math.ceil(round(float(np.quantile(z, 0.995)) * 100, 6)) / 100 if z.size else top
            cap = robust if 0 < robust < 0.5 * top else None
        else:
            cap = None if zmax is None or float(zmax) >= top else float(zmax)
        bar_title = "probability" if cap is None else f"probability<br>(colour capped<br>at {cap:g})"
        fig = go.Figure(go.Heatmap(z=z, x=[f"{y:02d}" for y in range(100)],
                                   y=[f"{v:02d}" for v in self.yy], colorscale="Viridis", zmin=0,
                                   zmax=top if cap is None else cap, colorbar=dict(title=bar_title),
                                   hovertemplate="YY %{y}, end year %{x}: p=%{z:.3f}<extra></extra>"))
        fig.update_layout(title=title, xaxis_title="predicted end year (last two digits)",
                          yaxis_title="start year YY", width=760, height=640)
        fig.update_xaxes(dtick=10)
        fig.update_yaxes(dtick=10)
        return fig


def year_probability_table(model, task, logits: Optional[Tensor] = None) -> YearTable:
    """Mean p("00")..p("99") at END, grouped by the start year's YY (the paper's Figure 2 heatmap)."""
    if logits is None:
        with torch.no_grad():
            logits = model(task.clean.to(model.cfg.device))
    probs = task.year_probs(logits).cpu()
    keys = sorted(set(task.yy.tolist()))
    return YearTable(torch.stack([probs[task.yy == k].mean(0) for k in keys]), keys)


def by_yy(task, per_example: Float[Tensor, "batch"]) -> tuple[list, list]:
    """Average a per-example value over the prompts sharing a YY: ``(yy values, means)``, YY sorted."""
    per_example = torch.as_tensor(per_example).detach().float().cpu()
    if per_example.shape != (len(task),):
        raise ValueError(f"per_example must have one value per prompt ({len(task)}), got shape {tuple(per_example.shape)}")
    keys = sorted(set(task.yy.tolist()))
    return keys, [float(per_example[task.yy == k].mean()) for k in keys]


def plot_by_yy(task, curves: dict, title: str, y_title: str = "mean probability difference") -> go.Figure:
    """One line per entry of ``curves`` (name -> per-example values), averaged by YY."""
    fig = go.Figure()
    for name, vals in curves.items():
        x, y = by_yy(task, vals)
        fig.add_trace(go.Scatter(x=x, y=y, mode="lines", name=str(name)))
    fig.update_layout(title=title, xaxis_title="start year YY", yaxis_title=y_title, width=760, height=420)
    return fig


# ----------------------------------------------------------------------------------------- circuit search
@dataclass
class CircuitSearch:
    """What :func:`greater_than_circuit_search` found: the circuit, each step's sweep, and a plain log."""

    circuit: Circuit
    steps: dict = field(default_factory=dict)  # "1: END -> logits" -> PathPatchingResult
    log: list = field(default_factory=list)

    def __str__(self) -> str:
        return "\n".join(self.log)


def _found(res: PathPatchingResult, threshold: float, exclude: Iterable[str] = ()) -> list[str]:
    skip = set(exclude)
    return [c for c in top_senders(res, threshold=threshold, sign="negative") if c not in skip]


def greater_than_circuit_search(model, task, threshold: float = 0.01, progress: bool = False,
                                reuse: Iterable[PathPatchingResult] = (),
                                receivers_mode: ReceiversModeLike = ReceiversMode.INDEPENDENT) -> CircuitSearch:
    """Run the paper's four path-patching steps on ``model`` and keep senders whose noising effect is
    at most ``-threshold`` (metric units: 0.01 = one point of probability difference).

    Steps (each a :func:`~tutorial_lib.methods.path_discovery.discover_step`):

    1. every sender at END -> ``logits``;
    2. every sender at END -> the input of each MLP found so far, repeated until no new MLP appears
       (GPT-2: MLPs 8-11 feed each other; a 2-layer model: ``m1`` then ``m0``);
    3. every sender at YY -> the keys and values of the heads found at END (``receivers_mode``, default
       ``"independent"`` as in the paper: each head's keys and values get only the direct paths from the
       senders, not the changed outputs of circuit heads in earlier layers; steps 1, 2 and 4 have one
       receiver each, where the two modes agree);
    4. every sender at YY -> the input of each MLP found at YY in step 3 (repeated likewise).

    ``embed`` counts as a sender (at YY it is the start year's token itself). Returns a
    :class:`CircuitSearch` whose ``circuit.meta["positions"]`` maps each component to ``"END"`` or
    ``"YY"``. Raises ValueError for a threshold that is not positive.

    ``reuse``: results of :func:`discover_step` already computed on the same ``task`` (e.g. the ones a
    notebook ran step by step); a step with the same receivers and sender position is taken from them
    instead of being recomputed (only one computed with the same ``receivers_mode``).
    """
    if not threshold > 0:
        raise ValueError(f"threshold must be a positive number of metric units (e.g. 0.01); got {threshold!r}")
    steps, log, where = {}, [], {}

    mode = as_receivers_mode(receivers_mode)
    known = {(frozenset(r.receivers), r.positions, r.receivers_mode): r for r in reuse}

    def run(label, receivers, pos):
        names = frozenset(str(c) for c in parse_receivers(receivers, model))
        res = known.get((names, pos, mode.value)) or discover_step(model, task, receivers, pos, progress=progress,
                                                                    receivers_mode=mode)
        steps[label] = res
        return res

    def add(names, pos, label):
        new = [n for n in names if n not in where]
        for n in new:
            where[n] = pos
        log.append(f"{label}: {', '.join(names) if names else 'nothing'} above threshold"
                   + (f" (new: {', '.join(new)})" if new and new != names else ""))
        return new

    def follow_mlps(found, step, pos, record, exclude=()):
        """Patch into each MLP found so far (and any MLP that adds), once each; ``record`` returns the new names."""
        queue, done = [c for c in found if c.startswith("m")], set()
        while queue:
            m = queue.pop(0)
            if m in done:
                continue
            done.add(m)
            label = f"{step}: {pos} -> {m}"
            new = record(label, _found(run(label, m, pos), threshold, exclude))
            queue += [c for c in new if c.startswith("m")]

    with shared_caches():  # every step patches the same clean and corrupt runs: the model runs on them once
        found = add(_found(run("1: END -> logits", "logits", "END"), threshold, ["embed"]), "END", "1: END -> logits")
        follow_mlps(found, 2, "END", lambda label, names: add(names, "END", label), exclude=["embed"])
        heads = sorted((c for c, p in where.items() if c.startswith("a")), key=sort_key)
        yy_found = []
        if heads:
            label = "3: YY -> k, v of " + ", ".join(heads)
            yy_found = _found(run(label, head_inputs(heads, "kv"), "YY"), threshold)
            log.append(f"{label}: {', '.join(yy_found) or 'nothing'} above threshold")
        yy_where = {c: "YY" for c in yy_found}

        def add_yy(label, names):
            new = [c for c in names if c not in yy_where]
            log.append(f"{label}: {', '.join(new) or 'nothing new'} above threshold")
            yy_where.update({c: "YY" for c in new})
            return new

        follow_mlps(yy_found, 4, "YY", add_yy)
        # a component needed at both positions keeps the END label; its YY role is recorded separately
        positions = dict(where)
        extra_yy = {}
        for c in yy_where:
            if c in positions:
                extra_yy[c] = "YY"
            else:
                positions[c] = "YY"
        circuit = Circuit(sorted(positions, key=sort_key), name=f"greater-than circuit (threshold {threshold})",
                          meta={"positions": positions, "also_at_YY": sorted(extra_yy, key=sort_key)})
    return CircuitSearch(circuit, steps, log)


# ----------------------------------------------------------------------------------------- evaluation
def evaluate_circuit(model, task, circuit: Circuit) -> dict:
    """Sufficiency and necessity of ``circuit`` (positions from ``circuit.meta``) plus the full model's
    figures: ``{"full", "corrupt", "sufficiency", "necessity", "sufficiency_fraction",
    "necessity_fraction"}`` (probability differences; fractions of the full model's)."""
    (suf,), (nec,) = evaluate_circuit_tests(model, task, [(circuit, "sufficiency"), (circuit, "necessity")])
    return {"full": suf.clean, "corrupt": suf.corrupt, "sufficiency": suf.value, "necessity": nec.value,
            "sufficiency_fraction": suf.fraction_of_clean, "necessity_fraction": nec.fraction_of_clean,
            "per_example": {"sufficiency": suf.per_example, "necessity": nec.per_example}}


def without_embedding(circuit: Circuit) -> Circuit:
    """``circuit`` minus ``embed`` (positions kept): corrupting it tests the circuit's internal components."""
    return Circuit([c for c in circuit.nodes if c != "embed"], name=f"{circuit.name} without the embedding",
                   meta={"positions": {c: p for c, p in circuit.meta.get("positions", {}).items() if c != "embed"}})


def necessity_breakdown(model, task, circuit: Circuit, n_controls: int = 5) -> dict:
    """Where a circuit's necessity lives: corrupt (the paper's '01' run) the circuit without the embedding, each
    of its components alone, and the circuit without its strongest one (the component whose corruption alone
    lowers the metric most), each at its own position; and ``n_controls`` size-matched random sets of as many
    components as that rest, drawn outside the whole circuit (:func:`~tutorial_lib.core.controls.size_matched_random`
    with the strongest one excluded; ``match="auto"``), corrupted at *every* position, a stronger intervention than
    the circuit's own. Returns ``{"inner", "top", "alone", "rest", "controls", "control_match"}``: the
    :class:`~tutorial_lib.methods.circuit_eval.CircuitEvaluation` of the inner circuit, the strongest component's
    name, ``{component: mean metric with it alone corrupted}``, the rest's evaluation (``None`` for a one-component
    circuit) and the controls' mean metrics."""
    from ..core.controls import size_matched_random

    inner = without_embedding(circuit)
    pos = inner.meta.get("positions", {})
    one = lambda names: Circuit(list(names), name=", ".join(names), meta={"positions": {c: pos[c] for c in names if c in pos}})  # noqa: E731
    ordered = sorted(inner.nodes, key=sort_key)
    first = evaluate_circuits(model, task, [inner] + [one([c]) for c in ordered])  # one batched pass for them all
    alone = {c: ev.value for c, ev in zip(ordered, first[1:])}
    top = min(alone, key=alone.get)
    names = [c for c in ordered if c != top]
    ctrls = [size_matched_random(model, names, seed=seed, match="auto", exclude=[top])
             for seed in range(n_controls if names else 0)]
    second = evaluate_circuits(model, task, ([one(names)] if names else []) + ctrls)
    rest, controls = (second[0], second[1:]) if names else (None, [])
    return {"inner": first[0], "top": top, "alone": alone, "rest": rest, "controls": [c.value for c in controls],
            "control_match": ctrls[-1].meta["match"] if ctrls else ""}


def flip_table(model, task, circuits: dict, ablations: Iterable[str] = ABLATIONS, min_sufficiency: float = 0.8):
    """Which of notebook 01's conclusions flip: one row per (threshold, ablation), as a pandas DataFrame.

    ``circuits``: ``{threshold: Circuit}`` (each with ``meta["positions"]``, as the search returns them).
    For each metric -- the probability difference and the cutoff sharpness -- the claims are *sufficient*
    (the circuit alone keeps ≥ ``min_sufficiency`` of the full model's value) and *necessary* (corrupting the
    circuit without the embedding takes the value below 0), with the components that do not carry the clean
    input given ``ablation``'s value (:data:`~tutorial_lib.methods.circuit_eval.ABLATIONS`).
    """
    import pandas as pd

    metrics = {"prob. diff": task.prob_diff, "sharpness": task.cutoff_sharpness}
    rows = []
    for t, circuit in circuits.items():
        inner = without_embedding(circuit)
        for ablation in ablations:
            row = {"threshold": t, "ablation": ablation, "components": len(circuit.nodes)}
            sufs, necs = evaluate_circuit_tests(model, task, [(circuit, "sufficiency"), (inner, "necessity")],
                                                list(metrics.values()), ablation)
            for label, suf, nec in zip(metrics, sufs, necs):
                row[f"sufficiency, {label} (of full)"] = round(suf.fraction_of_clean, 3)
                row[f"sufficient, {label}"] = "pass" if suf.fraction_of_clean >= min_sufficiency else "fail"
                row[f"necessity, {label}"] = round(nec.value, 3)
                row[f"necessary, {label}"] = "pass" if nec.value < 0 else "fail"
            rows.append(row)
    return pd.DataFrame(rows).set_index(["threshold", "ablation"])


def ablation_evaluator(model, task) -> Callable[[frozenset], dict]:
    """``evaluate(ablated)`` for :class:`~tutorial_lib.viz.widgets.AblationPanel`: each ablated component
    takes its output from the corrupted ("01") prompt at every position (the paper's ablation); returns
    the mean probability difference and cutoff sharpness, and the probability-difference curve over YY."""
    with torch.no_grad():
        full = model(task.clean.to(model.cfg.device))
    base_sharp = float(task.cutoff_sharpness(full).mean())

    def evaluate(ablated: frozenset) -> dict:
        if ablated:
            per = circuit_necessity(model, task, Circuit(sorted(ablated, key=sort_key), name="ablated")).per_example
            sharp = float("nan")
        else:
            per, sharp = task.prob_diff(full).cpu(), base_sharp
        x, y = by_yy(task, per)
        metrics = {"probability difference": float(per.mean())}
        if sharp == sharp:
            metrics["cutoff sharpness"] = sharp
        return {"metrics": metrics, "x": x, "y": y}

    return evaluate


# a variant counts as done by the full model from this probability difference (in the variant's own direction) up
DOES_VARIANT = 0.2


def generalisation(model, tokenizer, circuit: Circuit, variants=("lasted", "started", "sequence", "reversed"),
                   n: int = 100, seed: int = 0) -> list[dict]:
    """The full model's probability difference on each prompt variant and the circuit's sufficiency on it.

    ``"full model does it"`` is ``"yes"`` when the full model's value reaches :data:`DOES_VARIANT`; otherwise
    ``"fraction of full"`` (circuit / full model) divides two small or oppositely signed numbers and is NaN.
    A variant the tokenizer cannot build (missing words) is reported with ``"error"`` instead of numbers.
    """
    rows = []
    for v in variants:
        try:
            t = make_greater_than(tokenizer, n, seed=seed, variant=v)
        except ValueError as err:
            rows.append({"variant": v, "error": str(err)})
            continue
        ev = circuit_sufficiency(model, t, circuit)
        does = ev.clean >= DOES_VARIANT
        rows.append({"variant": v, "direction": t.direction, "full model": round(ev.clean, 3),
                     "full model does it": "yes" if does else "no",
                     "circuit only (sufficiency)": round(ev.value, 3),
                     "fraction of full": round(ev.fraction_of_clean, 3) if does else float("nan"), "example": t.prompts[0]})
    return rows


def flip_reading(flips, threshold: float) -> str:
    """Notebook 01's "What you should see" under the flip table (``flip_table``'s DataFrame), at ``threshold``."""
    at = flips.xs(threshold, level="threshold")
    suf = "sufficiency, prob. diff (of full)"
    nec_ok = [a for a in at.index if at.loc[a, "necessary, prob. diff"] == "pass"]
    n_thr = flips.index.get_level_values("threshold").nunique()
    by_ablation = flips.groupby(level="ablation")[suf].mean()
    text = (f"At THRESHOLD = {threshold} the circuit alone keeps "
            + ", ".join(f"{a} {r[suf]:.0%}" for a, r in at.iterrows())
            + f" (sufficient in {int((flips['sufficient, prob. diff'] == 'pass').sum())}"
            f" of the {len(flips)} rows); corrupting it without the embedding gives "
            + ", ".join(f"{a} {r['necessity, prob. diff']:.2f}" for a, r in at.iterrows())
            + ". Necessity (below 0) holds under " + (", ".join(nec_ok) or "no ablation") + ".")
    if "corrupt" in at.index:
        text += (f" The cutoff sharpness falls to {at.loc['corrupt', 'necessity, sharpness']:.3f}: the edge at YY is gone, "
                 "but nothing makes it negative.")
    if n_thr > 1:
        # read as the threshold falls (the circuit grows): "grows" only if every step rises or stays (words.trend)
        from .words import trend

        grows = all(trend({-float(t): float(v) for t, v in flips.xs(a, level="ablation")[suf].items()}) == "rises"
                    for a in at.index)
        text += (" Sufficiency grows as the threshold falls under every ablation." if grows else
                 " Sufficiency does not grow with the circuit under every ablation.")
    return text + (f" The most forgiving ablation for sufficiency is {by_ablation.idxmax()}, the harshest "
                   f"{by_ablation.idxmin()}.")


def generalisation_reading(gen) -> str:
    """Notebook 01's "What you should see" under the generalisation table (``generalisation``'s rows, as a
    DataFrame)."""
    ok = gen[gen["full model does it"] == "yes"] if "full model does it" in gen else gen.iloc[:0]

    def reads(r):
        f = r["fraction of full"]
        if f >= 0.8:
            return f"on {r.variant} the circuit alone keeps {f:.0%}"
        if f > 0:
            return f"on {r.variant} it keeps only {f:.0%}"
        return (f"on {r.variant} the circuit alone scores {r['circuit only (sufficiency)']:.3f}, the full "
                f"model {r['full model']:.3f}: these prompts need other components")

    text = ("The full model does " + (", ".join(ok["variant"]) or "none of the variants")
            + f" (at least {DOES_VARIANT} in its own direction)"
            + "".join("; " + reads(r) for _, r in ok.iterrows())
            + ". Elsewhere the fraction is NaN.")
    rev = gen[gen["variant"] == "reversed"] if "variant" in gen else gen.iloc[:0]
    if len(rev) and float(rev["full model"].iloc[0]) <= -DOES_VARIANT:  # clearly below zero, not noise around it
        text += (f" On the reversed prompts the full model scores {float(rev['full model'].iloc[0]):.3f}: it still answers "
                 f"'greater', and so does the circuit alone ({float(rev['circuit only (sufficiency)'].iloc[0]):.3f}).")
    return text
