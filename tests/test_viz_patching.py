"""Tests for tutorial_lib.viz.patching: the figures of activation patching, path patching and the lens,
drawn from hand-made results (the methods' own tests check their ``.plot()`` on real sweeps)."""
import math

import numpy as np
import torch

from tutorial_lib.methods.lens import LensResult, NeuronResult, PCAResult
from tutorial_lib.methods.patching import PatchingResult
from tutorial_lib.viz.patching import (
    BAR_COLOUR,
    heatmap,
    plot_lens,
    plot_neuron_recovery,
    plot_patching,
    plot_pca,
)


def test_heatmap_is_diverging_and_titled():
    fig = heatmap(torch.tensor([[1.0, -2.0], [0.5, 0.0]]), ["a0", "a1"], ["h0", "h1"], "t", "head", "layer", "Δ m")
    hm = fig.data[0]
    assert hm.colorscale[0][1] != hm.colorscale[-1][1] and hm.zmid == 0 and hm.colorbar.title.text == "Δ m"
    assert list(hm.y) == ["a0", "a1"] and fig.layout.yaxis.autorange == "reversed"
    up = heatmap([[1.0]], ["YY"], ["t"], "t", "x", "y", "u", reverse_y=False)
    assert up.layout.yaxis.autorange != "reversed"


def test_patching_figures_by_shape():
    common = dict(metric_name="logit diff", clean=1.0, corrupt=0.0, normalized=False, direction="noising")
    heads = PatchingResult(torch.randn(3, 4), ["a0", "a1", "a2"], ["h0", "h1", "h2", "h3"], "heads", **common)
    fig = plot_patching(heads)
    assert fig.data[0].type == "heatmap" and fig.layout.xaxis.title.text == "head"
    assert "Activation patching (noising) of heads: logit diff" == fig.layout.title.text
    by_pos = PatchingResult(torch.randn(2, 3, 5), ["a0", "a1"], [str(p) for p in range(5)], "heads", **common)
    assert list(plot_patching(by_pos).data[0].y)[:4] == ["a0.h0", "a0.h1", "a0.h2", "a1.h0"]
    many = plot_patching(PatchingResult(torch.randn(4, 8, 5), [f"a{l}" for l in range(4)], [str(p) for p in range(5)],
                                        "heads", **common))
    assert list(many.layout.yaxis.ticktext) == list(many.data[0].y) and len(many.data[0].y) == 32  # every head labelled
    assert many.layout.height >= 120 + 14 * 32
    mlps = PatchingResult(torch.tensor([0.5, -0.25]), ["m0", "m1"], None, "mlps", **common)
    bar = plot_patching(mlps, "my title")
    assert bar.data[0].type == "bar" and bar.data[0].marker.color == BAR_COLOUR
    assert bar.layout.title.text == "my title" and bar.layout.yaxis.title.text == "Δ logit diff"


def test_lens_pca_and_neuron_figures():
    lens = LensResult(torch.zeros(2, 3), [10, 11], ["00", "01", "02"], "m1")
    assert plot_lens(lens).layout.title.text == "Logit lens of m1 at END"
    pca = PCAResult(np.zeros((4, 2)), np.array([0.5, 0.25]), np.arange(4), "PCA")
    assert plot_pca(pca).layout.xaxis.title.text == "PC1 (50.0% of variance)"
    neurons = NeuronResult([0, 1, 10], [0.0, 0.4, 0.9], torch.arange(3), torch.zeros(3), 2, 1.0, "effect")
    fig = plot_neuron_recovery(neurons)
    assert fig.layout.xaxis.type == "log" and list(fig.layout.xaxis.tickvals) == [1, 10]
    assert math.isclose(fig.data[0].y[-1], 0.9)
