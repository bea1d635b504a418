"""studies.answer_key: every method scored against the hand-built circuit; the flip table; why an edge was missed."""
from __future__ import annotations

import pytest
import torch

from tutorial_lib.methods.edge_ablation import edge_cut_effects
from tutorial_lib.studies import answer_key as ak
from tutorial_lib.zoo.answer_key import induction_key, successor_key

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def succ():
    key = successor_key(seed=0)
    task = key.task(16, seed=0)
    return key, task, ak.score_key(key, task, ig_steps=3, n_random=5), ak.verify_key(key, task, n_random=5)


@pytest.fixture(scope="module")
def ind():
    key = induction_key(seed=0)
    task = key.task(16, seed=0)
    return key, task, ak.score_key(key, task, ig_steps=3, n_random=5), ak.verify_key(key, task, n_random=5)


def test_path_effects_are_the_corrupt_edge_cuts(succ):
    key, task, sc, _ = succ
    cut, _ = edge_cut_effects(key.model, task, "corrupt")
    assert torch.allclose(sc.edge_scores["path patching"], cut, atol=2e-3)


def test_scores_table_and_points(succ):
    key, _, sc, _ = succ
    t = sc.table()
    assert list(t.index) == ["path patching", "EAP", "EAP-IG", "exact node patching"]  # no spectral step on the lookup
    assert sc.pp_nodes == sorted(key.circuit.nodes)  # the search finds the circuit's nodes
    assert sc.pp_point["nodes"] == (0.0, 1.0)
    assert sc.faithfulness["ground truth"] > 0.9 > max(sc.faithfulness["random"])
    assert all(0 <= r.auroc <= 1 for r in sc.edge_roc.values())
    assert sc.edge_truth().sum() == len(key.circuit.edges) and len(sc.edge_items()) == len(sc.flat("EAP"))


def test_eap_misses_the_k_composition_edge_that_eap_ig_and_path_patching_see(ind):
    key, _, sc, chk = ind
    ranks = {m: sc.ranks_of_truth(m)["a0.h0->a1.h0.k"] for m in ak.EDGE_METHODS}
    assert ranks["EAP"] > ranks["EAP-IG"] and ranks["EAP"] > ranks["path patching"]
    f = ak.edge_facts(sc, chk, "a0.h0->a1.h0.k")
    assert ak.why_missed_answer(f) == "gradient misses it"
    assert ak.why_missed_answer(ak.edge_facts(sc, chk, "embed->a0.h0.q")) == "no difference to patch"
    assert ak.why_missed_answer(ak.edge_facts(sc, chk, "a1.h0->logits")) == "ranked below the cut"
    assert sc.spectral["candidate"][:2] == ["a0.h0", "a1.h0"] or set(key.circuit.nodes) <= set(sc.spectral["candidate"])
    assert sc.spectral["candidate_metric"] < min(sc.spectral["control_metrics"])


def test_induction_data_targets_the_answer(ind):
    key, task, _, _ = ind
    from tutorial_lib.tasks.induction import induction_attention

    att = induction_attention(key.model, ak.induction_data(task))
    assert float(att[1, 0]) > 0.95 and float(att[1, 1:].max()) < 0.5


def test_other_prompt_corruption_is_a_derangement(succ):
    _, task, _, _ = succ
    other = ak.other_prompt_corruption(task)
    assert not any(torch.equal(a, b) for a, b in zip(other.clean, other.corrupt))
    assert (other.wrong[:, 0] != other.answers).all()


def test_flip_table(succ):
    key, task, sc, chk = succ
    flips = ak.flip_table(key, task, sc, chk, ig_steps=2)
    assert list(flips.index)[0].startswith("main") and len(flips) == 5
    assert (flips["circuit destroys the task"] == "yes").all()
    assert flips.loc["metric: log p(answer)", "distractors harmless"] == "no"  # they move the normaliser
    assert flips.loc["zero ablation", "truth edges that matter"] == f"{len(key.circuit.edges)} of {len(key.circuit.edges)}"


def test_tied_edges_share_their_mid_rank_and_range(ind):
    _, _, sc, _ = ind
    for m in ak.EDGE_METHODS:
        flat, items = sc.flat(m).abs(), sc.edge_items()
        mid, rng = sc.ranks_of_truth(m), sc.ranks_of_truth(m, ties="range")
        for e, r in mid.items():
            v = flat[items.index(e)]
            first, last = rng[e]
            assert first == int((flat > v).sum()) + 1 and last == int((flat >= v).sum()) and r == (first + last) / 2
    # constructed ties: the truth edge tied at 0 with every other zero edge sits mid-group, not at the group's top
    import dataclasses
    fake = dataclasses.replace(sc, edge_scores={**sc.edge_scores, "EAP": torch.zeros_like(sc.edge_scores["EAP"])})
    n = len(sc.edge_items())
    assert set(fake.ranks_of_truth("EAP").values()) == {(1 + n) / 2}
    with pytest.raises(ValueError, match="ties"):
        sc.ranks_of_truth("EAP", ties="best")


def test_every_method_scores_a_node_by_the_signed_sum_of_its_edges(ind):
    """One node definition in the AUROC table: path patching's node is the signed sum of its edges, as EAP's is."""
    _, _, sc, _ = ind
    assert torch.allclose(sc.node_scores["path patching"], sc.edge_scores["path patching"].sum(1)[1:])
    edge = torch.tensor([[0.0, 0.0], [0.5, 0.0], [0.3, -0.3]])  # embed, then a node whose edges cancel
    assert ak._node_from_edges(edge).tolist() == [0.5, 0.0]
