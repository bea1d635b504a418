"""Power checks: whether a claim *could have failed* on the run that tested it (:mod:`tutorial_lib.course.claims`
turns a claim with a failed power check into "not testable on this model").

Each check reads numbers the run computed and returns a :class:`Power`: ``ok`` and the reason, in words a learner
can check against the printed figures. The course's thresholds are module constants: a control needs
:data:`MIN_DRAWS` distinct draws, a baseline must sit :data:`BOUND_ROOM` of its range away from its floor and its
ceiling, and a margin's :data:`LEVEL` bootstrap interval must exclude 0.

>>> enough_draws(1, what="layer-matched sets")
Power(ok=False, reason='layer-matched sets: 1 distinct draw possible (needs >= 20)')
>>> away_from_bounds(0.0, 0.0, 1.0, what="random reuse").ok
False
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from ..core.controls import bootstrap_interval

MIN_DRAWS = 20  # a control needs at least this many distinct draws
BOUND_ROOM = 0.05  # a baseline must sit this fraction of its range away from its floor and its ceiling
LEVEL = 0.95  # bootstrap intervals


@dataclass(frozen=True)
class Power:
    """One power check: ``ok`` when the claim could have failed in this respect; ``reason`` says why not (or, when
    ok, what gave it room)."""

    ok: bool
    reason: str


def enough_draws(n_distinct: int, need: int = MIN_DRAWS, what: str = "the control") -> Power:
    """The control can be drawn in at least ``need`` distinct ways (from components of the same kind outside the
    circuit: :func:`tutorial_lib.core.controls.possible_draws`)."""
    n = int(n_distinct)
    word = "draw" if n == 1 else "draws"
    return Power(n >= need, f"{what}: {n:,} distinct {word} possible (needs >= {need})")


def away_from_bounds(value: float, floor: float, ceiling: float, room: float = BOUND_ROOM,
                     what: str = "the baseline") -> Power:
    """``value`` lies at least ``room`` of the range ``[floor, ceiling]`` away from both ends: a random baseline of
    exactly 0 (or 1) cannot be beaten meaningfully (or at all)."""
    if not ceiling > floor:
        raise ValueError(f"ceiling must exceed floor, got floor={floor!r}, ceiling={ceiling!r}")
    gap = room * (ceiling - floor)
    ok = floor + gap <= float(value) <= ceiling - gap
    return Power(ok, f"{what} is {float(value):.3g}, {'inside' if ok else 'not inside'} "
                     f"[{floor + gap:.3g}, {ceiling - gap:.3g}] (its range is [{floor:g}, {ceiling:g}])")


def not_saturated(values: Sequence[float], floor: float, ceiling: float, room: float = BOUND_ROOM,
                  what: str = "the curve") -> Power:
    """A curve (or a sweep) that moves: not every value sits within ``room`` of the same bound, and it is not flat."""
    v = [float(x) for x in values]
    span = ceiling - floor
    at_floor = all(x <= floor + room * span for x in v)
    at_ceiling = all(x >= ceiling - room * span for x in v)
    flat = max(v) - min(v) < room * span
    ok = not (at_floor or at_ceiling or flat)
    why = ("every value at its floor" if at_floor else "every value at its ceiling" if at_ceiling
           else f"range {min(v):.3g} to {max(v):.3g}, under {room:.0%} of [{floor:g}, {ceiling:g}]" if flat
           else f"values {min(v):.3g} to {max(v):.3g}")
    return Power(ok, f"{what}: {why}")


def beyond_noise(values: Sequence[float], what: str = "the difference", n_boot: int = 2000, seed: int = 0,
                 level: float = LEVEL) -> Power:
    """The bootstrap interval of the mean of ``values`` (per-example or per-seed differences) excludes 0: the margin
    is larger than the run's own spread."""
    lo, hi = bootstrap_interval(values, n_boot=n_boot, seed=seed, level=level)
    return beyond_noise_interval(lo, hi, what, level, f" ({len(list(values))} values)")


def beyond_noise_interval(low: float, high: float, what: str = "the difference", level: float = LEVEL,
                          note: str = "") -> Power:
    """An interval (``low``, ``high``) of a margin excludes 0 (see :func:`beyond_noise`)."""
    ok = low > 0 or high < 0
    return Power(ok, f"{what}: {level:.0%} interval [{low:+.3g}, {high:+.3g}] {'excludes' if ok else 'includes'} 0{note}")


@dataclass
class ClaimSpec:
    """A claim as a study computes it: a stable ``name`` (``"01.sufficiency"``), the ``test`` in words with the run's
    numbers, whether it ``holds``, and its ``power`` checks; :func:`tutorial_lib.course.claims.check` reports it."""

    name: str
    test: str
    holds: bool
    power: list = field(default_factory=list)

    def as_args(self) -> tuple:
        return self.name, self.test, self.holds, self.power
