"""Plotly figures for the spectral recipe: PR trajectories, the integral ranking, selectivity heatmaps,
ablation bars with controls, and the two-panel training monitor.

Every function returns a ``plotly.graph_objects.Figure`` (call ``.show()`` in a notebook); axes carry
their units. Checkpoints with ``tokens_seen == 0`` are left out of log-scale token axes.

>>> fig = pr_trajectory_figure(pr, tokens_seen, heads=["a1.h0", "a1.h3"])   # doctest: +SKIP
>>> fig.show()                                                               # doctest: +SKIP
"""
from __future__ import annotations

import math
from typing import Optional, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots
from torch import Tensor

from .components import parse_many

TOKENS_AXIS = "tokens seen (log scale)"
PR_AXIS = "participation ratio (effective dimensions)"
SEL_AXIS = "selectivity (× baseline attention, log scale)"


def _heads(shape, heads: Optional[Sequence[str]]) -> list[tuple[str, int, int]]:
    if heads is None:
        return [(f"a{l}.h{h}", l, h) for l in range(shape[0]) for h in range(shape[1])]
    comps = parse_many(list(heads))
    bad = [str(c) for c in comps if c.kind != "head" or c.layer >= shape[0] or c.head >= shape[1]]
    if bad:
        raise ValueError(f"heads {bad} are not heads of a {shape[0]}-layer, {shape[1]}-head model")
    return [(str(c), c.layer, c.head) for c in comps]


def _positive_tokens(tokens_seen) -> tuple[np.ndarray, np.ndarray]:
    t = np.asarray(tokens_seen, dtype=float)
    keep = t > 0
    return t[keep], keep


def pr_trajectory_figure(
    pr: "Tensor", tokens_seen: Sequence[float], heads: Optional[Sequence[str]] = None, title: str = "Participation ratio over training"
) -> go.Figure:
    """One line per head: PR (``[n_ckpt, n_layers, n_heads]``) against tokens seen, log x axis."""
    x, keep = _positive_tokens(tokens_seen)
    fig = go.Figure()
    for name, l, h in _heads(pr.shape[1:], heads):
        fig.add_trace(go.Scatter(x=x, y=np.asarray(pr[:, l, h])[keep], mode="lines+markers", name=name))
    fig.update_layout(title=title, xaxis_title=TOKENS_AXIS, yaxis_title=PR_AXIS, legend_title="head")
    fig.update_xaxes(type="log")
    return fig


def integral_ranking_figure(integral: "Tensor", top_k: int = 20, highlight: Sequence[str] = ()) -> go.Figure:
    """Bar chart of the top-``k`` heads by PR integral; heads in ``highlight`` drawn in another colour."""
    from .spectral import rank_heads

    ranked = rank_heads(integral, top_k)
    hl = {str(c) for c in parse_many(list(highlight))}
    fig = go.Figure(go.Bar(
        x=[n for n, _ in ranked], y=[v for _, v in ranked],
        marker_color=["crimson" if n in hl else "steelblue" for n, _ in ranked],
    ))
    fig.update_layout(
        title=f"Top {len(ranked)} heads by PR integral",
        xaxis_title="head (layer.head)", yaxis_title="I(L,H) = ∫ max(PR − 1, 0) d log(tokens)  (dimensions × log-tokens)",
    )
    return fig


