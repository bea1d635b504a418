"""Plotly figures for activation patching, path patching and the lens.

Each function takes a result object of :mod:`tutorial_lib.methods` (``PatchingResult``,
``PathPatchingResult``, ``LensResult``, ``PCAResult``, ``NeuronResult``) and returns a
``plotly.graph_objects.Figure``; the results' ``.plot()`` methods call them. Effects use a diverging
red-blue scale centred on 0; bar charts of effects use one plain colour (the axis gives the value).
"""
from __future__ import annotations

from typing import Optional

import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

BAR_COLOUR = "slategray"  # bar charts of effects: one plain colour, the axis gives the value


def heatmap(values, rows, cols, title, xlab, ylab, units, reverse_y: bool = True) -> go.Figure:
    """A diverging (red-blue, centred on 0) plotly heatmap with axis and colorbar titles.

    ``reverse_y``: the first row at the top (layers, heads); ``False`` puts it at the bottom (for a
    quantity such as YY that should increase upward).
    """
    v = torch.as_tensor(values).float()
    fig = go.Figure(go.Heatmap(z=v.tolist(), x=[str(c) for c in cols], y=[str(r) for r in rows],
                               colorscale="RdBu", zmid=0, colorbar=dict(title=units)))
    fig.update_layout(title=title, xaxis_title=xlab, yaxis_title=ylab)
    if reverse_y:
        fig.update_yaxes(autorange="reversed")
    return fig


def plot_patching(result, title: Optional[str] = None) -> go.Figure:
    """An activation-patching sweep: a diverging heatmap centred on 0 (a bar chart for a 1-D result)."""
    title = title or f"Activation patching ({result.direction}) of {result.kind}: {result.metric_name}"
    v = result.values.detach().cpu().float()
    if v.ndim == 1:  # one bar per layer, in one plain colour: the y axis already gives the value
        fig = go.Figure(go.Bar(x=result.row_labels, y=v.tolist(), marker_color=BAR_COLOUR,
                               hovertemplate="%{x}: %{y:.4f}<extra></extra>"))
        xlab = {"mlps": "MLP", "resid": "residual stream before layer"}.get(result.kind, "layer")
        fig.update_layout(title=title, xaxis_title=xlab, yaxis_title=result.units)
        fig.add_hline(y=0, line_color="black", line_width=1)
        return fig
    rows, cols = list(result.row_labels), list(result.col_labels)
    if v.ndim == 3:  # heads by position: one row per head
        rows = [f"{r}.h{h}" for r in result.row_labels for h in range(v.shape[1])]
        v = v.reshape(-1, v.shape[-1])
        cols = list(result.col_labels)
    ylab = "layer" if len(rows) == len(result.row_labels) else "head"
    xlab = "head" if result.kind == "heads" and result.values.ndim == 2 else "position"
    fig = heatmap(v, rows, cols, title, xlab, ylab, result.units)
    if len(rows) > 12:  # one label per row (plotly would label only every few), and rows tall enough to read them
        fig.update_yaxes(tickmode="array", tickvals=list(fig.data[0].y), ticktext=list(fig.data[0].y), tickfont=dict(size=9))
        fig.update_layout(height=max(450, 120 + 14 * len(rows)))
    return fig


