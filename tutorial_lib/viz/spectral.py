"""Plotly figures for the spectral recipe: PR trajectories, the integral ranking, selectivity heatmaps,
ablation bars with controls, and the two-panel training monitor (static, or live while a model trains:
:class:`LiveTrainingFigure`, the ``on_record`` callback of
:class:`~tutorial_lib.methods.spectral_monitor.SpectralMonitor`).

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

from ..core.components import parse_many
from ..methods.head_ablation import METRICS
from ..methods.spectral import rank_heads

TOKENS_AXIS = "tokens seen (log scale)"
PR_AXIS = "participation ratio (effective dimensions)"
SEL_AXES = {"random_positions": "selectivity (÷ attention on random positions, log)",
            "uniform": "selectivity (÷ 1/T, log)"}
SEL_SHORT = {"random_positions": "÷ random positions", "uniform": "÷ 1/T"}


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


# one sequential colour scale per layer (shade varies with the head), so a legend of many heads stays readable
LAYER_SCALES = (("Blues", "blue"), ("Reds", "red"), ("Greens", "green"), ("Purples", "purple"), ("Oranges", "orange"),
                ("Greys", "grey"))


def head_colour(layer: int, head: int, n_heads: int) -> str:
    """The colour of head ``a{layer}.h{head}``: layer 0 blues, layer 1 reds, ...; darker for a higher head index."""
    import plotly.colors

    scale = LAYER_SCALES[layer % len(LAYER_SCALES)][0]
    t = 0.45 + 0.5 * (head / (n_heads - 1) if n_heads > 1 else 1.0)
    return plotly.colors.sample_colorscale(scale, [t])[0]


def _layer_legend_title(layers: Sequence[int]) -> str:
    named = [f"{LAYER_SCALES[l % len(LAYER_SCALES)][1]}s: layer {l}" for l in sorted(set(layers))]
    return "head<br>(" + ",<br>".join(named) + ")"


def _height_for_legend(n_entries: int, n_layers: int, base: int = 450) -> int:
    """Tall enough that a vertical legend of ``n_entries`` heads (about 20 px each, with no gap between
    legend groups) and its title (one line per layer) fit between the default margins (100 + 80 px)."""
    return max(base, 200 + 17 * (1 + n_layers) + 20 * n_entries)


def _log_ticks(values) -> dict:
    """Tick settings for a log axis over ``values``: one labelled tick per power of ten (no "2", "5" minor
    labels) when the data span a decade or more; plotly's automatic ticks (full numbers) otherwise."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v) & (v > 0)]
    if v.size and math.log10(v.max()) - math.log10(v.min()) >= 1:
        return dict(dtick=1)
    return dict(dtick=None)


def pr_trajectory_figure(
    pr: "Tensor", tokens_seen: Sequence[float], heads: Optional[Sequence[str]] = None, title: str = "Participation ratio over training"
) -> go.Figure:
    """One line per head: PR (``[n_ckpt, n_layers, n_heads]``) against tokens seen, log x axis."""
    x, keep = _positive_tokens(tokens_seen)
    fig = go.Figure()
    chosen = _heads(pr.shape[1:], heads)
    for name, l, h in chosen:
        fig.add_trace(go.Scatter(x=x, y=np.asarray(pr[:, l, h])[keep], mode="lines+markers", name=name,
                                 line=dict(color=head_colour(l, h, pr.shape[2]))))
    layers = [l for _, l, _ in chosen]
    fig.update_layout(title=title, xaxis_title=TOKENS_AXIS, yaxis_title=PR_AXIS, legend_title=_layer_legend_title(layers),
                      height=_height_for_legend(len(chosen), len(set(layers))))
    fig.update_xaxes(type="log", **_log_ticks(x))
    return fig


def integral_ranking_figure(integral: "Tensor", top_k: int = 20, highlight: Sequence[str] = (),
                            highlight_label: str = "highlighted heads") -> go.Figure:
    """Bar chart of the heads ranked by PR integral (the top ``top_k``); heads in ``highlight`` in red.

    The title says "top k" only when ``k`` is smaller than the number of heads; when some heads are
    highlighted, a legend names the two colours (``highlight_label`` for the red ones).
    """
    ranked = rank_heads(integral, top_k)
    n_total = int(np.prod(tuple(integral.shape)))
    hl = {str(c) for c in parse_many(list(highlight))}
    colours = {True: "crimson", False: "steelblue"}
    fig = go.Figure(go.Bar(
        x=[n for n, _ in ranked], y=[v for _, v in ranked], showlegend=False,
        marker_color=[colours[n in hl] for n, _ in ranked],
        hovertemplate="%{x}: I(L,H) = %{y:.2f}<extra></extra>",
    ))
    if hl:  # legend entries for the two colours: empty marker traces, which leave the bars' layout alone
        for flag, label in ((True, highlight_label), (False, "other heads")):
            fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=label,
                                     marker=dict(color=colours[flag], symbol="square", size=12)))
    what = "Heads ranked by PR integral" if len(ranked) >= n_total else f"Top {len(ranked)} of {n_total} heads by PR integral"
    fig.update_layout(
        title=what, xaxis_title="head (layer.head)", yaxis_title="PR integral I(L,H)",
        legend=dict(orientation="h", yanchor="bottom", y=1.02, xanchor="right", x=1.0),
    )
    return fig


