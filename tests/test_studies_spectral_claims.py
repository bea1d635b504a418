"""studies.spectral_claims: each claim kind holds, fails and is not testable, on constructed results and tiny models."""
from types import SimpleNamespace as NS

import pytest

from tutorial_lib.studies import spectral_claims as sc
from tutorial_lib.zoo.families import tiny_family_model


def outcome(spec):
    if not all(p.ok for p in spec.power):
        return "not testable"
    return "holds" if spec.holds else "fails"


def run(formed, first_loss):
    return NS(formed=formed, losses=[first_loss, 0.1])


def test_formation():
    assert outcome(sc.formation_claim({"small 1": run(True, 4.0), "small 2": run(True, 3.9)})) == "holds"
    assert outcome(sc.formation_claim({"small 1": run(True, 4.0), "small 2": run(False, 3.9)})) == "fails"
    assert outcome(sc.formation_claim({"small 1": run(True, 0.5), "small 2": run(True, 3.9)})) == "not testable"
    assert outcome(sc.formation_claim({"small 1": run(True, 4.0)})) == "not testable"  # one seed


class Result:
    def __init__(self, causal, draws):
        self.causal, self.verdict, self._draws = causal, "v", draws

    def distinct_controls(self):
        return [(d, {}, [0]) for d in self._draws]


@pytest.fixture(scope="module")
def wide():
    return tiny_family_model("gpt2", n_layers=2, n_heads=12, d_head=4, d_model=48)  # 12 heads a layer


def test_causal_against_layer_matched_draws(wide):
    heads = ["a1.h0", "a1.h1"]  # C(10, 2) = 45 draws
    ok = Result(True, [["a1.h5", "a1.h7"]])
    assert outcome(sc.causal_claim("x", wide, heads, ok, same_kind=heads)) == "holds"
    assert outcome(sc.causal_claim("x", wide, heads, Result(False, [["a1.h5", "a1.h7"]]), heads)) == "fails"
    # a control holding a head of the tested kind, or too few draws: not testable
    assert outcome(sc.causal_claim("x", wide, heads, Result(True, [["a1.h5", "a1.h2"]]), heads + ["a1.h2"])) == "not testable"
    many = [f"a1.h{i}" for i in range(11)]  # one head left in the layer: 1 draw
    assert outcome(sc.causal_claim("x", wide, many, Result(True, [["a1.h11"]]), many)) == "not testable"


def test_previous_token_and_k_composition(wide):
    assert outcome(sc.previous_token_claim("r", wide, ["a0.h0"], 0.9, 0.1, 0.8)) == "not testable"  # 11 draws < 20
    prev = ["a0.h0", "a0.h1"]  # C(10, 2) = 45
    assert outcome(sc.previous_token_claim("r", wide, prev, 0.9, 0.1, 0.8)) == "holds"
    assert outcome(sc.previous_token_claim("r", wide, prev, 0.9, 0.6, 0.8)) == "fails"
    assert outcome(sc.previous_token_claim("r", wide, prev, 1.0, 0.1, 0.8)) == "not testable"  # top-1 at its ceiling
    assert outcome(sc.k_composition_claim("r", 4, "a0.h1", "a0.h1", 5.0)) == "holds"
    assert outcome(sc.k_composition_claim("r", 4, "a0.h2", "a0.h1", 5.0)) == "fails"
    assert outcome(sc.k_composition_claim("r", 1, "a0.h0", "a0.h0", 5.0)) == "not testable"


def test_minority_and_copying():
    found = lambda n_heads, k, minority: NS(heads=[f"a1.h{i}" for i in range(k)], n_heads=n_heads, minority=minority)  # noqa: E731
    assert outcome(sc.minority_claim(found(64, 4, True), 0.2)) == "holds"
    assert outcome(sc.minority_claim(found(64, 30, False), 0.2)) == "fails"
    assert outcome(sc.minority_claim(found(8, 1, True), 0.2)) == "not testable"
    held = lambda first, drop: NS(label="held-out", drop=drop, heads=["a1.h0"], first_loss=first)  # noqa: E731
    assert outcome(sc.copying_claim(NS(held_out=held(8.0, 5.0), general=True))) == "holds"
    assert outcome(sc.copying_claim(NS(held_out=held(8.0, 0.5), general=False))) == "fails"
    assert outcome(sc.copying_claim(NS(held_out=held(1.0, 0.5), general=False))) == "not testable"
