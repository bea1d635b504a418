import numpy as np
import pytest

from tutorial_lib.core.circuits import Circuit
from tutorial_lib.core.components import parse
from tutorial_lib.core.controls import (layer_matched_random, layer_upper_bound, paired_permutation_test,
                                   size_matched_random)


def test_size_matched_random_counts_and_disjointness(tiny_model):
    circ = Circuit(["a0.h1", "a1.h2", "m0"])
    for seed in range(5):
        ctrl = size_matched_random(tiny_model, circ, seed=seed)
        assert len(ctrl.heads) == 2 and len(ctrl.mlps) == 1
        assert not (ctrl.nodes & circ.nodes)
    assert size_matched_random(tiny_model, circ, 3) == size_matched_random(tiny_model, circ, 3)
    draws = {size_matched_random(tiny_model, circ, s).nodes for s in range(10)}
    assert len(draws) > 1
    with pytest.raises(ValueError, match="MLPs"):
        size_matched_random(tiny_model, Circuit(["m0", "m1", "a0.h0"]))


def test_size_matched_random_never_draws_the_excluded(tiny_model):
    """``exclude``: a component taken out of a circuit on purpose is never drawn; the size is the circuit's."""
    from tutorial_lib.core.components import all_heads, all_mlps

    circ = Circuit(["a0.h1", "m0"])
    banned = {"a0.h0", "a1.h0", *list(all_mlps(tiny_model))[1:]}
    seen = set()
    for seed in range(30):
        ctrl = size_matched_random(tiny_model, circ, seed=seed, match="auto", exclude=sorted(banned))
        assert len(ctrl.nodes) == 2 and not (ctrl.nodes & (banned | circ.nodes))
        seen |= ctrl.nodes
    assert seen == set(all_heads(tiny_model)) - banned - circ.nodes  # every other head is drawn sometime
    with pytest.raises(ValueError, match="MLPs"):  # no MLP left to match m0 by type
        size_matched_random(tiny_model, circ, exclude=sorted(banned))


def test_layer_matched_random_keeps_layers(tiny_model):
    circ = Circuit(["a0.h1", "a1.h2", "a1.h3"])
    for seed in range(8):
        ctrl = layer_matched_random(tiny_model, circ, seed)
        layers = sorted(parse(h).layer for h in ctrl.heads)
        assert layers == [0, 1, 1]
        assert not (ctrl.nodes & circ.nodes)
    assert len(layer_upper_bound(tiny_model, circ)) == 8
    with pytest.raises(ValueError, match="layer 0"):
        layer_matched_random(tiny_model, Circuit(["a0.h0", "a0.h1", "a0.h2"]))


def brute_force_p(a, b):
    d = np.asarray(a) - np.asarray(b)
    n = len(d)
    obs = d.mean()
    count = 0
    for mask in range(2 ** n):
        signs = np.array([1 if (mask >> i) & 1 else -1 for i in range(n)])
        count += (signs * d).mean() >= obs - 1e-12
    return count / 2 ** n


def test_permutation_test_matches_exact_enumeration():
    rng = np.random.default_rng(0)
    a, b = rng.normal(0.5, 1, 10), rng.normal(0, 1, 10)
    exact = brute_force_p(a, b)
    approx = paired_permutation_test(a, b, n_permutations=20000, seed=1)
    assert abs(exact - approx) < 0.01
    assert paired_permutation_test(a + 10, b, 2000) < 0.01
    with pytest.raises(ValueError):
        paired_permutation_test([1, 2], [1, 2, 3])


def test_module_doctests_and_the_bootstrap():
    import doctest

    import tutorial_lib.core.controls as controls

    assert doctest.testmod(controls).failed == 0
    lo, hi = controls.bootstrap_interval([0.0, 1.0] * 10, seed=1)
    assert lo < 0.5 < hi and controls.bootstrap_interval([0.0, 1.0] * 10, seed=1) == (lo, hi)  # seeded
    with pytest.raises(ValueError, match="at least 2"):
        controls.bootstrap_interval([1.0])
