"""Tests for tutorial_lib.viz.figures: heatmaps, bars, lines and the offline attention view."""
import pytest
import torch

from tutorial_lib.course.setup import make_circuitsvis_offline
from tutorial_lib.viz.figures import attention_view, bar, layer_head_heatmap, lines


def test_heatmap_has_titles_and_symmetric_scale():
    fig = layer_head_heatmap(torch.tensor([[1.0, -3.0], [0.5, 2.0]]), "effects", "Δ metric")
    hm = fig.data[0]
    assert fig.layout.xaxis.title.text == "head" and fig.layout.yaxis.title.text == "layer"
    assert hm.zmin == -3.0 and hm.zmax == 3.0 and hm.zmid == 0
    assert hm.colorbar.title.text == "Δ metric"
    with pytest.raises(ValueError, match="layers, heads"):
        layer_head_heatmap(torch.zeros(3), "x", "y")


def test_bar_and_lines_have_axis_titles():
    f = bar(["a", "b"], [1, 2], "t", "accuracy", errors=[0.1, 0.2])
    assert f.layout.yaxis.title.text == "accuracy" and list(f.data[0].error_y.array) == [0.1, 0.2]
    long_title = "IOI logit difference with one MLP patched from the corrupted run"
    assert bar(["m0", "m1"], [1, 2], long_title, "y").layout.width >= 9 * len(long_title)  # the title is not cut off
    g = lines([1, 10, 100], {"x": [1, 2, 3]}, "t", "tokens", "PR", log_x=True)
    assert g.layout.xaxis.type == "log"


def test_attention_view_is_self_contained(tiny_model):
    make_circuitsvis_offline()
    tokens = torch.randint(0, 50, (1, 5))
    view = attention_view(tiny_model, tokens, layer=1, heads=[0, 2])  # no tokenizer: tokens shown as <id>
    html = view._repr_html_()
    assert "a1.h0" in html and "a1.h2" in html and "unpkg.com" not in html
    assert f"<{int(tokens[0, 3])}>" in html.replace("\\u003c", "<").replace("\\u003e", ">").replace("&lt;", "<").replace("&gt;", ">")
    with pytest.raises(ValueError, match="layers 0..1"):
        attention_view(tiny_model, tokens, layer=5)
