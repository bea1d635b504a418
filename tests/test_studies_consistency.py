"""studies.consistency.flip_table: each cell's pass/fail agrees with computing that cell directly."""
import pytest
import torch
from conftest import make_tiny_model
from test_consistency import VOCAB, fake_scores, make_task

from tutorial_lib.core.components import all_components
from tutorial_lib.methods.consistency import reuse_sweep, shared_sets
from tutorial_lib.studies.consistency import necessity_all
from tutorial_lib.studies.consistency import flip_table


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
    for (metric, p), row in table.iterrows():
        margins = [float(sw.reuse[0, 0] - sw.random_reuse[0, 0]) for sw in
                   (reuse_sweep(by_metric[metric][n], ks=[0.1], ps=[p], seed=0) for n in tasks)]
        assert row["min reuse margin"] == pytest.approx(min(margins), abs=1e-3)
        assert row[cons] == ("pass" if min(margins) >= 0.2 else "fail")
    assert table.loc[("focused", 100), cons] == "pass"
    # random scores share nothing at P = 100: nothing to ablate, the necessity claim fails
    assert table.loc[("noisy", 100), "necessary (zero)"] == "fail: empty S_P"
    assert table.loc[("noisy", 100), cons] == "fail"
    # a necessity cell recomputed directly
    shared = shared_sets(by_metric["focused"], 0.1, 100)
    assert [set(c.nodes) for c in shared.values()] == [{"m0"}, {"m0"}]
    res = necessity_all(model, tasks, shared, mode="mean", seeds=(0,))
    ok = all(r.excess > 0 and r.p_value < 0.05 for r in res.values())
    worst = max(r.p_value for r in res.values())
    assert table.loc[("focused", 100), "necessary (mean)"] == f"{'pass' if ok else 'fail'}, worst p = {worst:.2g}"


def test_flip_table_refuses_bad_input(setup):
    model, tasks, by_metric = setup
    with pytest.raises(ValueError, match="performed is empty"):
        flip_table(model, tasks, by_metric, performed=[], k=0.1, ps=(100,))
    with pytest.raises(ValueError, match="lack the performed tasks"):
        flip_table(model, tasks, by_metric, performed=["one", "three"], k=0.1, ps=(100,))
