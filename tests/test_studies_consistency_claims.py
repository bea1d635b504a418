"""studies.consistency_claims: reuse against random sets of S_P's make-up, and necessity against type-matched
controls; each holds, fails and is not testable."""
from types import SimpleNamespace as NS

import pytest
import torch

from tutorial_lib.core.circuits import Circuit
from tutorial_lib.studies import consistency_claims as cc
from tutorial_lib.zoo.families import tiny_family_model


def outcome(spec):
    if not all(p.ok for p in spec.power):
        return "not testable"
    return "holds" if spec.holds else "fails"


@pytest.fixture(scope="module")
def model():
    return tiny_family_model("gpt2", n_layers=4, n_heads=8, d_head=4, d_model=32)  # 32 heads, 4 MLPs


COMPS = [f"a{l}.h{h}" for l in range(4) for h in range(8)] + [f"m{l}" for l in range(4)]


class Scores:
    """EAPScores' interface for reuse: components and per-example top-k membership."""

    def __init__(self, rows):
        self.components = COMPS
        self._m = torch.zeros(len(rows), len(COMPS), dtype=torch.bool)
        for i, row in enumerate(rows):
            self._m[i, [COMPS.index(c) for c in row]] = True

    def top_k(self, k):
        return self._m


def test_reuse_holds_when_circuits_share_their_set(model):
    g = torch.Generator().manual_seed(0)
    shared = ["a0.h1", "a2.h3", "m1"]
    rows = [shared + [COMPS[int(i)] for i in torch.randint(0, 32, (2,), generator=g)] for _ in range(40)]
    spec = cc.reuse_claim(model, Scores(rows), "t", 0.1, 95, "main")
    assert outcome(spec) == "holds", spec


def test_reuse_fails_when_the_set_is_shared_by_few_components_of_each_circuit(model):
    g = torch.Generator().manual_seed(0)
    rows = [["a0.h1"] + [COMPS[int(i)] for i in torch.randperm(32, generator=g)[:12] if COMPS[int(i)] != "a0.h1"][:11]
            for _ in range(40)]  # S_P = {a0.h1}: 1 of 12 of each circuit (0.08), random heads meet circuits 11/31 of the time
    spec = cc.reuse_claim(model, Scores(rows), "t", 0.1, 95, "main")
    assert outcome(spec) == "fails", spec


def test_reuse_is_not_testable_when_the_set_holds_every_mlp_or_is_empty(model):
    every = [["m0", "m1", "m2", "m3", "a0.h0"] for _ in range(10)]
    spec = cc.reuse_claim(model, Scores(every), "t", 0.1, 95, "main")
    assert outcome(spec) == "not testable" and "0 distinct draws" in spec.power[0].reason
    g = torch.Generator().manual_seed(1)
    scattered = [[COMPS[int(i)] for i in torch.randperm(36, generator=g)[:3]] for _ in range(30)]
    assert outcome(cc.reuse_claim(model, Scores(scattered), "t", 0.1, 100, "main")) == "not testable"  # S_P empty


def result(type_matched, excess, p, circuit=Circuit(["a0.h1", "m1"])):
    return NS(circuit=circuit, controls=[0] * 5, circuit_drop=torch.tensor([0.5]), random_drop=0.5 - excess,
              p_value=p, excess=excess, type_matched=type_matched,
              control_kind="type-matched" if type_matched else "weaker than the paper's: auto")


def test_necessity(model):
    assert outcome(cc.necessity_claim(model, "t", result(True, 0.3, 0.001))) == "holds"
    assert outcome(cc.necessity_claim(model, "t", result(True, 0.3, 0.2))) == "fails"
    assert outcome(cc.necessity_claim(model, "t", result(False, 0.3, 0.001))) == "not testable"
    every = Circuit(["a0.h1", "m0", "m1", "m2", "m3"])
    assert outcome(cc.necessity_claim(model, "t", result(True, 0.3, 0.001, every))) == "not testable"
