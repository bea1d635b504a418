"""Plotly figures for per-example EAP scores and the consistency / specificity measures.

Each function takes the plain result object of :mod:`tutorial_lib.methods.attribution` or
:mod:`tutorial_lib.methods.consistency` and returns a ``plotly.graph_objects.Figure`` with titled axes; call
``.show()`` in a notebook.
"""
from __future__ import annotations

from typing import Optional

import plotly.colors
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from ..core.components import parse
from ..methods.consistency import task_evaluator
from .widgets import AblationPanel

PALETTE = plotly.colors.qualitative.Plotly


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
    small = n_layers * len(x) <= 120
    fig = go.Figure(go.Heatmap(z=grid, x=x, y=[f"layer {l}" for l in range(n_layers)], colorscale="Blues",
                               colorbar=dict(title="Σ|edge score|"), texttemplate="%{z:.2f}" if small else None))
    which = "mean over examples" if example is None else f"example {example}"
    task = (getattr(scores, "meta", None) or {}).get("task")
    fig.update_layout(title=title or f"EAP node scores{', ' + task if task else ''} ({which})", xaxis_title="head (or MLP)",
                      yaxis_title="layer", yaxis_autorange="reversed", height=max(280, 140 + 40 * n_layers),
                      width=min(1000, 260 + 60 * len(x)))
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


def _matrix(z, names, title, x_title, y_title, colorbar, text=None, diverging: bool = False) -> go.Figure:
    """A task x task heatmap; ``diverging`` centres a red-blue scale on 0 (drops can be negative)."""
    scale = dict(colorscale="RdBu_r", zmid=0) if diverging else dict(colorscale="Reds")
    fig = go.Figure(go.Heatmap(z=z, x=names, y=names, **scale, colorbar=dict(title=colorbar),
                               text=text, texttemplate="%{text}" if text is not None else None))
    fig.update_layout(title=title, xaxis_title=x_title, yaxis_title=y_title, yaxis_autorange="reversed")
    return fig


def plot_cross_task(result, title: str = "Specificity: drop on the target task when the source's S_P is ablated") -> go.Figure:
    """Heatmap of ``drop[src][tgt]``; each cell also shows the size-matched random control's drop."""
    text = [[f"{result.drop[i, j]:.2f}<br>(rand {result.random_drop[i, j]:.2f})" for j in range(len(result.names))]
            for i in range(len(result.names))]
    return _matrix(result.drop.tolist(), result.names, title, "target task (measured)",
                   "source task (its S_P ablated)", f"{result.measure} drop", text, diverging=True)


def plot_jaccard(result, title: str = "Overlap of shared sets (Jaccard), random sets of equal size in brackets") -> go.Figure:
    """Heatmap of observed Jaccard overlaps, annotated with the random-set baseline."""
    n = len(result.names)
    text = [[f"{result.observed[i, j]:.2f}" + (f"<br>({result.random_mean[i, j]:.2f})" if i != j else "") for j in range(n)]
            for i in range(n)]
    fig = _matrix(result.observed.tolist(), result.names, title, "task", "task", "Jaccard", text)
    fig.data[0].update(zmin=0, zmax=1)  # an overlap lies in [0, 1], also when every value is the same
    return fig


def plot_decomposition(result, title: str = "Shared core vs task-specific parts, each ablated alone") -> go.Figure:
    """Grouped bars: drop on each task (colour) for each part (x), random controls hatched."""
    fig = go.Figure()
    parts = list(result.sets)
    labels = [f"{p}<br>{result.sets[p].name} ({len(result.sets[p])})" for p in parts]
    for i, task in enumerate(result.clean):
        color = PALETTE[i % len(PALETTE)]
        fig.add_trace(go.Bar(name=f"{task}", x=labels, y=[result.drop[p][task] for p in parts], marker_color=color))
        fig.add_trace(go.Bar(name=f"{task}, random control", x=labels, y=[result.random_drop[p][task] for p in parts],
                             marker=dict(color=color, pattern_shape="/"), opacity=0.45))
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


