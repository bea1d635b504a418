import pytest
import torch

from tutorial_lib.core.circuits import Circuit, run_with_ablation
from tutorial_lib.viz.widgets import AblationPanel


def make_panel(model, calls):
    tokens = torch.randint(0, 50, (3, 6), generator=torch.Generator().manual_seed(0))

    def evaluate(ablated):
        calls.append(set(ablated))
        logits = run_with_ablation(model, tokens, ablated) if ablated else model(tokens)
        y = logits[:, -1, 0]
        return {"metrics": {"logit0": y.mean().item()}, "x": [0, 1, 2], "y": y.tolist()}

    return AblationPanel(model, evaluate, presets={"both mlps": Circuit(["m0", "m1"])})


def test_panel_buttons_cover_every_component(tiny_model):
    panel = make_panel(tiny_model, [])
    assert set(panel.buttons) == {f"a{l}.h{h}" for l in range(2) for h in range(4)} | {"m0", "m1"}


def test_clicking_changes_readout_and_plot(tiny_model):
    calls = []
    panel = make_panel(tiny_model, calls)
    before_text, before_y = panel.readout.value, list(panel.figure.data[1].y)
    panel.buttons["m1"].value = True  # what a click does
    assert calls[-1] == {"m1"}
    assert panel.readout.value != before_text and "m1" in panel.readout.value
    assert list(panel.figure.data[1].y) != before_y
    assert list(panel.figure.data[0].y) == before_y  # the unablated curve stays
    panel.set_ablated([])
    assert list(panel.figure.data[1].y) == pytest.approx(before_y)
    assert not any(b.value for b in panel.buttons.values())


def test_presets_and_toggle(tiny_model):
    calls = []
    panel = make_panel(tiny_model, calls)
    panel.set_ablated(panel.presets["both mlps"])
    assert panel.ablated == {"m0", "m1"} and panel.buttons["m0"].value and panel.buttons["m1"].value
    panel.toggle("m0")
    assert panel.ablated == {"m1"}
    with pytest.raises(ValueError):
        panel.toggle("a9.h9")
