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
    with pytest.raises(ValueError, match=r"TUTORIAL_SIZE='huge' is not one of \('auto', 'paper', 't4', 'full', 'cpu', 'quick'\)"):
        sizes.pick("x", full=1, cpu=1, quick=1)


class FakeDevice(FakeParams):
    """A stand-in model whose one parameter sits on ``device`` ("cuda" / "mps")."""

    def __init__(self, n, device):
        super().__init__(n)
        self.param.device = type("D", (), {"type": device})()


@pytest.mark.parametrize("gib,device,want,label", [(139.8, "cuda", 1000, "the paper's size: a large GPU, Fake GPU with 140 GiB"),
                                                   (15.0, "cuda", 256, "a smaller GPU's size: a smaller GPU, Fake GPU with 15 GiB"),
                                                   (None, "mps", 256, "a smaller GPU's size: an Apple GPU (MPS)")])
def test_pick_by_device(monkeypatch, capsys, gib, device, want, label):
    import torch

    monkeypatch.delenv("TUTORIAL_SIZE", raising=False)
    monkeypatch.setattr(sizes, "gpu_memory_gib", lambda d: gib)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda d=None: "Fake GPU")
    model = FakeDevice(2_000_000_000, device)
    assert sizes.pick("examples", paper=1000, t4=256, full=128, cpu=48, quick=16, model=model) == want
    out = capsys.readouterr().out
    assert out.startswith(f"using {want} examples ({label}")
    assert ("the paper's 1000 on a large GPU" in out) == (want != 1000)
    assert sizes.resolve(model) == "full"  # the notebooks' "== 'full'" branches stay on
    # without paper= / t4= a GPU gets the course's full size
    assert sizes.pick("prompts", full=200, cpu=40, quick=8, model=model, verbose=False) == 200


def test_cpu_and_modes_print_the_papers_size_when_given(monkeypatch, capsys):
    monkeypatch.setenv("TUTORIAL_SIZE", "auto")
    assert sizes.pick("examples", paper=1000, t4=256, full=128, cpu=48, quick=16, model=FakeParams(600_000_000)) == 48
    assert "reduced for the CPU: a large model on a CPU; the paper's 1000 on a large GPU" in capsys.readouterr().out
    for mode, want in (("paper", 1000), ("t4", 256), ("quick", 16)):
        monkeypatch.setenv("TUTORIAL_SIZE", mode)
        assert sizes.pick("examples", paper=1000, t4=256, full=128, cpu=48, quick=16) == want
