"""studies.start: a set of components against random sets of heads, through a panel; the claim it feeds holds, fails
and is not testable."""
import pytest

from tutorial_lib.methods.power import beyond_noise, enough_draws
from tutorial_lib.studies.start import versus_random_heads
from tutorial_lib.zoo.families import tiny_family_model


class Panel:
    """A stand-in for AblationPanel: the metric is 10 minus each ablated component's cost, on 8 prompts."""

    def __init__(self, model, cost):
        self.model, self.cost, self.result = model, cost, None

    def set_ablated(self, comps):
        comps = list(comps)
        y = [10.0 - sum(self.cost(c) for c in comps) + 0.1 * (i % 3) for i in range(8)]
        self.result = {"metrics": {"logit diff": sum(y) / len(y)}, "y": y}
        return self.result


def outcome(v):
    power = [enough_draws(v.possible), beyond_noise(v.margins())]
    return "not testable" if not all(p.ok for p in power) else ("holds" if v.beats else "fails")


@pytest.fixture(scope="module")
def model():
    return tiny_family_model("gpt2", n_layers=2, n_heads=8, d_head=4, d_model=32)


def test_mlps_that_matter_beat_random_heads(model):
    v = versus_random_heads(Panel(model, lambda c: 4.0 if c.startswith("m") else 0.3), ["m0", "m1"])
    assert v.possible == 120 and v.n_distinct >= 15 and outcome(v) == "holds" and "more than each of 20 random sets" in v.test("every MLP")


def test_heads_that_matter_more_make_it_fail(model):
    v = versus_random_heads(Panel(model, lambda c: 0.5 if c.startswith("m") else 3.0), ["m0", "m1"])
    assert outcome(v) == "fails" and all(m < 0 for m in v.margins())


def test_few_distinct_draws_are_not_testable():
    small = tiny_family_model("gpt2", n_layers=1, n_heads=4, d_head=8, d_model=32)  # C(4, 1) = 4 sets of one head
    v = versus_random_heads(Panel(small, lambda c: 4.0 if c.startswith("m") else 0.3), ["m0"])
    assert v.possible == 4 and outcome(v) == "not testable"