def selectivity_heatmaps(sel: dict, threshold: float = 30.0) -> go.Figure:
    """One layer × head heatmap per pattern; colour = log10 selectivity, ticks labelled in ×.

    Cells at or above ``threshold`` are marked with a dot.
    """
    if not sel:
        raise ValueError("sel is empty; pass the dict returned by selectivity()")
    pats = list(sel)
    L, H = next(iter(sel.values())).shape
    vals = {p: np.log10(np.clip(np.asarray(sel[p], dtype=float), 1e-3, None)) for p in pats}
    lo = min(float(v.min()) for v in vals.values())
    hi = max(float(v.max()) for v in vals.values())
    lo, hi = math.floor(min(lo, 0)), math.ceil(max(hi, math.log10(threshold)))
    ticks = list(range(lo, hi + 1))
    fig = make_subplots(rows=1, cols=len(pats), subplot_titles=pats, shared_yaxes=True, horizontal_spacing=0.03)
    for i, p in enumerate(pats, 1):
        s = np.asarray(sel[p], dtype=float)
        fig.add_trace(go.Heatmap(
            z=vals[p], x=list(range(H)), y=list(range(L)), zmin=lo, zmax=hi, coloraxis="coloraxis",
            customdata=s, hovertemplate="layer %{y}, head %{x}<br>" + p + ": %{customdata:.3g}×<extra></extra>",
        ), row=1, col=i)
        ys, xs = np.nonzero(s >= threshold)
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="markers", marker=dict(color="white", size=6, line=dict(color="black", width=1)),
                                 showlegend=False, hoverinfo="skip"), row=1, col=i)
        fig.update_xaxes(title_text="head", dtick=1, row=1, col=i)
    fig.update_yaxes(title_text="layer", dtick=1, row=1, col=1)
    fig.update_layout(
        title=f"Attention-pattern selectivity (dots: ≥ {threshold:g}×)",
        coloraxis=dict(colorscale="Viridis", cmin=lo, cmax=hi, colorbar=dict(
            title="selectivity (×, log)", tickvals=ticks, ticktext=[f"{10.0 ** t:g}×" for t in ticks])),
    )
    return fig


def ablation_figure(result, metric: str = "top1") -> go.Figure:
    """Bars: no ablation, candidate, matched random (mean ± std over seeds), upper bound."""
    from .head_ablation import METRICS

    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}; accepted: {METRICS}")
    scale, unit = (100.0, "%") if metric in ("top1", "top5") else (1.0, "nats" if metric == "loss" else "logit")
    labels = {"top1": "induction top-1 accuracy", "top5": "induction top-5 accuracy", "loss": "loss on B", "logit_b": "logit of B"}
    names = ["none", f"candidate ({len(result.heads)} heads)", f"matched random ({len(result.controls)} seeds)",
             f"upper bound ({len(result.upper_bound_heads)} heads)"]
    vals = [result.baseline[metric], result.candidate[metric], result.control_mean(metric), result.upper_bound[metric]]
    err = [0.0, 0.0, result.control_std(metric), 0.0]
    fig = go.Figure(go.Bar(
        x=names, y=[scale * v for v in vals], error_y=dict(type="data", array=[scale * e for e in err]),
        marker_color=["grey", "crimson", "steelblue", "black"],
    ))
    fig.update_layout(title="Group ablation against controls", xaxis_title="heads zero-ablated",
                      yaxis_title=f"{labels[metric]} ({unit})")
    return fig


def training_figure(heads: Sequence[str], pattern: str = "induction") -> go.Figure:
    """Empty two-panel figure for :class:`~tutorial_lib.spectral_monitor.SpectralMonitor`: PR and selectivity.

    Trace ``i`` (left) and ``len(heads) + i`` (right) belong to ``heads[i]``.
    """
    fig = make_subplots(rows=1, cols=2, subplot_titles=("participation ratio", f"{pattern} selectivity"))
    for col in (1, 2):
        for i, name in enumerate(heads):
            fig.add_trace(go.Scatter(x=[], y=[], mode="lines+markers", name=name, legendgroup=name, showlegend=col == 1,
                                     line=dict(color=_colour(i))), row=1, col=col)
    fig.update_xaxes(type="log", title_text=TOKENS_AXIS)
    fig.update_yaxes(title_text=PR_AXIS, row=1, col=1)
    fig.update_yaxes(title_text=SEL_AXIS, type="log", row=1, col=2)
    fig.update_layout(title="Spectral monitor (live)", legend_title="head")
    return fig


def fill_training_figure(fig, tokens_seen, pr: "Tensor", sel: "Tensor", heads: Sequence[str]) -> None:
    """Write trajectories (``[n_ckpt, L, H]``) into a :func:`training_figure` in place."""
    x, keep = _positive_tokens(tokens_seen)
    comps = parse_many(list(heads))
    for i, c in enumerate(comps):
        fig.data[i].x, fig.data[i].y = x, np.asarray(pr[:, c.layer, c.head])[keep]
        j = len(comps) + i
        fig.data[j].x, fig.data[j].y = x, np.asarray(sel[:, c.layer, c.head])[keep]


def _colour(i: int) -> str:
    import plotly.colors

    pal = plotly.colors.qualitative.Plotly
    return pal[i % len(pal)]
