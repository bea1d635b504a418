"""Tests for tutorial_lib.methods.spectral_monitor: the training callback and the run cache."""
import json


import pytest
import torch

from tutorial_lib.core.hooks import count_hooks
from tutorial_lib.methods.selectivity import PlantedPairProbe, selectivity
from tutorial_lib.methods.spectral import head_participation_ratios
from tutorial_lib.methods.spectral_monitor import SpectralMonitor, cache_dir, load_run, run_key, save_run

torch.set_num_threads(1)
from conftest import make_tiny_model, planted_pair_tokens  # noqa: E402



def run_monitor(probe, **kw):
    mon = SpectralMonitor(probe, **kw)
    models = [make_tiny_model("planted", seed=s) for s in (0, 1, 2)]
    for i, m in enumerate(models):
        m.train()
        mon(step=10 * i, model=m, tokens_seen=1000 * i)
        assert m.training  # mode restored
        assert count_hooks(m) == 0
    return mon, models


def test_monitor_records_what_the_direct_functions_compute(probe):
    mon, models = run_monitor(probe, definition="order2", n_baseline=5, seed=4)
    assert mon.steps == [0, 10, 20] and mon.tokens_seen == [0, 1000, 2000]
    assert mon.pr.shape == (3, 2, 4) and set(mon.sel) == {"induction", "previous-token", "duplicate-token", "BOS", "self", "local"}
    for i, m in enumerate(models):
        m.eval()
        assert torch.allclose(mon.pr[i], head_participation_ratios(m, probe, definition="order2"), rtol=1e-5)
        direct = selectivity(m, probe, n_baseline=5, seed=4)
        for p, v in direct.items():
            assert torch.allclose(mon.sel[p][i], v, rtol=1e-5), p
    fig = mon.plot()
    assert len(fig.data) == 16 and list(fig.data[0].x) == [1000, 2000]  # tokens=0 is off the log axis
    assert list(fig.data[0].y) == pytest.approx(mon.pr[1:, 0, 0].tolist())


def test_monitor_bad_arguments(probe):
    with pytest.raises(ValueError, match="PlantedPairProbe"):
        SpectralMonitor(probe.tokens)
    with pytest.raises(ValueError, match="definition"):
        SpectralMonitor(probe, definition="rank")
    with pytest.raises(ValueError, match="plot_pattern"):
        SpectralMonitor(probe, patterns=("BOS",))
    with pytest.raises(ValueError, match="nothing recorded"):
        SpectralMonitor(probe).save("run-x")


def test_run_key_is_stable_and_sensitive():
    k = run_key({"d_model": 64, "n_layers": 2}, 0, [0, 10])
    assert k == run_key({"n_layers": 2, "d_model": 64}, 0, [0, 10])
    assert len({k, run_key({"d_model": 64, "n_layers": 3}, 0, [0, 10]), run_key({"d_model": 64, "n_layers": 2}, 1, [0, 10]),
                run_key({"d_model": 64, "n_layers": 2}, 0, [0, 20])}) == 4


def test_run_key_holds_the_source_of_the_code(tmp_path):
    from tutorial_lib.methods.spectral_monitor import source_hash

    src = tmp_path / "trainer.py"
    src.write_text("STEPS = 1\n")
    before = run_key({"d_model": 64}, 0, [0, 10], code=[src])
    assert before == run_key({"d_model": 64}, 0, [0, 10], code=[src]) != run_key({"d_model": 64}, 0, [0, 10])
    h = source_hash([src])
    src.write_text("STEPS = 2\n")
    assert source_hash([src]) != h and run_key({"d_model": 64}, 0, [0, 10], code=[src]) != before
    with pytest.raises(ValueError, match="no source file"):
        source_hash([tmp_path / "missing.py"])


