"""methods.power: whether a claim could have failed on its run (draws, bounds, saturation, noise)."""
import doctest

import pytest

from tutorial_lib.methods import power
from tutorial_lib.methods.power import away_from_bounds, beyond_noise, beyond_noise_interval, enough_draws, not_saturated


def test_the_power_checks_read_their_numbers():
    assert enough_draws(20).ok and not enough_draws(19).ok
    assert not away_from_bounds(1.0, 0.0, 1.0).ok and not away_from_bounds(0.97, 0.0, 1.0).ok and away_from_bounds(0.9, 0, 1).ok
    assert not_saturated([0.0, 0.0, 0.8], 0.0, 0.8).ok  # moves from floor to ceiling: has room
    assert not not_saturated([0.0, 0.01, 0.02], 0.0, 1.0).ok  # every value at the floor
    with pytest.raises(ValueError, match="ceiling"):
        away_from_bounds(0.5, 1.0, 1.0)


def test_noise_reads_the_bootstrap_interval():
    assert beyond_noise([0.5, 0.6, 0.4, 0.7, 0.55, 0.45]).ok
    assert not beyond_noise([0.5, -0.6, 0.4, -0.7, 0.1, -0.2]).ok
    assert beyond_noise([-0.5, -0.6, -0.4, -0.7]).ok  # clearly below 0: a real difference, the other way
    assert not beyond_noise_interval(-0.01, 0.3).ok and "includes 0" in beyond_noise_interval(-0.01, 0.3).reason


def test_module_doctests():
    assert doctest.testmod(power).failed == 0