def selectivity_heatmaps(sel: dict, threshold: float = 30.0) -> go.Figure:
    """One layer × head heatmap per pattern; colour = log10 selectivity, ticks labelled in ×.

    Cells at or above ``threshold`` are marked with a dot. For a
    :class:`~tutorial_lib.methods.selectivity.Selectivity` the title names its baseline, and hovering a cell
    shows the head's absolute attention on the pattern's target and on position 0 beside the ratio.
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
    att = getattr(sel, "attention", None)
    for i, p in enumerate(pats, 1):
        s = np.asarray(sel[p], dtype=float)
        hover = "layer %{y}, head %{x}<br>" + p + ": %{customdata[0]:.3g}×"
        extra = [s]
        if att is not None:  # the absolute attention beside the ratio
            extra += [100 * np.asarray(att[p], dtype=float), 100 * np.asarray(att["BOS"], dtype=float)]
            hover += "<br>attention on the target: %{customdata[1]:.1f}%<br>attention on BOS: %{customdata[2]:.0f}%"
        fig.add_trace(go.Heatmap(
            z=vals[p], x=list(range(H)), y=list(range(L)), zmin=lo, zmax=hi, coloraxis="coloraxis",
            customdata=np.stack(extra, -1), hovertemplate=hover + "<extra></extra>",
        ), row=1, col=i)
        ys, xs = np.nonzero(s >= threshold)
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="markers", marker=dict(color="white", size=6, line=dict(color="black", width=1)),
                                 showlegend=False, hoverinfo="skip"), row=1, col=i)
        fig.update_xaxes(title_text="head", dtick=1, row=1, col=i)
    fig.update_yaxes(title_text="layer", dtick=1, row=1, col=1)
    base = getattr(sel, "baseline", None)
    fig.update_layout(
        title=f"Attention-pattern selectivity (dots: ≥ {threshold:g}×)"
              + (f"<br><sup>target attention {base.describe(sel.n_baseline)}</sup>" if base is not None else ""),
        height=min(900, max(380, 60 * L + 260)),  # rows readable from 2 layers (the small models) to GPT-2's 12
        coloraxis=dict(colorscale="Viridis", cmin=lo, cmax=hi, colorbar=dict(
            title="selectivity", tickvals=ticks, ticktext=[f"{10.0 ** t:g}×" for t in ticks])),
    )
    return fig


def ablation_figure(result, metric: str = "top1") -> go.Figure:
    """Bars: no ablation, candidate, matched random (mean over its distinct draws), upper bound.

    Seeds that drew the same control heads count once. The control's error bar (± one standard
    deviation over the distinct draws) is drawn only when there are at least two of them.
    """
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}; accepted: {METRICS}")
    scale, unit = (100.0, "%") if metric in ("top1", "top5") else (1.0, "nats" if metric == "loss" else "logit")
    labels = {"top1": "induction top-1 accuracy", "top5": "induction top-5 accuracy", "loss": "loss on B", "logit_b": "logit of B"}
    n = result.n_distinct_controls
    control = (f"matched random<br>(mean ± std of {n} distinct draws)" if n > 1 else "matched random<br>(1 distinct draw)")
    names = ["none", f"candidate ({len(result.heads)} heads)", control, f"upper bound ({len(result.upper_bound_heads)} heads)"]
    vals = [result.baseline[metric], result.candidate[metric], result.control_mean(metric), result.upper_bound[metric]]
    fig = go.Figure(go.Bar(
        x=names, y=[scale * v for v in vals], marker_color=["grey", "crimson", "steelblue", "black"],
        hovertemplate="%{x}: %{y:.2f}<extra></extra>",
    ))
    if n > 1:  # the error bar on the control alone (a bar trace's error bars would put empty caps on every bar)
        fig.add_trace(go.Scatter(
            x=[names[2]], y=[scale * vals[2]], mode="markers", marker=dict(size=1, color="black"), showlegend=False,
            error_y=dict(type="data", array=[scale * result.control_std(metric)], color="black", width=8),
            hovertemplate=f"± %{{error_y.array:.2f}} (std over {n} distinct draws)<extra></extra>",
        ))
    fig.update_layout(title="Group ablation against controls", xaxis_title="heads zero-ablated",
                      yaxis_title=f"{labels[metric]} ({unit})", showlegend=False)
    return fig


def training_figure(heads: Sequence[str], pattern: str = "induction", baseline: str = "random_positions") -> go.Figure:
    """Empty monitor figure for :class:`~tutorial_lib.methods.spectral_monitor.SpectralMonitor`: one row of panels per
    layer (PR left, selectivity right), so that no panel holds more than one layer's heads.

    Trace ``i`` (left) and ``len(heads) + i`` (right) belong to ``heads[i]``. Heads are coloured by
    layer (layer 0 blues, layer 1 reds, ...). The selectivity axes name the ``baseline`` (``"random_positions"`` or
    ``"uniform"``).
    """
    if str(getattr(baseline, "value", baseline)) not in SEL_AXES:
        raise ValueError(f"unknown baseline {baseline!r}; accepted: {list(SEL_AXES)}")
    comps = parse_many(list(heads))
    n_heads = max((c.head for c in comps), default=0) + 1
    layers = sorted({c.layer for c in comps}) or [0]
    row = {l: i + 1 for i, l in enumerate(layers)}
    titles = [t for l in layers for t in (f"layer {l}: participation ratio", f"layer {l}: {pattern} selectivity")]
    fig = make_subplots(rows=len(layers), cols=2, subplot_titles=titles, vertical_spacing=0.32 / len(layers))
    for col in (1, 2):
        for c in comps:
            name = str(c)
            fig.add_trace(go.Scatter(x=[], y=[], mode="lines+markers", name=name, legendgroup=name, showlegend=col == 1,
                                     line=dict(color=head_colour(c.layer, c.head, n_heads))), row=row[c.layer], col=col)
    fig.update_xaxes(type="log")
    fig.update_xaxes(title_text=TOKENS_AXIS, row=len(layers))
    fig.update_yaxes(title_text="PR", col=1)
    base = str(getattr(baseline, "value", baseline))
    fig.update_yaxes(title_text="selectivity (log)", type="log", col=2)
    fig.update_layout(title=f"Spectral monitor (live): PR and {pattern} selectivity, {SEL_SHORT[base]}",
                      legend=dict(title_text=_layer_legend_title([c.layer for c in comps]), tracegroupgap=0),
                      height=max(_height_for_legend(len(comps), len(layers)), 120 + 230 * len(layers)))
    return fig


def fill_training_figure(fig, tokens_seen, pr: "Tensor", sel: "Tensor", heads: Sequence[str]) -> None:
    """Write trajectories (``[n_ckpt, L, H]``) into a :func:`training_figure` in place."""
    x, keep = _positive_tokens(tokens_seen)
    comps = parse_many(list(heads))
    ys = []
    for i, c in enumerate(comps):
        fig.data[i].x, fig.data[i].y = x, np.asarray(pr[:, c.layer, c.head])[keep]
        j = len(comps) + i
        y = np.asarray(sel[:, c.layer, c.head])[keep]
        fig.data[j].x, fig.data[j].y = x, y
        ys.append(y)
    n_axes = 2 * len({c.layer for c in comps} or {0})
    ticks_x, ticks_y = _log_ticks(x), _log_ticks(np.concatenate(ys) if ys else [])
    fig.update_layout({f"xaxis{'' if i == 1 else i}": ticks_x for i in range(1, n_axes + 1)})
    fig.update_layout({f"yaxis{i}": ticks_y for i in range(2, n_axes + 1, 2)})


def monitor_figure(monitor) -> go.Figure:
    """A static two-panel figure of a :class:`~tutorial_lib.methods.spectral_monitor.SpectralMonitor`'s
    trajectories so far (its ``plotted_heads()``, PR and ``plot_pattern`` selectivity)."""
    heads = monitor.plotted_heads()
    fig = training_figure(heads, monitor.plot_pattern, getattr(monitor, "baseline", "random_positions"))
    if monitor.steps:
        fill_training_figure(fig, monitor.tokens_seen, monitor.pr, monitor.sel[monitor.plot_pattern], heads)
    return fig


def in_notebook() -> bool:
    """True inside a Jupyter kernel (where a live figure can be displayed and updated)."""
    try:
        from IPython import get_ipython

        ip = get_ipython()
        return ip is not None and "IPKernelApp" in getattr(ip, "config", {})
    except ImportError:
        return False


class LiveTrainingFigure:
    """A live two-panel figure for a training run: ``SpectralMonitor(probe, on_record=LiveTrainingFigure())``.

    At each checkpoint the monitor calls it; in a Jupyter kernel it displays one figure the first time
    and updates it in place afterwards (a ``FigureWidget`` when plotly can make one, else a display
    handle). Outside a kernel it does nothing, so scripts and tests stay quiet.
    """

    def __init__(self):
        self._fig = None
        self._handle = None

    def __call__(self, monitor) -> None:
        if not in_notebook():
            return
        from IPython.display import display

        heads = monitor.plotted_heads()
        tr = (monitor.tokens_seen, monitor.pr, monitor.sel[monitor.plot_pattern], heads)
        if self._fig is None:
            fig = training_figure(heads, monitor.plot_pattern, getattr(monitor, "baseline", "random_positions"))
            try:  # a FigureWidget updates in place (plotly >= 6 needs the anywidget package for it)
                self._fig = go.FigureWidget(fig)
                display(self._fig)
            except ImportError:
                self._fig = fig
                self._handle = display(fig, display_id=True)
        if hasattr(self._fig, "batch_update"):
            with self._fig.batch_update():
                fill_training_figure(self._fig, *tr)
        else:
            fill_training_figure(self._fig, *tr)
            self._handle.update(self._fig)
