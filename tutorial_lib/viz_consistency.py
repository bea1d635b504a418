"""Plotly figures for per-example EAP scores and the consistency / specificity measures.

Each function takes the plain result object of :mod:`tutorial_lib.attribution` or
:mod:`tutorial_lib.consistency` and returns a ``plotly.graph_objects.Figure`` with titled axes; call
``.show()`` in a notebook.
"""
from __future__ import annotations

from typing import Optional

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .components import parse


def plot_node_scores(scores, example: Optional[int] = None, title: Optional[str] = None) -> go.Figure:
    """Heatmap of node scores, layer (rows) x head (columns) with the MLP as a last column.

    Shows the mean over examples, or one example's scores with ``example=i``.
    """
    if example is not None and not -len(scores) <= example < len(scores):
        raise ValueError(f"example must be in 0..{len(scores) - 1}, got {example!r}")
    values = scores.nodes.float().mean(0) if example is None else scores.nodes[example].float()
    comps = [parse(c) for c in scores.components]
    n_layers = max(c.layer for c in comps) + 1
    n_heads = max((c.head for c in comps if c.kind == "head"), default=-1) + 1
    has_mlp = any(c.kind == "mlp" for c in comps)
    grid = [[None] * (n_heads + int(has_mlp)) for _ in range(n_layers)]
    for c, v in zip(comps, values.tolist()):
        grid[c.layer][c.head if c.kind == "head" else n_heads] = v
    x = [f"h{h}" for h in range(n_heads)] + (["MLP"] if has_mlp else [])
    fig = go.Figure(go.Heatmap(z=grid, x=x, y=[f"layer {l}" for l in range(n_layers)], colorscale="Blues",
                               colorbar=dict(title="Σ|edge score|")))
    which = "mean over examples" if example is None else f"example {example}"
    fig.update_layout(title=title or f"EAP node scores ({which})", xaxis_title="head (or MLP)",
                      yaxis_title="layer", yaxis_autorange="reversed")
    return fig


def plot_reuse_sweep(sweep, title: str = "Consistency: reuse@P as the circuit size K grows") -> go.Figure:
    """reuse@P against K (one line per P), with the random-circuit baseline dashed."""
    fig = go.Figure()
    ks = [100 * k for k in sweep.ks]
    for i, p in enumerate(sweep.ps):
        fig.add_trace(go.Scatter(x=ks, y=sweep.reuse[i].tolist(), mode="lines+markers", name=f"P={p:g}%",
                                 legendgroup=str(p), customdata=sweep.shared_size[i].tolist(),
                                 hovertemplate="K=%{x}%<br>reuse=%{y:.2f}<br>|S_P|=%{customdata}"))
        fig.add_trace(go.Scatter(x=ks, y=sweep.random_reuse[i].tolist(), mode="lines", name=f"random, P={p:g}%",
                                 legendgroup=str(p), line=dict(dash="dash"), opacity=0.6))
    fig.update_layout(title=title, xaxis_title="K (% of components per example)", yaxis_title="reuse@P",
                      yaxis_range=[0, 1.02])
    return fig


def plot_necessity(result, title: Optional[str] = None) -> go.Figure:
    """Bars: the measure before ablation, with S_P ablated, and with each random control ablated."""
    clean = float(result.clean.mean())
    names = ["clean", f"ablate {result.circuit.name} ({len(result.circuit)})"]
    values = [clean, clean - float(result.circuit_drop.mean())]
    for c, d in zip(result.controls, result.random_drops):
        names.append(f"ablate {c.name}")
        values.append(clean - float(d.mean()))
    colors = ["grey", "crimson"] + ["steelblue"] * len(result.controls)
    fig = go.Figure(go.Bar(x=names, y=values, marker_color=colors))
    fig.update_layout(
        title=title or f"Necessity ({result.mode} ablation): excess drop {result.excess:.3f}, "
                       f"ratio {result.ratio:.2f}, p = {result.p_value:.3g}",
        xaxis_title="condition", yaxis_title=f"mean {result.measure}")
    return fig


def _matrix(z, names, title, x_title, y_title, colorbar, text=None) -> go.Figure:
    fig = go.Figure(go.Heatmap(z=z, x=names, y=names, colorscale="Reds", colorbar=dict(title=colorbar),
                               text=text, texttemplate="%{text}" if text is not None else None))
    fig.update_layout(title=title, xaxis_title=x_title, yaxis_title=y_title, yaxis_autorange="reversed")
    return fig


def plot_cross_task(result, title: str = "Specificity: drop on the target task when the source's S_P is ablated") -> go.Figure:
    """Heatmap of ``drop[src][tgt]``; each cell also shows the size-matched random control's drop."""
    text = [[f"{result.drop[i, j]:.2f}<br>(rand {result.random_drop[i, j]:.2f})" for j in range(len(result.names))]
            for i in range(len(result.names))]
    return _matrix(result.drop.tolist(), result.names, title, "target task (measured)",
                   "source task (its S_P ablated)", f"{result.measure} drop", text)


def plot_jaccard(result, title: str = "Overlap of shared sets (Jaccard), random sets of equal size in brackets") -> go.Figure:
    """Heatmap of observed Jaccard overlaps, annotated with the random-set baseline."""
    n = len(result.names)
    text = [[f"{result.observed[i, j]:.2f}<br>({result.random_mean[i, j]:.2f})" for j in range(n)] for i in range(n)]
    return _matrix(result.observed.tolist(), result.names, title, "task", "task", "Jaccard", text)


def plot_decomposition(result, title: str = "Shared core vs task-specific parts, each ablated alone") -> go.Figure:
    """Grouped bars: drop on each task (colour) for each part (x), random controls hatched."""
    fig = go.Figure()
    parts = list(result.sets)
    labels = [f"{p} ({len(result.sets[p])})" for p in parts]
    for task in result.clean:
        fig.add_trace(go.Bar(name=f"{task}", x=labels, y=[result.drop[p][task] for p in parts]))
        fig.add_trace(go.Bar(name=f"{task}, random control", x=labels, y=[result.random_drop[p][task] for p in parts],
                             marker_pattern_shape="/", opacity=0.6))
    fig.update_layout(title=title, barmode="group", xaxis_title="ablated set (size)",
                      yaxis_title=f"{result.measure} drop")
    return fig


def plot_composition(result, title: str = "Composition of per-example circuits as K grows") -> go.Figure:
    """Left: share of MLPs (and heads) vs K. Right: share of circuit members per layer vs K."""
    ks = [100 * k for k in result.ks]
    fig = make_subplots(rows=1, cols=2, subplot_titles=("MLPs vs heads", "layer distribution"))
    fig.add_trace(go.Scatter(x=ks, y=result.mlp_share.tolist(), mode="lines+markers", name="MLP share"), 1, 1)
    fig.add_trace(go.Scatter(x=ks, y=(1 - result.mlp_share).tolist(), mode="lines+markers", name="head share"), 1, 1)
    fig.add_trace(go.Heatmap(z=result.layer_share.T.tolist(), x=ks, y=list(range(result.layer_share.shape[1])),
                             colorscale="Viridis", colorbar=dict(title="share", x=1.02)), 1, 2)
    fig.update_xaxes(title_text="K (% of components)", row=1, col=1)
    fig.update_xaxes(title_text="K (% of components)", row=1, col=2)
    fig.update_yaxes(title_text="share of circuit", range=[0, 1], row=1, col=1)
    fig.update_yaxes(title_text="layer", row=1, col=2)
    fig.update_layout(title=title)
    return fig
