"""Tests for tutorial_lib.viz.spectral: the figures carry the right data, axes and units."""

from collections import Counter
import numpy as np
import pytest
import torch

from conftest import make_tiny_model

from tutorial_lib.methods.head_ablation import VerificationResult
from tutorial_lib.methods.spectral import rank_heads
from tutorial_lib.methods.spectral_monitor import SpectralMonitor
from tutorial_lib.viz.spectral import (
    LiveTrainingFigure,
    ablation_figure,
    fill_training_figure,
    integral_ranking_figure,
    pr_trajectory_figure,
    selectivity_heatmaps,
    training_figure,
)


def test_pr_trajectory_figure():
    pr = torch.arange(24, dtype=torch.float32).reshape(3, 2, 4)
    fig = pr_trajectory_figure(pr, [0, 100, 1000], heads=["a1.h2", "a0.h0"])
    assert [t.name for t in fig.data] == ["a1.h2", "a0.h0"]
    assert list(fig.data[0].x) == [100, 1000] and list(fig.data[0].y) == [14.0, 22.0]
    assert fig.layout.xaxis.type == "log"
    assert fig.layout.xaxis.dtick == 1  # a decade or more of tokens: one labelled tick per power of ten
    assert pr_trajectory_figure(pr, [100, 200, 400]).layout.xaxis.dtick is None  # less: plotly's full-number ticks
    assert "tokens" in fig.layout.xaxis.title.text and "participation ratio" in fig.layout.yaxis.title.text
    full = pr_trajectory_figure(pr, [1, 20, 3000])
    assert len(full.data) == 8 and full.layout.xaxis.dtick == 1
    # coloured by layer: layer-0 heads blue, layer-1 heads red, one shade per head; the legend says so
    colours = [t.line.color for t in full.data]
    assert len(set(colours)) == 8
    assert all(_rgb(c)[2] > _rgb(c)[0] for c in colours[:4]) and all(_rgb(c)[0] > _rgb(c)[2] for c in colours[4:])
    assert "layer 0" in full.layout.legend.title.text and "layer 1" in full.layout.legend.title.text
    with pytest.raises(ValueError, match="not heads"):
        pr_trajectory_figure(pr, [1, 2, 3], heads=["a2.h0"])


def _rgb(colour):
    return [int(v) for v in colour[colour.index("(") + 1 : -1].split(",")]


def test_integral_ranking_figure():
    integ = torch.tensor([[1.0, 5.0], [3.0, 0.5]])
    fig = integral_ranking_figure(integ, top_k=3, highlight=["a1.h0"], highlight_label="induction heads")
    assert list(fig.data[0].x) == [n for n, _ in rank_heads(integ, 3)] == ["a0.h1", "a1.h0", "a0.h0"]
    assert list(fig.data[0].marker.color) == ["steelblue", "crimson", "steelblue"]
    assert fig.layout.yaxis.title.text == "PR integral I(L,H)" and fig.layout.xaxis.title.text
    assert fig.layout.title.text == "Top 3 of 4 heads by PR integral"
    legend = [t.name for t in fig.data if t.type == "scatter" and t.showlegend is not False]  # the colours are named
    assert legend == ["induction heads", "other heads"]
    every = integral_ranking_figure(integ, top_k=8)  # k >= number of heads: no "top k" in the title
    assert every.layout.title.text == "Heads ranked by PR integral" and len(every.data) == 1


def test_selectivity_heatmaps():
    sel = {"induction": torch.tensor([[1.0, 100.0], [0.1, 40.0]]), "BOS": torch.tensor([[10.0, 1.0], [1.0, 1.0]])}
    fig = selectivity_heatmaps(sel, threshold=30)
    heat = [t for t in fig.data if t.type == "heatmap"]
    dots = [t for t in fig.data if t.type == "scatter"]
    assert len(heat) == 2
    assert np.allclose(np.asarray(heat[0].z, dtype=float), np.log10([[1.0, 100.0], [0.1, 40.0]]))
    assert sorted(zip(dots[0].x, dots[0].y)) == [(1, 0), (1, 1)]  # (head, layer) cells >= 30
    assert len(dots[1].x) == 0
    bar = fig.layout.coloraxis.colorbar
    assert "selectivity" in bar.title.text and "100×" in list(bar.ticktext)
    assert fig.layout.xaxis.title.text == "head" and fig.layout.yaxis.title.text == "layer"


def test_selectivity_heatmaps_name_the_baseline_and_show_the_attention():
    from tutorial_lib.methods.selectivity import Selectivity

    att = {"induction": torch.tensor([[0.03, 0.6]]), "BOS": torch.tensor([[0.96, 0.1]]),
           "baseline": torch.tensor([[0.0005, 0.01]])}
    sel = Selectivity.from_attention(att, "random_positions", 48, ("induction", "BOS"), n_baseline=50)
    fig = selectivity_heatmaps(sel)
    assert "random non-target positions" in fig.layout.title.text
    heat = fig.data[0]
    assert np.asarray(heat.customdata, dtype=float)[0, 0].tolist() == pytest.approx([60.0, 3.0, 96.0], rel=1e-4)
    assert "attention on the target" in heat.hovertemplate and "attention on BOS" in heat.hovertemplate
    assert "1/T" in selectivity_heatmaps(sel.with_baseline("uniform")).layout.title.text
    with pytest.raises(ValueError, match="baseline"):
        training_figure(["a0.h0"], baseline="flat")


