"""studies.consistency.flip_table: each cell's pass/fail agrees with computing that cell directly."""
import pytest
import torch
from conftest import make_tiny_model
from test_consistency import VOCAB, fake_scores, make_task

from tutorial_lib.core.components import all_components
from tutorial_lib.methods.consistency import reuse_sweep, shared_sets
from tutorial_lib.studies.consistency import necessity_all
from tutorial_lib.core.circuits import Circuit
from tutorial_lib.studies.consistency import flip_table, specificity_degenerate, teaching_setting


@pytest.fixture(scope="module")
def setup():
    model = make_tiny_model(d_vocab=VOCAB, n_ctx=12)
    tasks = {n: make_task(model, n, seed=i) for i, n in enumerate(("one", "two"))}
    comps = all_components(model)
    g = torch.Generator().manual_seed(0)
    focused = {}  # m0 tops every example's scores: S_P = {m0} at every P, reuse 1 at K = 10% (one component)
    noisy = {}  # random scores: nothing is shared at P = 100
    for n in tasks:
        nodes = torch.rand(12, len(comps), generator=g)
        nodes[:, comps.index("m0")] += 10
        focused[n] = fake_scores(nodes, comps)
        noisy[n] = fake_scores(torch.rand(12, len(comps), generator=g), comps)
    return model, tasks, {"focused": focused, "noisy": noisy}


def test_flip_table_cells_agree_with_direct_computation(setup):
    model, tasks, by_metric = setup
    table = flip_table(model, tasks, by_metric, performed=list(tasks), k=0.1, ps=(100, 50), modes=("zero", "mean"),
                       seeds=(0,))
    assert len(table) == 2 * 2 and list(table.columns)[-2:] == ["necessary (zero)", "necessary (mean)"]
    cons = "consistent (margin ≥ 0.2)"
    for (metric, k, p), row in table.iterrows():
        assert k == "10%"
        margins = [float(sw.reuse[0, 0] - sw.random_reuse[0, 0]) for sw in
                   (reuse_sweep(by_metric[metric][n], ks=[0.1], ps=[p], seed=0) for n in tasks)]
        assert row["min reuse margin"] == pytest.approx(min(margins), abs=1e-3)
        assert row[cons] == ("pass" if min(margins) >= 0.2 else "fail")
    assert table.loc[("focused", "10%", 100), cons] == "pass"
    # random scores share nothing at P = 100: nothing to ablate, the necessity claim fails
    assert table.loc[("noisy", "10%", 100), "necessary (zero)"] == "fail: empty S_P"
    assert table.loc[("noisy", "10%", 100), cons] == "fail"
    # a necessity cell recomputed directly
    shared = shared_sets(by_metric["focused"], 0.1, 100)
    assert [set(c.nodes) for c in shared.values()] == [{"m0"}, {"m0"}]
    res = necessity_all(model, tasks, shared, mode="mean", seeds=(0,))
    ok = all(r.excess > 0 and r.p_value < 0.05 for r in res.values())
    worst = max(r.p_value for r in res.values())
    assert table.loc[("focused", "10%", 100), "necessary (mean)"] == f"{'pass' if ok else 'fail'}, worst p = {worst:.2g} (1 seed)"


def test_flip_table_refuses_bad_input(setup):
    model, tasks, by_metric = setup
    with pytest.raises(ValueError, match="performed is empty"):
        flip_table(model, tasks, by_metric, performed=[], k=0.1, ps=(100,))
    with pytest.raises(ValueError, match="lack the performed tasks"):
        flip_table(model, tasks, by_metric, performed=["one", "three"], k=0.1, ps=(100,))


def test_flip_table_reuses_known_results_with_their_seeds(setup):
    """The main setting's cell says what the notebook's section 3 says: it reuses those results (and their seeds)."""
    model, tasks, by_metric = setup
    shared = shared_sets(by_metric["focused"], 0.1, 100)
    five = necessity_all(model, tasks, shared, mode="zero", seeds=range(5))
    table = flip_table(model, tasks, by_metric, performed=list(tasks), k=0.1, ps=(100,), modes=("zero",), seeds=(0,),
                       known={"zero": five})
    ok = all(r.excess > 0 and r.p_value < 0.05 for r in five.values())
    worst = max(r.p_value for r in five.values())
    assert table.loc[("focused", "10%", 100), "necessary (zero)"] == f"{'pass' if ok else 'fail'}, worst p = {worst:.2g} (5 seeds)"
    # results for other sets are not reused
    elsewhere = necessity_all(model, tasks, {n: Circuit(["m0", "a0.h0"]) for n in tasks}, mode="zero", seeds=range(2))
    other = flip_table(model, tasks, by_metric, performed=list(tasks), k=0.1, ps=(100,), modes=("zero",), seeds=(0,),
                       known={"zero": elsewhere})
    assert other.loc[("focused", "10%", 100), "necessary (zero)"].endswith("(1 seed)")


