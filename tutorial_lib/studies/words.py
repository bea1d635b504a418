"""The rules behind the readings' qualitative words (in the studies layer, where the readings are formatted): each word a reading prints is decided here, by a named rule that
a test runs on inputs where the word must and must not appear.

* :func:`neuron_spread` -- "a handful": at most :data:`HANDFUL` neurons bring back at least :data:`MOST` of an MLP's
  effect; "spread over many": the top :data:`HANDFUL` bring back less than :data:`HALF`; in between, neither word.
* :func:`trend` -- "rises" / "falls" ("grows", "gets closer as ... grows"): every step moves the same way (ties within
  ``tol`` allowed) and the ends differ by more than ``tol``; otherwise "neither", whatever the ends say.

>>> neuron_spread({1: 0.11, 5: 0.57, 10: 0.74, 20: 0.86})
'between'
>>> neuron_spread({1: 0.4, 5: 0.85, 10: 0.9})
'handful'
>>> trend({1: 0.9, 5: 0.4, 20: 0.1}), trend({1: 0.9, 5: 0.95, 20: 0.1})
('falls', 'neither')
"""
from __future__ import annotations

from typing import Mapping

HANDFUL = 10  # "a handful" of neurons: at most this many
MOST = 0.8  # "most of" an effect: at least this fraction
HALF = 0.5


def neuron_spread(recovered: Mapping[int, float]) -> str:
    """``"handful"``, ``"spread"`` or ``"between"`` for ``{k: fraction of the effect the top k neurons bring back}``
    (the sweep must include k = :data:`HANDFUL` to call anything spread)."""
    if not recovered:
        raise ValueError("recovered must map neuron counts to fractions, got an empty mapping")
    if any(r >= MOST for k, r in recovered.items() if k <= HANDFUL):
        return "handful"
    at = [r for k, r in recovered.items() if k <= HANDFUL]
    if HANDFUL in recovered and max(at) < HALF:
        return "spread"
    return "between"


def trend(values: Mapping[float, float], tol: float = 1e-9) -> str:
    """``"rises"``, ``"falls"`` or ``"neither"`` for ``{x: y}`` read in increasing ``x``: a trend word needs every step
    to go its way (a step within ``tol`` counts as flat) and the last value to differ from the first by more than
    ``tol``; a curve whose ends differ but that turns back somewhere is "neither"."""
    if len(values) < 2:
        raise ValueError(f"a trend needs at least 2 points, got {len(values)}")
    ys = [float(values[x]) for x in sorted(values)]
    steps = [b - a for a, b in zip(ys, ys[1:])]
    if all(d >= -tol for d in steps) and ys[-1] - ys[0] > tol:
        return "rises"
    if all(d <= tol for d in steps) and ys[0] - ys[-1] > tol:
        return "falls"
    return "neither"