# ----------------------------------------------------------------------------------- several tasks at once
def plot_membership(scores: dict, k: float, title: Optional[str] = None) -> go.Figure:
    """Heatmap, task (rows) x component (columns): the fraction of a task's examples whose top-``k``
    circuit holds the component. A column that is dark in every row is shared by every task."""
    names = list(scores)
    comps = scores[names[0]].components
    z = [scores[n].top_k(k).float().mean(0).tolist() for n in names]
    size = scores[names[0]].k_for(k)
    fig = go.Figure(go.Heatmap(z=z, x=comps, y=names, colorscale="Blues", zmin=0, zmax=1,
                               colorbar=dict(title="fraction of<br>examples"),
                               texttemplate="%{z:.2f}" if len(comps) <= 24 else None,
                               hovertemplate="%{y}, %{x}: in %{z:.0%} of the circuits<extra></extra>"))
    fig.update_layout(title=title or f"How often each component is in a per-example circuit (top {k:.0%} = {size} components)",
                      xaxis_title="component (a<layer>.h<head> = attention head, m<layer> = MLP)", yaxis_title="task",
                      yaxis_autorange="reversed", height=160 + 45 * len(names))
    return fig


def plot_reuse_sweeps(sweeps: dict, title: str = "reuse@P as the circuit size K grows (dashed: random circuits of the same size)") -> go.Figure:
    """One panel per task: reuse@P against K, one line per P, the random baseline dashed in the same colour."""
    names = list(sweeps)
    fig = make_subplots(rows=1, cols=len(names), subplot_titles=names, shared_yaxes=True, horizontal_spacing=0.03)
    for col, name in enumerate(names, 1):
        sw = sweeps[name]
        ks = [100 * k for k in sw.ks]
        for i, p in enumerate(sw.ps):
            color = PALETTE[i % len(PALETTE)]
            fig.add_trace(go.Scatter(x=ks, y=sw.reuse[i].tolist(), mode="lines+markers", name=f"P = {p:g}%",
                                     legendgroup=f"P{p}", showlegend=col == 1, line=dict(color=color),
                                     customdata=sw.shared_size[i].tolist(),
                                     hovertemplate="K=%{x:g}%<br>reuse@P=%{y:.2f}<br>|S_P|=%{customdata:.0f}<extra></extra>"),
                          1, col)
            fig.add_trace(go.Scatter(x=ks, y=sw.random_reuse[i].tolist(), mode="lines", name=f"random, P = {p:g}%",
                                     legendgroup=f"P{p}", showlegend=False, line=dict(color=color, dash="dash", width=2),
                                     opacity=0.9), 1, col)
        if col == 1:  # one legend entry that explains the dashed lines
            fig.add_trace(go.Scatter(x=[None], y=[None], mode="lines", name="random circuits (dashed, same colour = same P)",
                                     line=dict(color="grey", dash="dash", width=2)), 1, col)
        fig.update_xaxes(title_text="K (% of components)", row=1, col=col)
    fig.update_yaxes(title_text="reuse@P (fraction of a circuit in S_P)", range=[-0.02, 1.02], row=1, col=1)
    fig.update_layout(title=title, height=380, legend=dict(orientation="h", y=-0.25))
    return fig


