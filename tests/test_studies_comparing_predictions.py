"""Notebook 04's fair predictions (tutorial_lib.studies.comparing_predictions), on the shipped small zoo model."""
import pytest
import torch
from conftest import COMPARISON_FRACTIONS

from tutorial_lib.studies import comparing as cm
from tutorial_lib.studies import comparing_predictions as cp

torch.set_num_threads(1)
FRACTIONS = COMPARISON_FRACTIONS


@pytest.fixture(scope="module")
def comparison(zoo_comparison):
    return zoo_comparison


def test_ig_above_answers_hold_the_runs_own_and_follow_the_resamples(comparison):
    model, task, c = comparison
    answers = cp.ig_above_answers(model, task, c)
    assert cm.curve_facts(c)["ig_above_at_most"] in answers and answers <= {True, False}
    # the per-example metric behind the bootstrap reproduces the curves' own means
    from tutorial_lib.methods import faithfulness as fa

    small = [x for x in FRACTIONS if 0 < x <= 0.1]
    masks = fa.top_edges(c.graph, c.edge_scores["EAP-IG"], small, "absolute")
    each = fa.patched_metric(model, task, masks, c.metric, per_example=True)
    want = [m for x, m in zip(c.edge_curves["EAP-IG"].fractions, c.edge_curves["EAP-IG"].metric) if 0 < x <= 0.1]
    assert each.mean(1).tolist() == pytest.approx(want, abs=1e-5)
    # identical curves: EAP-IG is never above nor below, so "above at more sizes" is False on every resample
    same = cm.MethodComparison(**{**c.__dict__, "edge_scores": {**c.edge_scores, "EAP-IG": c.edge_scores["EAP"]},
                                  "edge_curves": {**c.edge_curves, "EAP-IG": c.edge_curves["EAP"]}})
    assert cp.ig_above_answers(model, task, same) == {False}


def test_ig_above_answers_refuse_curves_without_small_sizes(comparison):
    model, task, c = comparison
    curves = {n: cm.fa.FaithfulnessCurve(n, [0.0, 0.5, 1.0], [0, 0.5, 1], [0, 0, 0], 1.0, 0.0)
              for n in c.edge_curves}
    with pytest.raises(ValueError, match="no size in"):
        cp.ig_above_answers(model, task, cm.MethodComparison(**{**c.__dict__, "edge_curves": curves}))


def test_random_at_range_is_the_seeds_range_on_the_grid(comparison):
    _, _, c = comparison
    first = [1.0 if x is None else x for x in cm.curve_facts(c)["random_first_at"]]
    lo, hi = cp.random_at_range(c)
    assert lo <= min(first) <= max(first) <= hi
    grid = list(FRACTIONS)
    assert lo in grid and hi in grid  # widened to the neighbouring sizes, not past them
    below = [g for g in grid if g < min(first)]
    assert lo == (max(below) if below else min(first))


def test_closest_answers_hold_the_runs_own_and_resample_only_what_is_a_mean(comparison):
    _, _, c = comparison
    k = max(1, len(c.pp_nodes))
    assert set(c.node_scores_each) == {"EAP", "EAP-IG", "exact node patching"}
    for m, each in c.node_scores_each.items():  # the per-example scores are the ones the means were taken of
        assert torch.allclose(each.mean(0), c.node_scores[m], atol=1e-5)
    answers = cp.closest_answers(c, k)
    assert cm.closest_to_exact(c, k) <= answers <= {"EAP", "EAP-IG", "path patching"}
    # a method whose scores are exact patching's, per example, is the closest on every resample, alone
    twin = {**c.node_scores_each, "EAP": c.node_scores_each["exact node patching"].clone()}
    far = -torch.arange(twin["EAP"].shape[1], dtype=torch.float32).flip(0)  # one fixed ranking for every example
    twin["EAP-IG"] = far.expand_as(twin["EAP"]).clone()
    nodes = {m: v.mean(0) for m, v in twin.items()}
    same = cm.MethodComparison(**{**c.__dict__, "node_scores_each": twin, "node_scores": nodes,
                                  "pp_nodes": c.pp_nodes[:max(0, k - 1)]})  # not size k: left out
    assert cp.closest_answers(same, k) == {"EAP"}
    with pytest.raises(ValueError, match="per-example node scores"):
        cp.closest_answers(cm.MethodComparison(**{**c.__dict__, "node_scores_each": {}}), k)
