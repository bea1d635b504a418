"""Notebook 04's readings (tutorial_lib.studies.comparing_text): numbers from the run, at most 120 words."""
import pytest
import torch

from tutorial_lib.studies import comparing as cm
from tutorial_lib.studies import comparing_text as ct
from tutorial_lib.tasks.greater_than import make_greater_than
from tutorial_lib.zoo.loading import load_model

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def comparison():
    model = load_model("zoo-multitask", verbose=False)
    task = make_greater_than(model.tokenizer, n=12, seed=0)
    return cm.compare_methods(model, task, ig_steps=2, fractions=(0.0, 0.002, 0.01, 0.05, 0.2, 1.0),
                              random_seeds=range(2), progress=False)


def test_readings_quote_the_run_in_at_most_120_words(comparison):
    c = comparison
    for f in (ct.curve_reading, ct.window_reading, ct.closest_why, ct.agreement_answer, ct.random_band_answer):
        assert len(f(c).split()) <= 120, f.__name__
    e = c.signed_edge_curves["EAP"]
    assert f"at 1% of the edges f is {e.at(0.01):.2f}" in ct.curve_reading(c)
    w = cm.differing_sizes(c, "edges")
    text = ct.window_reading(c)
    assert (f"from {w['saturated']:.1%} of the edges on" in text) != w["degenerate"]
    assert f"EAP {w['full_cpr']['EAP']:.3f}" in text


def test_closest_why_names_the_swapped_components(comparison):
    c = comparison
    k = len(c.pp_nodes)
    table = c.overlap_with_exact(k)
    text = ct.closest_why(c)
    assert text.startswith(f"At k = {k}:")
    for m in ("EAP", "EAP-IG"):
        extra = table.loc[m, "only in the method's set"]
        assert (f"{m}'s set is exact patching's" in text) == (extra == "-")
        if extra != "-":
            assert all(f"{x} (exact rank" in text for x in extra.split(", "))
    by_k = c.overlap_by_size()
    assert f"at {int((by_k['EAP-IG'] > by_k['EAP'] + 1e-9).sum())} sizes" in text


def test_curve_table_reads_the_curves(comparison):
    c = comparison
    t = ct.curve_table(c)
    assert t.loc[("edges", "EAP", "signed"), "CPR"] == pytest.approx(c.signed_edge_curves["EAP"].cpr(), abs=1e-3)
    assert t.loc[("nodes", "exact node patching", "|score|"), "f at 10%"] == pytest.approx(
        c.node_curves["exact node patching"].at(0.1), abs=1e-3)
    rand = sum(r.cpr() for r in c.random_edges) / len(c.random_edges)
    assert t.loc[("edges", "random (2 seeds, mean)", "random"), "CPR"] == pytest.approx(rand, abs=1e-3)