def test_teaching_setting_follows_its_rule():
    comps = [f"c{i}" for i in range(20)]
    g = torch.Generator().manual_seed(0)
    nodes = torch.rand(40, 20, generator=g)
    nodes[:, :3] += 10  # three components top every example: median |S_100| = 3 at K = 15% (3 of 20)
    big = {"t": fake_scores(nodes, comps)}
    assert teaching_setting(big, ["t"], ks=(0.1, 0.15, 0.2), ps=(50, 100), paper_k=0.15)[:2] == (0.15, 100)
    # one component tops every example: the paper's K gives |S_P| = 1 .. 2, so the rule moves K up, P as large as it can
    nodes = torch.rand(40, 20, generator=g)
    nodes[:, 0] += 10
    nodes[:15, 1] += 5
    nodes[15:, 2] += 5
    nodes[:, 3] += 2  # third for everyone: in every top-3 circuit (K = 15%)
    one = {"t": fake_scores(nodes, comps)}
    k, p, rule = teaching_setting(one, ["t"], ks=(0.05, 0.1, 0.15, 0.2), ps=(50, 75, 100), paper_k=0.1)
    assert (k, p) == (0.15, 50) and "smallest K" in rule  # K = 10%: S_50 = {c0, c2}; K = 15%: S_100 = {c0, c3}, S_50 adds c2
    flat = {"t": fake_scores(torch.rand(40, 20, generator=g), comps)}
    k, p, rule = teaching_setting(flat, ["t"], ks=(0.05, 0.1), ps=(75, 100), paper_k=0.1)
    assert (k, p) == (0.1, 75) and "no setting" in rule


def test_specificity_degenerate_on_planted_cases():
    same = {"a": Circuit(["m0"]), "b": Circuit(["m0"])}
    assert "same set (m0)" in specificity_degenerate(same)
    assert "empty" in specificity_degenerate({"a": Circuit(["m0"]), "b": Circuit([])})
    assert "only 1 task" in specificity_degenerate({"a": Circuit(["m0"])})
    assert specificity_degenerate({"a": Circuit(["m0", "a1.h0"]), "b": Circuit(["m0"])}) is None


def test_reuse_margin_range_brackets_the_sweeps_margin_and_tightens_when_focused(setup):
    from tutorial_lib.studies.consistency import reuse_margin_range

    _, _, scores = setup
    ks, ps = (0.1, 0.2), (50, 100)
    for kind in ("focused", "noisy"):
        s = scores[kind]["one"]
        sweep = reuse_sweep(s, ks=ks, ps=ps, seed=0)
        lo, hi = reuse_margin_range(s, 0.2, 50, ks)
        margin = float(sweep.reuse[0, 1] - sweep.random_reuse[0, 1])  # the same baseline circuits as the sweep
        assert lo - 1e-9 <= margin <= hi + 1e-9
    lo, hi = reuse_margin_range(scores["focused"]["one"], 0.1, 100, ks)
    assert lo == hi == pytest.approx(1.0)  # m0 tops every example: reuse 1, random 0 on every resample


def test_necessity_unsure_names_tasks_whose_excess_straddles_zero():
    from types import SimpleNamespace

    from tutorial_lib.studies.consistency import necessity_unsure

    g = torch.Generator().manual_seed(0)
    clear = SimpleNamespace(circuit_drop=0.5 + 0.05 * torch.randn(40, generator=g), random_drops=torch.zeros(3, 40))
    noise = SimpleNamespace(circuit_drop=0.3 * torch.randn(40, generator=g), random_drops=torch.zeros(3, 40))
    below = SimpleNamespace(circuit_drop=torch.zeros(40), random_drops=0.5 + 0.05 * torch.rand(3, 40, generator=g))
    assert necessity_unsure({"clear": clear, "noise": noise, "below": below}) == {"noise"}
