"""studies.words: each qualitative word of the readings appears where its rule says, and only there."""
import doctest

import pytest

from tutorial_lib.studies import words
from tutorial_lib.studies.words import neuron_spread


def test_handful_needs_most_of_the_effect_within_ten_neurons():
    assert neuron_spread({1: 0.2, 5: 0.81, 10: 0.9}) == "handful"
    assert neuron_spread({1: 0.2, 10: 0.79, 20: 0.95}) != "handful"  # the learner's case: 74% at 10 is no handful
    assert neuron_spread({1: 0.11, 5: 0.57, 10: 0.74, 20: 0.86}) == "between"


def test_spread_needs_the_top_ten_under_half():
    assert neuron_spread({1: 0.05, 10: 0.3, 200: 0.9}) == "spread"
    assert neuron_spread({1: 0.05, 10: 0.5, 200: 0.9}) == "between"
    assert neuron_spread({1: 0.05, 5: 0.3}) == "between"  # the sweep never reached 10: nothing is called spread
    with pytest.raises(ValueError, match="empty"):
        neuron_spread({})


def test_module_doctests():
    assert doctest.testmod(words).failed == 0


def test_a_trend_word_needs_every_step_to_go_its_way():
    from tutorial_lib.studies.words import trend

    assert trend({1: 0.5, 2: 0.3, 10: 0.1}) == "falls"
    assert trend({1: 0.1, 2: 0.1, 10: 0.4}) == "rises"  # a flat step is allowed
    assert trend({1: 0.5, 2: 0.6, 10: 0.1}) == "neither"  # the ends fall, a step rises: the old end-to-end rule said "closer"
    assert trend({1: 0.5, 2: 0.5}) == "neither"
    assert trend({10: 0.1, 1: 0.5}) == "falls"  # read in increasing x, whatever the order given
    assert trend({1: 0.5, 2: 0.5 + 1e-12, 3: 0.2}, tol=1e-9) == "falls"
    with pytest.raises(ValueError, match="at least 2 points"):
        trend({1: 0.5})
