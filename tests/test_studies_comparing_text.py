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
    if w["saturated"] >= 1.0:  # no curve settles before the whole model: the window is MIB's full range
        assert "MIB's full range is the window" in text and f"EAP {w['cpr']['EAP']:.2f}" in text
    else:
        assert (f"from {w['saturated']:.1%} of the edges on" in text) != w["degenerate"]
        assert f"EAP {w['full_cpr']['EAP']:.3f}" in text
    # each branch, on a comparison whose curves are set by hand
    import copy

    flat = copy.deepcopy(c)
    for cur in [*flat.signed_edge_curves.values(), *flat.node_curves.values()]:
        cur.f = [0.0] + [1.0] * (len(cur.f) - 1)
    assert "no window where they differ" in ct.window_reading(flat)
    never = copy.deepcopy(c)
    for cur in [*never.signed_edge_curves.values(), *never.node_curves.values()]:
        cur.f = [0.0] + [0.5] * (len(cur.f) - 2) + [1.0]
    assert "MIB's full range is the window" in ct.window_reading(never)


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


def test_notebook_04_says_what_the_run_measures():
    """Issue 32's findings in notebook 04's text must not come back: exact node patching called a ground truth; a
    prediction scored by another quantity than it asks; an explanation at another level; an exercise without a hint."""
    from pathlib import Path

    src = (Path(__file__).resolve().parents[1] / "notebooks" / "src" / "04_comparing_methods.py").read_text()
    assert "ground truth for node" not in src and "ground-truth ranking" not in src
    line = next(l for l in src.splitlines() if l.startswith("PREDICT_CLOSEST_TO_EXACT"))
    assert "Jaccard" in line and "top-k" in line  # the question names the quantity that scores it
    call = src[src.index("reading.predicted(PREDICT_CLOSEST_TO_EXACT"):].split("\n# %%")[0]
    assert "closest_answers(comparison, K)" in call and "why=closest_why(comparison, K)" in call  # fair: resampled
    assert "1% of the edges" not in call  # the why argues at the level of node sets, not of edges
    assert src.count("<details><summary>Hint") >= src.count("# BEGIN SOLUTION") >= 5
    exercise_2 = src.split("def faithfulness_of")[0].split("Exercise 2")[1]  # the engine: a ladder of three hints
    at = [exercise_2.index(f"<summary>Hint {i}") for i in (1, 2, 3)]
    assert at == sorted(at) and "engine_view(model, split_qkv=True, attn_result=True, mlp_in=True)" in exercise_2
    assert "EAPGraph.from_model" in exercise_2
    assert "patched_metric(" not in src.split("def faithfulness_of")[1].split("# END SOLUTION")[0]  # the learner's own
