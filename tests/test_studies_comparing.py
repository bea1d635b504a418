"""Notebook 04's study (tutorial_lib.studies.comparing) and its figures, on the shipped small zoo model."""
import math

import pytest
import torch
from conftest import COMPARISON_FRACTIONS

from tutorial_lib.methods import faithfulness as fa
from tutorial_lib.studies import comparing as cm
from tutorial_lib.studies import comparing_text as ct
from tutorial_lib.zoo.loading import load_model

torch.set_num_threads(1)
FRACTIONS = COMPARISON_FRACTIONS


@pytest.fixture(scope="module")
def comparison(zoo_comparison):
    return zoo_comparison


def test_every_curve_is_measured_the_same_way(comparison):
    model, task, c = comparison
    with torch.no_grad():
        clean, corrupt = task.metric(model(task.clean)).mean().item(), task.metric(model(task.corrupt)).mean().item()
    assert c.settings["m_full"] == pytest.approx(clean, abs=1e-5)
    assert c.settings["m_empty"] == pytest.approx(corrupt, abs=1e-5)
    curves = [*c.edge_curves.values(), *c.signed_edge_curves.values(), *c.node_curves.values(), *c.random_edges,
              *c.random_nodes]
    for curve in curves:
        assert curve.fractions == list(FRACTIONS)
        assert curve.n_edges[0] == 0 and curve.f[0] == 0.0 and curve.f[-1] == pytest.approx(1.0, abs=1e-5)
    assert {cu.ranking for cu in c.signed_edge_curves.values()} == {"signed"}
    assert {cu.ranking for cu in [*c.edge_curves.values(), *c.node_curves.values()]} == {"absolute"}
    # node scores: embed first, its score the sum of its edge scores (exact: patching it is the corrupted run)
    assert c.nodes[0] == "embed" and all(len(v) == len(c.nodes) for v in c.node_scores.values())
    for name in ("EAP", "EAP-IG"):
        assert c.node_scores[name][0].item() == pytest.approx(c.edge_scores[name][0].sum().item(), abs=1e-6)
    assert c.node_scores["exact node patching"][0].item() == pytest.approx(corrupt - clean, abs=1e-4)
    # the path-patching point is the faithfulness of its node circuit: embed and its components
    mask = fa.node_circuit(c.graph, ["embed", *c.pp_nodes])
    assert torch.equal(mask, c.circuit("path patching", 0.5))
    m = fa.patched_metric(model, task, mask)[0].item()
    assert c.pp_point["f"] == pytest.approx((m - corrupt) / (clean - corrupt), abs=1e-4)
    assert c.pp_point["n_edges"] == int(mask.sum()) and c.pp_point["n_nodes"] == len(c.pp_nodes) + 1
    # the methods' circuits with exactly the path-patching circuit's number of edges
    for name, f in c.pp_point["methods_f"].items():
        top = fa.top_edges(c.graph, c.edge_scores[name], [c.pp_point["fraction_edges"]])[0]
        assert int(top.sum()) == int(mask.sum())
        m_top = fa.patched_metric(model, task, top)[0].item()
        assert f == pytest.approx((m_top - corrupt) / (clean - corrupt), abs=1e-4)
    # its matched random control: embed and as many random heads and MLPs, one draw per seed, all different
    draws = c.pp_point["random_nodes"]
    assert len(draws) == 2 and draws[0] != draws[1]
    for nodes, f in zip(draws, c.pp_point["random_f"]):
        assert nodes[0] == "embed" and len(set(nodes[1:]) & set(c.components)) == len(c.pp_nodes)
        m_r = fa.patched_metric(model, task, fa.node_circuit(c.graph, nodes))[0].item()
        assert f == pytest.approx((m_r - corrupt) / (clean - corrupt), abs=1e-4)


