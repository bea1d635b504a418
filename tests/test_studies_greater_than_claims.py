"""studies.greater_than_claims: each claim of notebook 01 holds, fails and is not testable (tiny models, constructed
sweeps)."""
from types import SimpleNamespace as NS

import pytest
import torch

from tutorial_lib.core.circuits import Circuit
from tutorial_lib.studies import greater_than_claims as gc
from tutorial_lib.tasks.base import TaskData
from tutorial_lib.zoo.families import tiny_family_model

torch.set_num_threads(1)


def outcome(spec):
    if not all(p.ok for p in spec.power):
        return "not testable"
    return "holds" if spec.holds else "fails"


def test_one_mlp_stands_out_holds_fails_and_saturates():
    sweep = lambda vals: NS(values=torch.tensor(vals), clean=1.0, corrupt=-1.0)  # noqa: E731  full range -2
    assert outcome(gc.one_mlp_claim(sweep([-1.9, -0.5, -0.4, -0.1]))) == "holds"
    assert outcome(gc.one_mlp_claim(sweep([-0.6, -0.6, -0.4, -0.1]))) == "fails"  # a tie: no MLP stands out
    assert outcome(gc.one_mlp_claim(sweep([-1.99, -1.98, -1.0, -0.1]))) == "not testable"  # two each cost it all


@pytest.fixture(scope="module")
def setup():
    model = tiny_family_model("gpt2", seed=3, scale=2.5, n_layers=2, n_heads=12, d_head=4, d_model=48, d_mlp=96)
    g = torch.Generator().manual_seed(0)
    clean = torch.randint(1, 61, (24, 8), generator=g)
    corrupt = clean.clone()
    corrupt[:, 3] = (clean[:, 3] + 7) % 61
    answers = torch.randint(0, 61, (24,), generator=g)
    task = TaskData("toy", [""] * 24, [""] * 24, clean, corrupt, torch.full((24,), 7), answers,
                    torch.randint(0, 61, (24, 2), generator=g))
    return model, task


def test_necessity_is_not_testable_without_type_matched_controls(setup):
    model, task = setup
    every_mlp = Circuit(["a1.h0", "m0", "m1"])  # both MLPs in the circuit: no MLP left for a type-matched control
    spec = gc.necessity_claim(model, task, every_mlp)
    assert outcome(spec) == "not testable" and "0 distinct draws" in spec.power[0].reason


def test_necessity_with_room_is_tested(setup):
    model, task = setup
    spec = gc.necessity_claim(model, task, Circuit(["a1.h0", "a1.h3", "m1"]))  # C(22, 2) * C(1, 1) = 231 draws
    assert spec.power[0].ok and "20 type-matched random sets" in spec.test


def test_sufficiency_and_beyond_strongest_read_the_run(setup):
    model, task = setup
    whole = Circuit(["embed"] + [f"a{l}.h{h}" for l in range(2) for h in range(12)] + ["m0", "m1"])
    spec = gc.sufficiency_claim(model, task, whole)  # the whole model keeps 100%; nothing is left to draw at random
    assert spec.holds and outcome(spec) == "not testable"
    one = gc.beyond_strongest_claim(model, task, Circuit(["embed", "m1"]))
    assert outcome(one) == "not testable"  # one component: nothing beyond it