def test_ablation_figure():
    m = lambda t: {"top1": t, "top5": t, "loss": 2 - t, "logit_b": t}  # noqa: E731
    res = VerificationResult(["a1.h0"], m(0.8), m(0.1), [m(0.7), m(0.6)], [["a1.h1"], ["a1.h2"]], m(0.05),
                             ["a1.h0", "a1.h1", "a1.h2"], 0.01)
    fig = ablation_figure(res)
    assert list(fig.data[0].y) == pytest.approx([80.0, 10.0, 65.0, 5.0])
    bars, err = fig.data  # the error bar sits on the control bar alone
    assert bars.error_y.array is None and list(err.x) == [bars.x[2]] and list(err.y) == pytest.approx([65.0])
    assert list(err.error_y.array) == pytest.approx([100 * np.std([0.7, 0.6], ddof=1)])
    assert "2 distinct draws" in bars.x[2]
    assert "%" in fig.layout.yaxis.title.text
    # five seeds that all drew the same heads are one draw: no error bar, and the label says so
    same = VerificationResult(["a1.h0"], m(0.8), m(0.1), [m(0.7)] * 5, [["a1.h1"]] * 5, m(0.05), ["a1.h0", "a1.h1"], 0.01)
    one = ablation_figure(same)
    assert "1 distinct draw" in one.data[0].x[2] and len(one.data) == 1  # no spread, no error bar
    assert one.data[0].y[2] == pytest.approx(70.0)
    assert "nats" in ablation_figure(res, "loss").layout.yaxis.title.text
    with pytest.raises(ValueError, match="metric"):
        ablation_figure(res, "accuracy")


def test_training_figure_fill():
    fig = training_figure(["a0.h1", "a1.h0"])
    pr = torch.rand(3, 2, 2) + 1
    sel = torch.rand(3, 2, 2) * 50
    fill_training_figure(fig, [0, 10, 100], pr, sel, ["a0.h1", "a1.h0"])
    assert list(fig.data[1].y) == pytest.approx(pr[1:, 1, 0].tolist())
    assert list(fig.data[2].y) == pytest.approx(sel[1:, 0, 1].tolist())
    assert fig.layout.yaxis2.type == "log" and fig.layout.xaxis.type == "log"
    assert fig.layout.xaxis.dtick == 1  # tokens 10 .. 100: one tick per decade
    sel = torch.ones(3, 2, 2)
    sel[2] = 1.5
    fill_training_figure(fig, [0, 10, 100], pr, sel, ["a0.h1", "a1.h0"])
    assert fig.layout.yaxis2.dtick is None  # selectivity within one decade: plotly's full-number ticks
    # one row of panels per layer: a0.h1 in row 1, a1.h0 in row 2 (PR left, selectivity right, log on both rows)
    assert [(t.xaxis, t.yaxis) for t in fig.data] == [("x", "y"), ("x3", "y3"), ("x2", "y2"), ("x4", "y4")]
    assert fig.layout.yaxis4.type == "log" and fig.layout.xaxis3.dtick == 1 and fig.layout.yaxis4.dtick is None


def test_training_figure_colours_and_height():
    heads = [f"a{l}.h{h}" for l in range(2) for h in range(8)]
    fig = training_figure(heads)
    colours = [t.line.color for t in fig.data[:16]]
    assert len(set(colours)) == 16  # 16 heads, 16 colours (the default palette has only 10)
    assert all(_rgb(c)[2] > _rgb(c)[0] for c in colours[:8]) and all(_rgb(c)[0] > _rgb(c)[2] for c in colours[8:])
    assert fig.layout.height >= 180 + 20 * 16 and fig.layout.legend.tracegroupgap == 0  # the legend of 16 heads fits
    assert "blues: layer 0" in fig.layout.legend.title.text
    per_panel = Counter((t.xaxis, t.yaxis) for t in fig.data)
    assert len(per_panel) == 4 and set(per_panel.values()) == {8}  # four panels of one layer's 8 heads, not two of 16


# ------------------------------------------------------------------ the live training figure (SpectralMonitor's on_record)
def test_live_figure_outside_a_notebook_is_quiet(probe, capsys):
    mon = SpectralMonitor(probe, on_record=LiveTrainingFigure(), heads=["a1.h0"])
    mon(0, make_tiny_model("planted"), 10)
    assert capsys.readouterr().out == ""
    assert len(mon.plot().data) == 2


def test_live_plot_updates_one_display(probe, monkeypatch):
    import IPython.display

    import tutorial_lib.viz.spectral as vs

    shown = []

    class Handle:
        def __init__(self):
            self.updates = 0

        def update(self, obj):
            self.updates += 1
            shown.append(("update", obj))

    handle = Handle()

    def fake_display(obj, display_id=None):
        shown.append(("display", obj))
        return handle if display_id else None

    monkeypatch.setattr(vs, "in_notebook", lambda: True)
    monkeypatch.setattr(IPython.display, "display", fake_display)
    mon = SpectralMonitor(probe, on_record=LiveTrainingFigure(), heads=["a1.h0", "a0.h2"])
    for i in range(3):
        mon(i, make_tiny_model("planted", seed=i), 100 * (i + 1))
    assert [k for k, _ in shown].count("display") == 1  # one figure, updated in place
    fig = shown[0][1]
    assert list(fig.data[0].x) == [100, 200, 300]
    assert list(fig.data[1].y) == pytest.approx(mon.pr[:, 0, 2].tolist())
    assert list(fig.data[2].y) == pytest.approx(mon.sel["induction"][:, 1, 0].tolist())