def test_mib_numbers_take_cpr_from_the_signed_ranking_and_cmd_from_the_absolute(comparison):
    model, task, c = comparison
    for name in ("EAP", "EAP-IG"):
        signed = fa.top_edges(c.graph, c.edge_scores[name], FRACTIONS, "signed")
        f = fa.faithfulness(fa.patched_metric(model, task, signed), c.settings["m_full"], c.settings["m_empty"])
        assert c.mib(name).cpr() == pytest.approx(fa.cpr(FRACTIONS, f.tolist()), abs=1e-5)
        assert c.mib(name).cmd() == c.edge_curves[name].cmd()
        mib = c.mib_table()
        assert mib.loc[name, "CPR (signed ranking)"] == pytest.approx(c.signed_edge_curves[name].cpr(), abs=1e-3)
        assert mib.loc[name, "CMD (absolute ranking)"] == pytest.approx(c.edge_curves[name].cmd(), abs=1e-3)
    # the two rankings give different circuits here (otherwise this test would not tell them apart)
    assert any(not torch.equal(fa.top_edges(c.graph, c.edge_scores["EAP"], [x], "signed")[0],
                               fa.top_edges(c.graph, c.edge_scores["EAP"], [x], "absolute")[0]) for x in FRACTIONS[1:-1])
    assert c.ranking(kind="edges")[0][0] in ("EAP", "EAP-IG")
    with pytest.raises(ValueError, match="ranked by"):
        c.curves("nodes", "signed")


def test_claim_facts_read_the_curves(comparison):
    model, _, c = comparison
    specs = {s.name: s for s in cm.claim_facts(c, model)}
    assert set(specs) == {"04.eap-cpr-above-random", "04.eap-ig-cpr-above-random", "04.pp-above-random"}
    rand = max(r.cpr() for r in c.random_edges)
    assert specs["04.eap-cpr-above-random"].holds == (c.signed_edge_curves["EAP"].cpr() > rand)
    assert specs["04.eap-ig-cpr-above-random"].holds == (c.signed_edge_curves["EAP-IG"].cpr() > rand)
    assert specs["04.pp-above-random"].holds == (c.pp_point["f"] > max(c.pp_point["random_f"]))
    assert f"{c.pp_point['f']:.3f}" in specs["04.pp-above-random"].test
    assert any("type-matched" in p.reason for p in specs["04.pp-above-random"].power)


def test_claim_facts_are_not_testable_while_random_circuits_sit_at_zero(comparison):
    """The learner's case: random circuits at f = 0 below the whole model leave the CPR claims nothing to beat."""
    import copy

    model, _, c = comparison
    flat = copy.deepcopy(c)
    for r in flat.random_edges:
        r.f = [1.0 if x >= 1.0 else 0.0 for x in r.fractions]
    flat.pp_point = {**flat.pp_point, "random_f": [0.0] * len(flat.pp_point["random_f"])}
    for spec in cm.claim_facts(flat, model):
        assert not all(p.ok for p in spec.power), spec.name


