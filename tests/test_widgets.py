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


# ------------------------------------------------------------------ both widget generations
# Colab preinstalls ipywidgets 7.7.1 with plotly 5.24.1 (FigureWidget is plotly's ipywidgets widget there), and the
# install cell never replaces them; this venv has ipywidgets 8 with plotly >= 6 (FigureWidget is an anywidget).
# The same script drives the panel's Python side under each: the widget module is imported without the rest of
# the package (no torch in the old generation's venv), with a stub model.
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OLD_GENERATION = ["ipywidgets==7.7.1", "plotly==5.24.1", "ipykernel==6.17.1"]  # Colab's published versions

DRIVE_PANEL = r'''
import json, os, sys, types
root = sys.argv[1]
for name, sub in [("tutorial_lib", ""), ("tutorial_lib.core", "core"), ("tutorial_lib.viz", "viz")]:
    mod = types.ModuleType(name); mod.__path__ = [os.path.join(root, "tutorial_lib", sub)]; sys.modules[name] = mod
import ipywidgets as W, plotly
from tutorial_lib.viz.widgets import AblationPanel
assert "torch" not in sys.modules

model = types.SimpleNamespace(cfg=types.SimpleNamespace(n_layers=2, n_heads=3))
calls = []
def evaluate(ablated):
    calls.append(sorted(ablated))
    return {"metrics": {"prob diff": 0.5 - 0.1 * len(ablated)}, "x": [0, 1, 2, 3],
            "y": [1.0 - 0.1 * len(ablated) * k for k in range(4)]}

def widgets(w):  # every widget in the panel's tree
    yield w
    for c in getattr(w, "children", ()):
        yield from widgets(c)

for kind in ("line", "bar"):
    panel = AblationPanel(model, evaluate, presets={"mlps": ["m0", "m1"]}, plot=kind)
    assert set(panel.buttons) == {f"a{l}.h{h}" for l in range(2) for h in range(3)} | {"m0", "m1"}
    base_text, base_y = panel.readout.value, list(panel.figure.data[1].y)
    panel.buttons["a1.h2"].value = True  # what a click does
    assert calls[-1] == ["a1.h2"] and panel.buttons["a1.h2"].button_style == "danger"
    assert panel.readout.value != base_text and "a1.h2" in panel.readout.value and "80% of unablated" in panel.readout.value
    assert list(panel.figure.data[1].y) != base_y and list(panel.figure.data[0].y) == base_y
    panel.preset_buttons["mlps"].click()
    assert panel.ablated == {"m0", "m1"} and panel.buttons["m0"].value and not panel.buttons["a1.h2"].value
    panel.reset_button.click()
    assert panel.ablated == set() and list(panel.figure.data[1].y) == base_y and "ablated: nothing" in panel.readout.value
    tree = list(widgets(panel.widget))
    assert panel.figure in tree and not any(isinstance(w, W.Output) for w in tree), "a widget inside an Output"
    assert isinstance(panel.figure, W.DOMWidget)
print("PANEL-OK " + json.dumps({"ipywidgets": W.__version__, "plotly": plotly.__version__,
                                "figure": [c.__module__ + "." + c.__name__ for c in type(panel.figure).__mro__]}))
'''


def drive_panel(python: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    res = subprocess.run([python, "-c", DRIVE_PANEL, str(ROOT)], capture_output=True, text=True, timeout=120, env=env)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return json.loads(res.stdout.split("PANEL-OK ", 1)[1])


def old_generation_python() -> str:
    """A venv with Colab's widget pair only (no torch), cached in .course-cache/ by a hash of the pins.
    Cold: about 25 s here (pip resolves and installs ~100 small packages, ipykernel and notebook among them)."""
    tag = hashlib.sha256(" ".join([sys.version] + OLD_GENERATION).encode()).hexdigest()[:12]
    venv = ROOT / ".course-cache" / f"widgets-old-{tag}"
    if not (venv / ".ready").exists():
        tmp = venv.with_name(venv.name + f".tmp{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", str(tmp)], check=True, timeout=120)
        res = subprocess.run([str(tmp / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                              *OLD_GENERATION], capture_output=True, text=True, timeout=600)
        if res.returncode != 0:
            pytest.skip(f"could not build the ipywidgets 7 venv (no package index?): {res.stderr[-500:]}")
        shutil.rmtree(venv, ignore_errors=True)
        tmp.rename(venv)  # venv scripts hold absolute paths, but `python -c` needs none of them
        (venv / ".ready").write_text(" ".join(OLD_GENERATION) + "\n")
    return str(venv / "bin" / "python")


def test_panel_under_ipywidgets_8_and_plotly_6_or_later():
    got = drive_panel(sys.executable)
    assert got["ipywidgets"].startswith("8.") and int(got["plotly"].split(".")[0]) >= 6, got
    assert any("anywidget" in c for c in got["figure"]), got  # plotly 6+'s FigureWidget


def test_panel_under_colabs_ipywidgets_7_7_1_and_plotly_5_24_1():
    t0 = time.time()
    got = drive_panel(old_generation_python())
    assert (got["ipywidgets"], got["plotly"]) == ("7.7.1", "5.24.1"), got
    assert not any("anywidget" in c for c in got["figure"]), got  # plotly 5's own ipywidgets FigureWidget
    assert time.time() - t0 < 600
