"""studies.answer_key_claims: the answer keys' claims hold, fail and are not testable on constructed results."""
from types import SimpleNamespace as NS

from tutorial_lib.methods.recovery import ROC
from tutorial_lib.studies import answer_key_claims as ac


def outcome(spec):
    if not all(p.ok for p in spec.power):
        return "not testable"
    return "holds" if spec.holds else "fails"


class Check:
    def __init__(self, clean=2.0, circuit=0.1, worst=1.8, distinct=25, matter=3):
        self.clean, self.circuit = clean, {"zero": circuit, "mean": circuit}
        self.distractors = {m: {"a0.h3": worst} for m in self.circuit}
        self.random_sets = {m: [worst] * 20 for m in self.circuit}
        self.n_distinct_sets, self._matter = distinct, matter

    def destroyed(self, mode):
        return self.circuit[mode] < 0.2 * self.clean

    def harmless(self, mode):
        return min(list(self.distractors[mode].values()) + self.random_sets[mode]) >= 0.8 * self.clean

    def edges_that_matter(self, mode):
        return list(range(self._matter))


KEY = NS(circuit=NS(edges=[("a0.h0", "a1.h0.k"), ("a1.h0", "logits"), ("embed", "a0.h0.q")]))


def by_name(specs):
    return {s.name.split("-", 1)[1]: outcome(s) for s in specs}


def test_construction_claims():
    assert set(by_name(ac.construction_claims("k", KEY, Check())).values()) == {"holds"}
    assert by_name(ac.construction_claims("k", KEY, Check(circuit=1.5, worst=1.0, matter=2))) == {
        "circuit-necessary": "fails", "distractors-harmless": "fails", "edges-matter": "fails"}
    assert by_name(ac.construction_claims("k", KEY, Check(distinct=3)))["distractors-harmless"] == "not testable"
    assert set(by_name(ac.construction_claims("k", KEY, Check(clean=-0.5))).values()) == {"not testable"}


def roc(auroc, n_pos=3, n_neg=10, fpr=(0.0, 0.5, 1.0), tpr=(0.0, 0.5, 1.0)):
    return ROC(list(fpr), list(tpr), [0, 1, 2], auroc, n_pos, n_neg)


def scores(truth_f=0.95, random_f=(0.3, 0.4), node_auroc=0.8, edge_auroc=0.7, pp=(0.2, 0.9), n_pos=3):
    edge = {m: roc(edge_auroc) for m in ac.EDGE_METHODS}
    return NS(faithfulness={"ground truth": truth_f, "random": list(random_f)}, node_roc={"EAP": roc(node_auroc, n_pos)},
              edge_roc=edge, pp_point={"edges": pp})


def scoring(**kw):
    return {s.name: outcome(s) for s in ac.scoring_claims({"a": scores(**kw), "b": scores(**kw)})}


def test_scoring_claims():
    assert set(scoring().values()) == {"holds"}
    got = scoring(truth_f=0.2, node_auroc=0.4, pp=(0.6, 0.3))
    assert got == {"05.truth-beats-random": "fails", "05.nodes-above-chance": "fails", "05.pp-above-curves": "fails"}
    got = scoring(random_f=(0.0, 0.0), n_pos=1, edge_auroc=1.0)
    assert set(got.values()) == {"not testable"}


def test_eap_ig_claim():
    g = NS(senders=["embed", "a0.h0"], receivers=["a1.h0.k", "logits"])
    import torch

    s = NS(graph=g, settings={"ig_steps": 5},
           edge_scores={"EAP": torch.tensor([[0.0, 0.0], [0.01, 0.0]]), "EAP-IG": torch.tensor([[0.0, 0.0], [0.5, 0.0]])})
    assert outcome(ac.eap_ig_claim(s, ["a0.h0->a1.h0.k"])) == "holds"
    assert outcome(ac.eap_ig_claim(s, [])) == "fails"
    s.settings["ig_steps"] = 1
    assert outcome(ac.eap_ig_claim(s, ["a0.h0->a1.h0.k"])) == "not testable"
