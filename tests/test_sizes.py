import pytest

from conftest import make_tiny_model
from tutorial_lib.course import sizes


class FakeParams:
    """A stand-in model: one CPU parameter that reports ``n`` elements."""

    def __init__(self, n):
        import torch

        self.param = type("P", (), {"device": torch.device("cpu"), "numel": lambda _self: n})()

    def parameters(self):
        return [self.param]


@pytest.mark.parametrize("mode,n_params,want", [("auto", 1_000, 200), ("auto", 124_000_000, 40), ("full", 124_000_000, 200),
                                                ("quick", 1_000, 8), ("cpu", 1_000, 40)])
def test_pick_by_mode_and_model(monkeypatch, capsys, mode, n_params, want):
    monkeypatch.setenv("TUTORIAL_SIZE", mode)
    assert sizes.pick("prompts", full=200, cpu=40, quick=8, model=FakeParams(n_params)) == want
    out = capsys.readouterr().out
    assert out.startswith(f"using {want} prompts (")


def test_a_tiny_model_gets_full_sizes(monkeypatch):
    monkeypatch.delenv("TUTORIAL_SIZE", raising=False)
    assert sizes.resolve(make_tiny_model()) == "full"
    assert sizes.resolve(None) == "full"


def test_unknown_size_mode_is_named(monkeypatch):
    monkeypatch.setenv("TUTORIAL_SIZE", "huge")
    with pytest.raises(ValueError, match=r"TUTORIAL_SIZE='huge' is not one of \('auto', 'full', 'cpu', 'quick'\)"):
        sizes.pick("x", full=1, cpu=1, quick=1)