def test_table_rankings_and_summaries_read_the_curves(comparison):
    _, _, c = comparison
    table = c.table()
    eap = c.edge_curves["EAP"]
    signed = c.signed_edge_curves["EAP"]
    assert table.loc[("edges", "EAP", "absolute"), "CPR"] == pytest.approx(eap.cpr(), abs=1e-3)
    assert table.loc[("edges", "EAP", "absolute"), "CMD (log x)"] == pytest.approx(eap.cmd("log"), abs=1e-3)
    assert table.loc[("edges", "EAP", "signed"), "CPR"] == pytest.approx(signed.cpr(), abs=1e-3)
    rand = [r.cpr() for r in c.random_edges]
    assert table.loc[("edges", "random (2 seeds)", "random"), "CPR"] == pytest.approx(sum(rand) / 2, abs=1e-3)
    for kind, n in (("edges", 2), ("nodes", 3)):  # edge and node curves are ranked separately (other x-axes)
        curves = c.cpr_curves(kind)  # CPR: edges in the signed ranking (MIB's), nodes by |score|
        assert curves is (c.signed_edge_curves if kind == "edges" else c.node_curves)
        groups = c.ranking(kind=kind)
        flat = [m for g in groups for m in g]
        assert sorted(flat) == sorted(curves) and len(flat) == n
        cprs = [curves[m].cpr() for m in flat]
        assert cprs == sorted(cprs, reverse=True)
        for g in groups:  # within a group: within the tie of its best; the next group's best: not
            assert all(curves[g[0]].cpr() - curves[m].cpr() < 0.005 for m in g)
        for g, nxt in zip(groups, groups[1:]):
            assert curves[g[0]].cpr() - curves[nxt[0]].cpr() >= 0.005
        assert [[m] for m in flat] == c.ranking(kind=kind, tie=0.0) or len(set(cprs)) < len(cprs)
    text = ct.curve_reading(c)
    e, g = c.signed_edge_curves["EAP"], c.signed_edge_curves["EAP-IG"]
    assert "Signed top edges reach f ≥ 0.8 at" in text and f"f = {c.pp_point['f']:.2f}" in text
    assert f"at 1% of the edges f is {e.at(0.01):.2f} and {g.at(0.01):.2f}" in text
    note = c.axis_note()
    assert "**edges**" in note and "**nodes**" in note and len(note.split()) <= 120
    r_lin = sum(r.cpr() for r in c.random_edges) / len(c.random_edges)
    best = c.signed_edge_curves[c.ranking(kind="edges")[0][0]]
    assert f"difference {best.cpr() - r_lin:.2f}" in note


def test_jaccard_against_chance():
    from tutorial_lib.core import circuits

    assert cm.jaccard is circuits.jaccard  # one Jaccard in the course, still importable from here
    assert cm.jaccard({"a", "b"}, {"b", "c"}) == pytest.approx(1 / 3)
    assert cm.jaccard([], []) == 1.0
    # two random 4-subsets of 10: E[J] from the hypergeometric distribution of the intersection
    exact = sum(math.comb(4, i) * math.comb(6, 4 - i) / math.comb(10, 4) * i / (8 - i) for i in range(5))
    assert cm.expected_jaccard(10, 4, 4) == pytest.approx(exact, abs=1e-12)
    # against a slow draw, sets of different sizes; p: the share of random pairs overlapping at least as much
    g = torch.Generator().manual_seed(0)
    draws = [len(set(torch.randperm(12, generator=g)[:3].tolist()) & set(torch.randperm(12, generator=g)[:5].tolist()))
             for _ in range(20000)]
    js = [i / (8 - i) for i in draws]
    assert cm.expected_jaccard(12, 3, 5) == pytest.approx(sum(js) / len(js), abs=0.005)
    assert cm.overlap_p(12, 3, 5, 2 / 6) == pytest.approx(sum(j >= 2 / 6 - 1e-12 for j in js) / len(js), abs=0.01)


def test_jaccard_table_and_kept_by_all(comparison):
    _, _, c = comparison
    table, chance = c.jaccard()
    k = len(c.pp_nodes)
    assert list(table.index) == list(table.columns) and (table.values.diagonal() == 1).all()
    assert (table.values == table.values.T).all() and 0 < chance < 1
    kept = c.kept_by_all()
    for nodes in c.node_sets(k).values():
        assert set(kept) <= set(nodes)


def test_curve_facts_and_closest_to_exact_read_the_curves_by_hand(comparison):
    _, _, c = comparison
    facts = cm.curve_facts(c, level=0.8)
    e, g = c.edge_curves["EAP"], c.edge_curves["EAP-IG"]
    small = [(a, b) for x, a, b in zip(e.fractions, e.f, g.f) if 0 < x <= 0.1]  # FRACTIONS: 0.01, 0.05, 0.1
    assert facts["n_small"] == 3
    assert facts["ig_above"] == sum(b > a + 1e-6 for a, b in small)
    assert facts["ig_below"] == sum(b < a - 1e-6 for a, b in small)
    assert facts["ig_above_at_most"] == (facts["ig_above"] > facts["ig_below"])
    for r, first in zip(c.random_edges, facts["random_first_at"]):
        assert first == min(x for x, f in zip(r.fractions, r.f) if f >= 0.8)  # f(M) = 1: never None here
    table, _ = c.jaccard()
    row = {m: table.loc["exact node patching", m] for m in table.columns if m != "exact node patching"}
    best = cm.closest_to_exact(c)
    assert best and best <= set(row) and all(row[m] == max(row.values()) for m in best)
    assert all(row[m] < max(row.values()) for m in set(row) - best)