def test_monitor_uniform_baseline_and_its_cache(probe, tmp_path):
    mon, models = run_monitor(probe, baseline="uniform")
    for i, m in enumerate(models):
        m.eval()
        direct = selectivity(m, probe, baseline="uniform")
        assert all(torch.allclose(mon.sel[p][i], v, rtol=1e-5) for p, v in direct.items())
    key = run_key({"uniform": True}, 0, [0, 10, 20])
    mon.save(key, root=tmp_path)
    back = SpectralMonitor.load(key, probe, root=tmp_path)
    # the figure names the baseline its selectivity divides by (in its title: one row of panels per layer)
    assert back.baseline.value == "uniform" and "1/T" in back.plot().layout.title.text
    assert "random positions" in run_monitor(probe)[0].plot().layout.title.text


def test_cache_round_trip(probe, tmp_path, monkeypatch):
    monkeypatch.setenv("TUTORIAL_CACHE", str(tmp_path))
    assert cache_dir() == tmp_path
    mon, models = run_monitor(probe)
    ckpts = [(10 * i, 1000 * i, m.state_dict()) for i, m in enumerate(models)]
    key = run_key({"test": True}, 0, [0, 10, 20])
    path = mon.save(key, checkpoints=ckpts, meta={"note": "unit test"})
    assert path.parent.parent == tmp_path and (path / "meta.json").exists()
    assert json.loads((path / "meta.json").read_text())["meta"]["note"] == "unit test"
    back = SpectralMonitor.load(key, probe)
    assert back.steps == mon.steps and back.tokens_seen == mon.tokens_seen
    assert torch.equal(back.pr, mon.pr) and all(torch.equal(back.sel[p], mon.sel[p]) for p in mon.sel)
    run = load_run(key)
    assert [(s, t) for s, t, _ in run["checkpoints"]] == [(0, 0), (10, 1000), (20, 2000)]
    for (_, _, sd), m in zip(run["checkpoints"], models):
        assert all(torch.equal(sd[k], v) for k, v in m.state_dict().items())
    assert SpectralMonitor.load("run-missing", probe) is None and load_run("run-missing") is None
    other = PlantedPairProbe(*planted_pair_tokens(5))
    with pytest.raises(ValueError, match="probe of shape"):
        SpectralMonitor.load(key, other)
    with pytest.raises(ValueError, match="run key"):
        load_run("../escape")


def test_incomplete_run_is_ignored(tmp_path):
    path = save_run("run-partial", {"x": torch.ones(2)}, root=tmp_path)
    (path / "meta.json").unlink()
    assert load_run("run-partial", root=tmp_path) is None


@pytest.mark.parametrize("family", ["llama", "gemma2", "qwen3", "olmo2", "pythia", "olmoe"])
def test_monitor_on_every_family_matches_the_slow_reference(family):
    """The callback's PR and selectivity on a float64 tiny model of each family equal the ones rebuilt by hand
    from hook_rot_q / hook_rot_k / hook_v (family_reference.query_rows: group h // rep, soft cap, local window)."""
    import math

    from family_reference import pr as ref_pr, query_rows
    from tutorial_lib.methods.selectivity import baseline_positions
    from tutorial_lib.zoo.families import tiny_family_model

    model = tiny_family_model(family, dtype=torch.float64, scale=3.0, seed=1)
    probe = PlantedPairProbe(*planted_pair_tokens(12, 20, 61, seed=1))
    mon = SpectralMonitor(probe, n_baseline=50, seed=0)
    mon(step=1, model=model, tokens_seen=100)
    z, p = query_rows(model, probe.tokens, probe.query_pos)
    rows = torch.arange(probe.n)
    base = baseline_positions(probe, 50, 0)
    for l in range(2):
        for h in range(4):
            assert float(mon.pr[0, l, h]) == pytest.approx(ref_pr(z[:, l, h]), rel=1e-4, abs=1e-5)
            b = max(float(torch.stack([p[rows, l, h, base[:, j]] for j in range(base.shape[1])]).mean()), 1e-8)
            ind = float(p[rows, l, h, probe.a_pos + 1].mean())
            assert math.isclose(float(mon.sel["induction"][0, l, h]), ind / b, rel_tol=1e-4, abs_tol=1e-5), (l, h)
    assert count_hooks(model) == 0