def plot_necessity_tasks(results: dict, title: Optional[str] = None) -> go.Figure:
    """Grouped bars per task: the measure unablated, with S_P ablated, and with the size-matched random
    controls ablated (mean over seeds, error bar = spread over seeds); the p-value above each task."""
    names = list(results)
    r0 = results[names[0]]
    clean = [float(r.clean.mean()) for r in results.values()]
    circ = [c - float(r.circuit_drop.mean()) for c, r in zip(clean, results.values())]
    rand = [c - r.random_drop for c, r in zip(clean, results.values())]
    spread = [float(r.random_drops.mean(1).std()) if r.random_drops.shape[0] > 1 else 0.0 for r in results.values()]
    labels = [f"{n}<br>|S_P| = {len(r.circuit)}, p = {r.p_value:.2g}" for n, r in results.items()]
    fig = go.Figure([
        go.Bar(name="unablated", x=labels, y=clean, marker_color="grey"),
        go.Bar(name="S_P ablated", x=labels, y=circ, marker_color="crimson"),
        go.Bar(name=f"size-matched random ablated ({r0.random_drops.shape[0]} seeds)", x=labels, y=rand,
               marker_color="steelblue", error_y=dict(type="data", array=spread)),
    ])
    fig.update_layout(title=title or f"Necessity: S_P vs size-matched random components ({r0.mode} ablation)",
                      barmode="group", xaxis_title="task (p: paired permutation test, S_P drop > control drop)",
                      yaxis_title=f"mean {r0.measure}", legend=dict(orientation="h", y=1.08))
    return fig


def plot_excess_by_mode(by_mode: dict, title: str = "Necessity under three ablation modes") -> go.Figure:
    """Grouped bars: excess drop (S_P drop minus control drop) per task, one colour per ablation mode;
    ``by_mode = {mode: {task: NecessityResult}}``. A star marks p < 0.05."""
    fig = go.Figure()
    for i, (mode, results) in enumerate(by_mode.items()):
        names = list(results)
        fig.add_trace(go.Bar(name=mode, x=names, y=[r.excess for r in results.values()], marker_color=PALETTE[i % len(PALETTE)],
                             text=["*" if r.p_value < 0.05 else "" for r in results.values()], textposition="outside",
                             customdata=[r.p_value for r in results.values()],
                             hovertemplate="%{x}: excess %{y:.3f}, p = %{customdata:.3g}<extra>" + mode + "</extra>"))
    first = next(iter(next(iter(by_mode.values())).values()))
    fig.update_layout(title=title, barmode="group", xaxis_title="task (* : p < 0.05)",
                      yaxis_title=f"excess {first.measure} drop (S_P − random)", legend_title="ablation")
    return fig


def necessity_by_mode_table(by_mode: dict):
    """A table indexed by (ablation mode, task): the S_P drop, the control's drop and the p-value."""
    import pandas as pd

    return pd.DataFrame({(mode, name): {"S_P drop": float(r.circuit_drop.mean()), "control drop": r.random_drop,
                                        "p": r.p_value}
                         for mode, results in by_mode.items() for name, r in results.items()}).T


