"""Plotly figures and circuitsvis views used by every notebook.

Every figure has axis titles and, where a colour means a number, a titled colour bar. Diverging data
(patching effects, attribution scores) uses a red-blue scale centred on zero.
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
import plotly.graph_objects as go
import torch


def _np(x) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        return x.detach().float().cpu().numpy()
    return np.asarray(x, dtype=float)


def layer_head_heatmap(
    values,
    title: str,
    colorbar_title: str,
    diverging: bool = True,
    x_title: str = "head",
    y_title: str = "layer",
    text_fmt: Optional[str] = ".2f",
) -> go.Figure:
    """A layer x head heatmap (layer 0 at the top), annotated with values when the grid is small."""
    z = _np(values)
    if z.ndim != 2:
        raise ValueError(f"expected a [layers, heads] array, got shape {z.shape}")
    kw = {}
    if diverging:
        m = float(np.nanmax(np.abs(z))) or 1.0
        kw = dict(colorscale="RdBu", zmid=0, zmin=-m, zmax=m)
    else:
        kw = dict(colorscale="Viridis")
    show_text = text_fmt is not None and z.size <= 200
    fig = go.Figure(go.Heatmap(
        z=z, x=[str(h) for h in range(z.shape[1])], y=[str(l) for l in range(z.shape[0])],
        colorbar=dict(title=colorbar_title), texttemplate=f"%{{z:{text_fmt}}}" if show_text else None,
        hovertemplate=f"{y_title} %{{y}}, {x_title} %{{x}}: %{{z:.4f}}<extra></extra>", **kw))
    fig.update_layout(title=title, xaxis_title=x_title, yaxis_title=y_title, width=min(900, 160 + 60 * z.shape[1]),
                      height=min(700, 150 + 45 * z.shape[0]))
    fig.update_yaxes(autorange="reversed", type="category")
    fig.update_xaxes(type="category")
    return fig


def bar(labels: Sequence[str], values, title: str, y_title: str, x_title: str = "component", errors=None,
        colors=None) -> go.Figure:
    """A bar chart with axis titles and optional error bars."""
    fig = go.Figure(go.Bar(x=list(labels), y=_np(values), marker_color=colors,
                           error_y=dict(type="data", array=_np(errors)) if errors is not None else None))
    # wide enough for the bars and for the title (about 9 px per character at plotly's default title size)
    width = max(420, 60 * len(labels) + 200, 9 * len(title) + 120)
    fig.update_layout(title=title, xaxis_title=x_title, yaxis_title=y_title, width=width, height=420)
    return fig


def lines(x, ys: dict, title: str, x_title: str, y_title: str, log_x: bool = False) -> go.Figure:
    """Several named lines over a shared x axis."""
    fig = go.Figure()
    for name, y in ys.items():
        fig.add_trace(go.Scatter(x=_np(x), y=_np(y), mode="lines+markers", name=str(name)))
    fig.update_layout(title=title, xaxis_title=x_title, yaxis_title=y_title, width=760, height=440)
    if log_x:
        fig.update_xaxes(type="log")
    return fig


class InlineHTML:
    """HTML that Jupyter renders as is (used for circuitsvis' self-contained, offline view)."""

    def __init__(self, html: str):
        self.html = html

    def _repr_html_(self) -> str:
        return self.html


def attention_view(model, tokens, layer: int, heads: Optional[Sequence[int]] = None, cache=None, example: int = 0):
    """A circuitsvis view of the attention patterns of ``layer`` (all heads or ``heads``) for one prompt.

    The view inlines circuitsvis' JavaScript, so it draws with no internet access and sends no request.
    A model without a tokenizer (trained on bare token ids) gets its tokens labelled ``<id>``.
    """
    import circuitsvis as cv

    if tokens.ndim == 1:
        tokens = tokens[None]
    if not 0 <= layer < model.cfg.n_layers:
        raise ValueError(f"layer {layer} does not exist: the model has layers 0..{model.cfg.n_layers - 1}")
    name = f"blocks.{layer}.attn.hook_pattern"
    if cache is None:
        with torch.no_grad():
            _, cache = model.run_with_cache(tokens[example:example + 1], names_filter=name)
        pattern = cache[name][0]
    else:
        pattern = cache[name][example]
    heads = list(range(model.cfg.n_heads)) if heads is None else list(heads)
    if getattr(model, "tokenizer", None) is not None:
        str_tokens = model.to_str_tokens(tokens[example])
    else:  # models trained on bare token ids (the induction zoo): show the ids
        str_tokens = [f"<{int(t)}>" for t in tokens[example]]
    rendered = cv.attention.attention_heads(
        tokens=str_tokens, attention=pattern[heads].cpu(),
        attention_head_names=[f"a{layer}.h{h}" for h in heads])
    return InlineHTML(rendered.local_src)
