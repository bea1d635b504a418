"""One meaning of "a minority of the heads" (tutorial_lib.core.minority), used by every module that speaks of one.

The consumers are checked on the same counts as :func:`is_minority`, and again with the bound moved: a module
that keeps its own threshold (the flip table's old "fewer than half", say) disagrees with it somewhere.
"""
import pytest
import torch

from tutorial_lib.core import minority
from tutorial_lib.core.minority import MINORITY_FRACTION, is_minority
from tutorial_lib.methods.selectivity import PATTERNS
from tutorial_lib.studies.spectral import FLIP_CLAIMS, flip_table, planted_probe, threshold_label
from tutorial_lib.studies.spectral_loaded import Minority
from tutorial_lib.zoo.evaluate import missed_targets
from tutorial_lib.zoo.induction_models import make_model

torch.set_num_threads(1)


def test_is_minority_is_at_least_one_and_at_most_a_quarter():
    assert MINORITY_FRACTION == 0.25
    assert [is_minority(k, 32) for k in (0, 1, 8, 9, 16, 32)] == [False, True, True, False, False, False]
    assert [is_minority(k, 8) for k in (1, 2, 3, 4)] == [True, True, False, False]
    with pytest.raises(ValueError, match="n_selected"):
        is_minority(9, 8)


def _loaded(n_selected, n_total=8):
    heads = [f"a0.h{i}" for i in range(n_selected)]
    return Minority(sel={}, classes={}, heads=heads, tested=[], n_heads=n_total, result=None)


def _zoo_missed(n_selected, n_total=8):
    heads = [f"a0.h{i}" for i in range(n_selected)]
    metrics = {"induction_heads": heads, "induction_head_fraction": round(n_selected / n_total, 6)}
    return bool(set(missed_targets(metrics, {}, induction_minority=True)))


@pytest.fixture(scope="module")
def flip_model():
    return make_model("small", 0), planted_probe(16, 48, seed=1)


def _flip_minority(model, probe, n_selected):
    """The flip table's minority verdict when exactly ``n_selected`` of the 8 heads pass 50x."""
    ind = torch.zeros(2, 4)
    ind.view(-1)[:n_selected] = 100.0
    sel = {p: torch.zeros(2, 4) for p in PATTERNS}
    sel["induction"] = ind
    flips = flip_table(model, probe, ((50.0, 30.0),), modes=("zero",), metrics=("loss",), sel=sel,
                             n_control_seeds=1, n_permutations=20)
    return flips.verdict(FLIP_CLAIMS[0], "", "", threshold_label(50.0, 30.0)) == "pass"


@pytest.mark.parametrize("fraction", [0.25, 0.5, 0.125])
def test_every_consumer_follows_the_one_definition(flip_model, monkeypatch, fraction):
    """With the bound at a quarter (the course's), then moved to a half and an eighth: the zoo's target, the loaded
    model's ``Minority`` and the flip table's claim all agree with ``is_minority`` on 0-8 of 8 heads."""
    monkeypatch.setattr(minority, "MINORITY_FRACTION", fraction)
    model, probe = flip_model
    for k in range(0, 9):
        want = is_minority(k, 8)
        assert _loaded(k).minority == want, ("studies.spectral_loaded", k)
        assert (not _zoo_missed(k)) == want, ("zoo.evaluate", k)
        if k in (1, 2, 3, 4, 5):  # around every bound tried; each call runs a few ablations
            assert _flip_minority(model, probe, k) == want, ("studies.spectral flip table", k)