def plot_path_patching(result, title: Optional[str] = None) -> go.Figure:
    """A layer × head heatmap of head effects beside a bar chart of MLP (and embed) effects.

    Both panels share one symmetric range. Senders with no path to any receiver (their effect is
    0 by construction) are left out: blank cells in the heatmap, no bar in the bar chart.
    """
    units = f"Δ {result.metric_name}"
    title = title or (f"Path patching ({result.direction}, senders at {result.positions}) → "
                      f"{', '.join(result.receivers[:6])}{' ...' if len(result.receivers) > 6 else ''}")
    L, H = result.heads.shape
    heads = result.heads.detach().cpu().float().clone()
    unreachable = [l for l in range(L) if not result.reaches(f"a{l}.h0")]
    heads[unreachable] = float("nan")
    bars = ([("embed", result.embed)] if result.embed == result.embed else []) + (
        [(f"m{l}", float(result.mlps[l])) for l in range(L) if result.reaches(f"m{l}")] if result.mlps is not None else [])
    lim = max([abs(v) for _, v in bars if v == v] + [abs(v) for v in heads.flatten().tolist() if v == v] + [1e-12])
    hm = heatmap(heads, [str(l) for l in range(L)], [str(h) for h in range(H)], title, "head", "layer", units)
    hm.data[0].update(zmin=-lim, zmax=lim, zmid=None)
    heads_title = "heads" + (" (blank: no path to the receiver)" if unreachable else "")
    bar = go.Bar(y=[n for n, _ in bars], x=[v for _, v in bars], orientation="h", showlegend=False,
                 marker_color=BAR_COLOUR, hovertemplate="%{y}: %{x:.4f}<extra></extra>")
    if not bars:
        return hm
    if len(unreachable) == L:  # no head can reach the receivers: the bar chart alone
        fig = go.Figure(bar)
        fig.update_yaxes(autorange="reversed", type="category", title_text="sender")
        fig.update_xaxes(title_text=units, range=[-1.05 * lim, 1.05 * lim], zeroline=True, zerolinecolor="black")
        fig.update_layout(title=f"{title}<br><sup>senders shown: those that sit before the receivers (no head does)</sup>",
                          width=640, height=max(300, 200 + 40 * len(bars)))
        return fig
    fig = make_subplots(rows=1, cols=2, column_widths=[0.72, 0.28], horizontal_spacing=0.12,
                        subplot_titles=(heads_title, "MLPs and embed"))
    fig.add_trace(hm.data[0], row=1, col=1)
    fig.add_trace(bar, row=1, col=2)
    fig.update_yaxes(autorange="reversed")
    fig.update_yaxes(type="category", row=1, col=2)
    fig.update_xaxes(title_text="head", row=1, col=1)
    fig.update_yaxes(title_text="layer", row=1, col=1)
    fig.update_xaxes(title_text=units, range=[-1.05 * lim, 1.05 * lim], zeroline=True, zerolinecolor="black",
                     row=1, col=2)
    fig.update_layout(title=title)
    return fig


def plot_lens(result, title: Optional[str] = None) -> go.Figure:
    """A logit lens: diverging heatmap, groups (YY) increasing upward as in the year-probability heatmap."""
    return heatmap(result.values, result.groups, result.token_labels,
                   title or f"Logit lens of {result.component} at END", "token", "YY", "logit contribution",
                   reverse_y=False)


def plot_pca(result) -> go.Figure:
    """The first two principal components of an MLP's input, one dot per example, coloured by YY."""
    ev = result.explained_variance_ratio
    fig = go.Figure(go.Scatter(x=result.coords[:, 0], y=result.coords[:, 1], mode="markers",
                               marker=dict(color=result.groups, colorscale="Viridis", colorbar=dict(title="YY")),
                               text=[f"YY={int(v):02d}" for v in result.groups]))
    fig.update_layout(title=result.title, xaxis_title=f"PC1 ({100 * ev[0]:.1f}% of variance)",
                      yaxis_title=f"PC2 ({100 * ev[1]:.1f}% of variance)")
    return fig


def plot_neuron_recovery(result) -> go.Figure:
    """The fraction of an MLP's effect recovered by its top-k neurons, against k (log scale)."""
    fig = go.Figure(go.Scatter(x=result.ks, y=result.recovered, mode="lines+markers"))
    fig.update_layout(title=f"MLP {result.layer}: effect recovered by its top-k neurons ({result.rank_by})",
                      xaxis_title="k (neurons kept clean, log scale)", yaxis_title="fraction of the MLP's effect")
    positive = [k for k in result.ks if k > 0]
    if positive:  # log scale, ticked at exactly the k values measured (k = 0 cannot sit on a log axis)
        fig.update_xaxes(type="log", tickmode="array", tickvals=positive, ticktext=[str(k) for k in positive])
    return fig
