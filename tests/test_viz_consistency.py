"""Tests for tutorial_lib.viz.consistency: every figure shows the numbers it is given, with titled axes."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import pytest
import torch

from conftest import make_tiny_model
from tutorial_lib.methods import consistency as C
from tutorial_lib.studies import consistency as SC
from tutorial_lib.viz import consistency as V
from tutorial_lib.methods.attribution import EAPScores
from tutorial_lib.core.circuits import Circuit
from tutorial_lib.tasks.base import TaskData

torch.set_num_threads(1)
NAMES = ["a0.h0", "a0.h1", "m0", "a1.h0", "a1.h1", "m1"]
VOCAB = 30


def fake_scores(seed, n=12):
    g = torch.Generator().manual_seed(seed)
    nodes = torch.rand(n, len(NAMES), generator=g) + torch.tensor([0, 0, 1.0, 0, 0, 0.5])
    return EAPScores(nodes=nodes, components=NAMES, edges=None, graph=None, metric=torch.zeros(n), signed_nodes=nodes)


def titled(fig):
    return bool(fig.layout.title.text)


@pytest.fixture(scope="module")
def model():
    return make_tiny_model(n_layers=2, n_heads=2, d_model=16, d_mlp=32, d_vocab=VOCAB, n_ctx=10)


def toy_task(model, name, seed, n=10):
    g = torch.Generator().manual_seed(seed)
    clean = torch.randint(0, VOCAB, (n, 5), generator=g)
    corrupt = clean.clone()
    corrupt[:, 1] = (clean[:, 1] + 1) % VOCAB
    with torch.no_grad():
        order = model(clean)[:, -1].argsort(-1, descending=True)
    return TaskData(name, [""] * n, [""] * n, clean, corrupt, end_pos=torch.full((n,), 4),
                    answers=order[:, 0], wrong=order[:, 1:4])


def test_membership_heatmap_shows_frequencies():
    scores = {"t1": fake_scores(0), "t2": fake_scores(1)}
    fig = V.plot_membership(scores, 0.34)
    z = np.array(fig.data[0].z)
    for i, s in enumerate(scores.values()):
        member = s.top_k(0.34)
        ref = [sum(bool(member[e, c]) for e in range(len(s))) / len(s) for c in range(len(NAMES))]
        assert np.allclose(z[i], ref)
    assert list(fig.data[0].x) == NAMES and list(fig.data[0].y) == ["t1", "t2"]
    assert titled(fig) and fig.layout.xaxis.title.text and fig.layout.yaxis.title.text


def test_reuse_sweeps_one_panel_per_task_and_baseline_dashed():
    scores = {"t1": fake_scores(0), "t2": fake_scores(1), "t3": fake_scores(2)}
    sweeps = {k: C.reuse_sweep(s, ks=(0.2, 0.5), ps=(50, 100)) for k, s in scores.items()}
    fig = V.plot_reuse_sweeps(sweeps)
    assert len(fig.data) == 3 * 2 * 2 + 1  # tasks x P x (observed, random) + the legend entry for "dashed"
    assert [a.text for a in fig.layout.annotations] == ["t1", "t2", "t3"]
    obs = fig.data[0]
    assert np.allclose(obs.y, sweeps["t1"].reuse[0].numpy()) and list(obs.x) == [20.0, 50.0]
    assert fig.data[1].line.dash == "dash" and np.allclose(fig.data[1].y, sweeps["t1"].random_reuse[0].numpy())
    assert sum(bool(t.showlegend) for t in fig.data if t.x[0] is not None) == 2  # one legend entry per P
    assert fig.data[-1].line.dash == "dash" and "random" in fig.data[-1].name
    assert titled(fig) and fig.layout.xaxis.title.text and fig.layout.yaxis.title.text


def test_necessity_and_mode_figures_match_results(model):
    tasks = {"t1": toy_task(model, "t1", 0), "t2": toy_task(model, "t2", 1)}
    shared = {"t1": Circuit(["m0"]), "t2": Circuit(["a1.h0", "m1"])}
    results = SC.necessity_all(model, tasks, shared, seeds=(0, 1), n_permutations=200)
    fig = V.plot_necessity_tasks(results)
    clean, circ, rand = (np.array(t.y) for t in fig.data)
    for i, r in enumerate(results.values()):
        assert clean[i] == pytest.approx(float(r.clean.mean()))
        assert circ[i] == pytest.approx(float(r.clean.mean() - r.circuit_drop.mean()))
        assert rand[i] == pytest.approx(float(r.clean.mean()) - r.random_drop)
    assert titled(fig) and fig.layout.xaxis.title.text and fig.layout.yaxis.title.text
    fig = V.plot_excess_by_mode({"zero": results, "mean": results})
    assert len(fig.data) == 2 and np.allclose(fig.data[0].y, [r.excess for r in results.values()])
    assert titled(fig) and fig.layout.yaxis.title.text
    table = V.necessity_by_mode_table({"zero": results, "mean": results})
    assert list(table.index) == [(m, t) for m in ("zero", "mean") for t in results]
    assert table.loc[("mean", "t2"), "p"] == results["t2"].p_value
    assert table.loc[("zero", "t1"), "S_P drop"] == pytest.approx(float(results["t1"].circuit_drop.mean()))


def test_composition_tasks_figure():
    comps = {"t1": C.composition(fake_scores(0), ks=(0.2, 0.5)), "t2": C.composition(fake_scores(1), ks=(0.2, 0.5))}
    fig = V.plot_composition_tasks(comps)
    lines = [t for t in fig.data if isinstance(t, go.Scatter)]
    assert [t.name for t in lines] == ["t1", "t2"] and np.allclose(lines[0].y, comps["t1"].mlp_share.numpy())
    heat = [t for t in fig.data if isinstance(t, go.Heatmap)][0]
    mean = (comps["t1"].layer_share + comps["t2"].layer_share) / 2
    assert np.allclose(np.array(heat.z), mean.T.numpy())
    assert titled(fig) and fig.layout.xaxis.title.text and fig.layout.yaxis.title.text


def test_eap_vs_exact_reports_pearson():
    g = torch.Generator().manual_seed(0)
    a = torch.randn(20, 6, generator=g)
    b = a + 0.5 * torch.randn(20, 6, generator=g)
    fig = V.plot_eap_vs_exact({"m1": (a, b), "m2": (a, -a)})
    r = np.corrcoef(a.numpy().ravel(), b.numpy().ravel())[0, 1]
    assert f"{r:.2f}" in fig.layout.annotations[0].text and "-1.00" in fig.layout.annotations[1].text
    assert fig.layout.xaxis.title.text and fig.layout.yaxis.title.text


def test_consistency_panel_bars_are_accuracies(model):
    from tutorial_lib.core.circuits import run_with_ablation

    tasks = {"t1": toy_task(model, "t1", 0), "t2": toy_task(model, "t2", 1)}
    shared = {"t1": Circuit(["m0"], name="S t1"), "t2": Circuit(["a1.h0", "m1"], name="S t2")}
    panel = V.consistency_panel(model, tasks, shared)
    assert set(panel.presets) == {"S t1", "S t2"} and panel.plot_kind == "bar"
    assert panel.baseline["y"] == pytest.approx([1.0, 1.0])  # the answers are the model's own top tokens
    res = panel.set_ablated(shared["t2"])
    for name, task in tasks.items():
        ref = task.accuracy(run_with_ablation(model, task.clean, ["a1.h0", "m1"])).mean().item()
        assert res["metrics"][name] == pytest.approx(ref)
    assert list(panel.figure.data[1].y) == pytest.approx(res["y"])
    assert panel.figure.layout.xaxis.title.text == "task"


def test_summary_table_collects_the_headline_numbers(model):
    tasks = {"t1": toy_task(model, "t1", 0), "t2": toy_task(model, "t2", 1), "t3": toy_task(model, "t3", 2)}
    shared = {"t1": Circuit(["m0"]), "t2": Circuit(["a1.h0", "m1"]), "t3": Circuit(["m0", "a0.h1"])}
    sweeps = {k: C.reuse_sweep(fake_scores(i), ks=(0.2, 0.5), ps=(50, 100)) for i, k in enumerate(tasks)}
    nec = SC.necessity_all(model, tasks, shared, seeds=(0,), n_permutations=100)
    cross = C.cross_task_matrix(model, tasks, shared)
    jac = C.jaccard_matrix(model, shared, n_random=50)
    table = V.summary_table(sweeps, nec, cross, jac, 0.5, 100)
    assert list(table.index) == ["t1", "t2", "t3"]
    assert table.loc["t2", "reuse@P"] == pytest.approx(float(sweeps["t2"].reuse[1, 1]))
    assert table.loc["t3", "necessity p"] == pytest.approx(nec["t3"].p_value)
    assert table.loc["t1", "drop, others' S_P (mean)"] == pytest.approx(float(cross.drop[[1, 2], 0].mean()))
    assert table.loc["t3", "Jaccard with others (mean)"] == pytest.approx((1 / 2 + 0) / 2)  # {m0,a0.h1} vs {m0}, {a1.h0,m1}