def test_folded_answers_quote_the_run(comparison):
    import pandas as pd

    _, _, c = comparison
    table = pd.DataFrame({"m": [1, 5], "sum of embed's edge scores": [-0.2, -0.45],
                          "metric(corrupt) − metric(clean)": [-0.5, -0.5]}).set_index("m")
    text = ct.completeness_answer(table)
    assert "m = 1: 60% off" in text and "m = 5: 10% off" in text and "gets closer" in text
    table.iloc[1, 0] = -0.1  # further off at m = 5: the answer must not claim convergence
    assert "does not get closer" in ct.completeness_answer(table)
    # closer at the largest m, but not at every step: no trend word (issue 50: the ends alone decided it before)
    zigzag = pd.DataFrame({"m": [1, 3, 5], "sum of embed's edge scores": [-0.2, -0.1, -0.45],
                           "metric(corrupt) − metric(clean)": [-0.5, -0.5, -0.5]}).set_index("m")
    text = ct.completeness_answer(zigzag)
    assert "gets closer as m grows" not in text and "is closer at m = 5 than at m = 1, but not at every step" in text
    text = ct.random_band_answer(c)
    assert f"{c.pp_point['n_edges']} of the {fa.n_edges(c.graph)} edges" in text
    half = sum(r.at(0.3) for r in c.random_edges) / len(c.random_edges)  # FRACTIONS' size nearest 0.5
    assert f"30% of the edges reach f = {half:.2f}" in text and len(text.split()) <= 120
    text = ct.agreement_answer(c)
    assert text.startswith("No.") and f"f = {c.pp_point['f']:.2f}" in text
    assert all(comp in text for comp in c.kept_by_all()) and len(text.split()) <= 120


def test_panel_and_graph(comparison):
    from tutorial_lib.viz.comparing import ComparisonPanel, plot_circuit_graph, plot_faithfulness

    _, _, c = comparison
    panel = ComparisonPanel(c)
    state = panel.show(0.05, "EAP-IG")
    assert state["method"] == "EAP-IG" and state["fraction"] == 0.05
    assert state["f"]["EAP"] == pytest.approx(c.edge_curves["EAP"].at(0.05))
    assert state["n_edges"] == int(c.circuit("EAP-IG", 0.05).sum())
    assert set(panel.show(method="path patching")["nodes"]) == {"embed", *c.pp_nodes}
    fig = plot_faithfulness(c, "nodes")
    assert any("path-patching" in (t.name or "") for t in fig.data)
    signed = plot_faithfulness(c, "edges", ranking="signed")
    assert "signed score: MIB's ranking for CPR" in signed.layout.title.text
    assert "|score|: MIB's ranking for CMD" in plot_faithfulness(c, "edges").layout.title.text
    eap = next(t for t in signed.data if (t.name or "").startswith("EAP:"))
    assert list(eap.y) == [v for x, v in zip(FRACTIONS, c.signed_edge_curves["EAP"].f) if x > 0]
    assert eap.name.startswith(f"EAP: CPR {c.signed_edge_curves['EAP'].cpr():.2f} (MIB's")  # the signed figure leads with CPR
    absolute = next(t for t in plot_faithfulness(c, "edges").data if (t.name or "").startswith("EAP:"))
    assert absolute.name.startswith(f"EAP: CMD {c.edge_curves['EAP'].cmd():.2f} (MIB's")  # the absolute one with CMD
    g = plot_circuit_graph(c.graph, {"EAP": c.circuit("EAP", 0.1)})
    assert g.data[0].name.startswith("EAP (")
    with pytest.raises(ValueError, match="draw at most"):
        plot_circuit_graph(c.graph, {"all": fa.full_circuit(c.graph)}, max_edges=3)