def plot_composition_tasks(results: dict, title: str = "What per-example circuits are made of as K grows") -> go.Figure:
    """Left: share of MLPs in the circuits vs K, one line per task. Right: share of circuit members in
    each layer vs K, averaged over the tasks."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=("MLP share (the rest are heads)", "layer distribution (mean over tasks)"))
    for i, (name, res) in enumerate(results.items()):
        fig.add_trace(go.Scatter(x=[100 * k for k in res.ks], y=res.mlp_share.tolist(), mode="lines+markers", name=name,
                                 line=dict(color=PALETTE[i % len(PALETTE)])), 1, 1)
    first = next(iter(results.values()))
    layers = torch.stack([r.layer_share for r in results.values()]).mean(0)  # [n_k, n_layers]
    fig.add_trace(go.Heatmap(z=layers.T.tolist(), x=[f"{100 * k:g}%" for k in first.ks], y=[f"layer {l}" for l in range(layers.shape[1])],
                             colorscale="Viridis", zmin=0, colorbar=dict(title="share of<br>circuit", x=1.02),
                             hovertemplate="K=%{x}, %{y}: %{z:.2f}<extra></extra>"), 1, 2)
    fig.update_xaxes(title_text="K (% of components)", row=1, col=1)
    fig.update_xaxes(title_text="K (% of components)", type="category", row=1, col=2)
    fig.update_yaxes(title_text="share of circuit members", range=[0, 1.02], row=1, col=1)
    fig.update_yaxes(title_text="layer", type="category", row=1, col=2, autorange="reversed")
    fig.update_layout(title=title, height=420, legend=dict(orientation="h", y=-0.2))
    return fig


def plot_eap_vs_exact(pairs: dict, title: str = "EAP's linear estimate vs exact activation patching (one dot per example and component)") -> go.Figure:
    """One scatter panel per metric: ``pairs = {metric: (eap_signed_nodes, exact_effects)}``, with Pearson r."""
    import numpy as np

    names = list(pairs)
    rs = {}
    for n, (a, b) in pairs.items():
        a, b = np.asarray(a, dtype=float).ravel(), np.asarray(b, dtype=float).ravel()
        rs[n] = float(np.corrcoef(a, b)[0, 1]) if a.std() > 0 and b.std() > 0 else float("nan")
    fig = make_subplots(rows=1, cols=len(names), subplot_titles=[f"{n}: Pearson r = {rs[n]:.2f}" for n in names])
    for col, n in enumerate(names, 1):
        a, b = (np.asarray(x, dtype=float).ravel() for x in pairs[n])
        lo, hi = float(min(a.min(), b.min())), float(max(a.max(), b.max()))
        fig.add_trace(go.Scatter(x=b, y=a, mode="markers", marker=dict(size=4, opacity=0.5), name=n, showlegend=False), 1, col)
        fig.add_trace(go.Scatter(x=[lo, hi], y=[lo, hi], mode="lines", line=dict(dash="dot", color="grey"),
                                 name="y = x", showlegend=col == 1), 1, col)
        fig.update_xaxes(title_text=f"exact effect on {n} (patched − clean)", row=1, col=col)
        fig.update_yaxes(title_text=f"EAP estimate of Δ {n}", row=1, col=col)
    fig.update_layout(title=title, height=420)
    return fig


def consistency_panel(model, tasks: dict, shared: dict, measure: str = "accuracy", mode: str = "zero"):
    """An :class:`~tutorial_lib.viz.widgets.AblationPanel` with one bar per task (its mean ``measure``) and a
    preset button per task that ablates that task's shared set."""
    return AblationPanel(model, task_evaluator(model, tasks, measure, mode),
                         presets={f"{getattr(c, 'name', name)}": c for name, c in shared.items()}, plot="bar",
                         title=f"Ablate any components ({mode} ablation) and watch every task",
                         x_title="task", y_title=f"mean {measure}")


def summary_table(sweeps: dict, necessity: dict, cross, jaccard, k: float, p: float):
    """One row per task: the study's headline numbers at K = ``k``, P = ``p`` (a pandas DataFrame).

    reuse@P and its random baseline; the necessity excess and p-value; the drop from the task's own
    S_P and the mean drop from the other tasks' S_P (cross-task matrix); the mean Jaccard overlap of
    its S_P with the others' and the random baseline of that overlap.
    """
    import pandas as pd

    rows = {}
    names = list(sweeps)
    for j, name in enumerate(names):
        sw = sweeps[name]
        kj, pi = sw.ks.index(float(k)), sw.ps.index(float(p))
        others = [i for i in range(len(names)) if i != j]
        r = necessity[name]
        rows[name] = {
            "reuse@P": float(sw.reuse[pi, kj]), "random reuse@P": float(sw.random_reuse[pi, kj]),
            "|S_P|": len(r.circuit), "necessity excess": r.excess, "necessity p": r.p_value,
            "drop, own S_P": float(cross.drop[j, j]),
            "drop, others' S_P (mean)": float(cross.drop[others, j].mean()) if others else float("nan"),
            "Jaccard with others (mean)": float(jaccard.observed[j, others].mean()) if others else float("nan"),
            "random Jaccard (mean)": float(jaccard.random_mean[j, others].mean()) if others else float("nan"),
        }
    return pd.DataFrame(rows).T
