"""Tests for tutorial_lib.course.setup: the first cell (environment, installs, offline renderers)."""
import sys
import types

import plotly.io as pio
import pytest

from tutorial_lib.course import setup as ns


def test_detects_colab_ci_and_plain(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("COLAB_RELEASE_TAG", raising=False)
    monkeypatch.delitem(sys.modules, "ipykernel", raising=False)
    monkeypatch.delenv("VSCODE_PID", raising=False)
    assert ns.detect_environment() == "python"
    monkeypatch.setenv("CI", "true")
    assert ns.detect_environment() == "ci"
    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    assert ns.detect_environment() == "colab"


def test_colab_install_pins_torch_and_numpy_and_enables_widgets(monkeypatch):
    """Colab simulated: the module present, one package missing, pip mocked."""
    calls, widget_calls = [], []
    fake_colab = types.ModuleType("google.colab")
    fake_output = types.ModuleType("google.colab.output")
    fake_output.enable_custom_widget_manager = lambda: widget_calls.append(True)
    fake_colab.output = fake_output
    monkeypatch.setitem(sys.modules, "google", types.ModuleType("google"))
    monkeypatch.setitem(sys.modules, "google.colab", fake_colab)
    monkeypatch.setitem(sys.modules, "google.colab.output", fake_output)
    monkeypatch.setattr(ns, "REQUIRED", {**ns.REQUIRED, "not_a_real_module_xyz": "not-a-real-package==1.0"})

    def fake_pip(cmd):
        calls.append(cmd)
        cons = cmd[cmd.index("-c") + 1]
        calls.append(open(cons).read())
        return 0

    import tutorial_lib.course.setup as mod
    real = mod.install_missing
    monkeypatch.setattr(mod, "install_missing", lambda: real(runner=fake_pip))
    env = ns.setup(verbose=False)
    assert env.where == "colab" and widget_calls == [True]
    cmd, constraints = calls
    assert "not-a-real-package==1.0" in cmd
    assert not any(c.startswith(("torch", "numpy")) for c in cmd[cmd.index("-c") + 2:])
    import torch, numpy
    assert f"torch=={torch.__version__}" in constraints and f"numpy=={numpy.__version__}" in constraints
    assert env.plotly_renderer == "colab"


def test_nothing_installed_when_complete():
    assert ns.install_missing(runner=lambda cmd: pytest.fail("pip should not run")) == []


def test_failed_pip_is_reported(monkeypatch):
    monkeypatch.setattr(ns, "REQUIRED", {"not_a_real_module_xyz": "nope==1"})
    with pytest.raises(RuntimeError, match="nope==1"):
        ns.install_missing(runner=lambda cmd: 1)


def test_circuitsvis_never_probes_the_network(monkeypatch):
    import circuitsvis.utils.render as render
    import urllib.request

    ns.make_circuitsvis_offline()
    monkeypatch.setattr(urllib.request, "urlopen", lambda *a, **k: pytest.fail("network probe"))
    monkeypatch.setattr(render.request, "urlopen", lambda *a, **k: pytest.fail("network probe"))
    import circuitsvis as cv
    import torch
    html = cv.attention.attention_patterns(tokens=["a", "b"], attention=torch.ones(1, 2, 2) / 2)._repr_html_()
    assert "unpkg.com" not in html and len(html) > 100_000  # the bundle is inlined


def test_renderer_is_offline_capable():
    for where in ["jupyter", "ci", "vscode", "python"]:
        r = ns.choose_plotly_renderer(where)
        assert "connected" not in r and "cdn" not in r
        for part in r.split("+"):
            assert part in pio.renderers


def test_the_first_cell_imports_no_heavy_library():
    """``from tutorial_lib import setup`` must work before setup() has installed anything: importing the
    package pulls in neither TransformerLens, transformers, tokenizers nor plotly (they load when used)."""
    import subprocess

    heavy = ("transformer_lens", "transformers", "tokenizers", "plotly", "sklearn", "circuitsvis")
    code = f"import sys, tutorial_lib; print([m for m in {heavy!r} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "[]"


def test_install_pins_every_installed_distribution():
    """Not only torch and numpy: every distribution already installed is pinned, so pip can only add packages."""
    from importlib.metadata import version

    from tutorial_lib.course.setup import installed_pins

    pins = installed_pins()
    assert pins[0].startswith("torch==") and any(p.startswith("numpy==") for p in pins[:2])
    assert f"pytest=={version('pytest')}" in pins and f"plotly=={version('plotly')}" in pins
    assert len({p.split("==")[0] for p in pins}) == len(pins) > 50