def test_the_ioi_switch_runs_the_generic_path_patching_search():
    """Notebook 04's TASK = "ioi": the two-step search, then every curve, on the small zoo model."""
    from tutorial_lib.tasks import make_task

    model = load_model("zoo-multitask", verbose=False)
    task = make_task("ioi", model.tokenizer, n=8, seed=0)
    nodes, how = cm.path_patching_circuit(model, task)
    assert how.startswith("two-step search") and nodes and "embed" not in nodes
    c = cm.compare_methods(model, task, ig_steps=2, fractions=(0.0, 0.1, 1.0), random_seeds=[0], pp_nodes=nodes,
                           pp_how=how, progress=False)
    assert c.edge_curves["EAP"].f[-1] == pytest.approx(1.0, abs=1e-5) and 0 < c.pp_point["n_edges"] < fa.n_edges(c.graph)


def test_overlap_with_exact_and_by_size_read_the_node_scores(comparison):
    _, _, c = comparison
    k = len(c.pp_nodes)
    table = c.overlap_with_exact()
    sets = c.node_sets(k)
    exact = set(sets["exact node patching"])
    for m in ("EAP", "EAP-IG", "path patching"):
        assert table.loc[m, "Jaccard"] == pytest.approx(cm.jaccard(sets[m], exact), abs=1e-3)
        assert table.loc[m, "chance"] == pytest.approx(cm.expected_jaccard(len(c.components), k, k), abs=1e-3)
        only = table.loc[m, "only in the method's set"]
        assert (set() if only == "-" else set(only.split(", "))) == set(sets[m]) - exact
    by_k = c.overlap_by_size()
    assert list(by_k.index) == list(range(1, len(c.components) + 1)) and (by_k.iloc[-1] == 1.0).all()
    assert by_k.loc[k, "EAP"] == pytest.approx(cm.jaccard(sets["EAP"], exact))


def test_differing_sizes_follow_the_rule(comparison):
    _, _, c = comparison
    w = cm.differing_sizes(c, "edges", within=0.05)
    curves = c.cpr_curves("edges")
    xs = curves["EAP"].fractions
    i = xs.index(w["saturated"])
    for cur in curves.values():  # saturated from there on...
        assert all(abs(1 - v) <= 0.05 for v in cur.f[i:])
    if i > 1:  # ... and not from the size before
        assert any(abs(1 - v) > 0.05 for cur in curves.values() for v in cur.f[i - 1:])
    assert w["sizes"] == [x for x in xs if 0 < x < w["saturated"]] and w["degenerate"] == (not w["sizes"])
    assert w["cpr"]["EAP"] == pytest.approx(fa.area(xs[:i + 1], curves["EAP"].f[:i + 1]) / w["saturated"])
    # a window that every curve saturates at once is degenerate
    assert cm.differing_sizes(c, "edges", within=10.0)["degenerate"]


def test_pp_control_is_the_course_size_matched_random(comparison):
    from tutorial_lib.core.controls import size_matched_random

    model, _, c = comparison
    for s, nodes in zip(c.settings["random_seeds"], c.pp_point["random_nodes"]):
        want = size_matched_random(model, c.pp_nodes, seed=s, match="auto").nodes
        assert nodes[0] == "embed" and set(nodes[1:]) == set(want) and not set(nodes[1:]) & set(c.pp_nodes)


def test_overlap_figure_draws_the_table(comparison):
    from tutorial_lib.viz.comparing import plot_overlap_by_size

    _, _, c = comparison
    table, n = c.overlap_by_size(), len(c.components)
    fig = plot_overlap_by_size(table, 3, chance=lambda k: cm.expected_jaccard(n, k, k))
    by_name = {t.name: t for t in fig.data}
    assert list(by_name["EAP-IG"].y) == list(table["EAP-IG"]) and list(by_name["EAP"].x) == list(table.index)
    assert by_name["two random k-sets (mean)"].y[-1] == pytest.approx(1.0)  # k = n: both sets are everything
