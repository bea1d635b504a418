"""The rules behind the readings' qualitative words: each word a reading prints is decided here, by a named rule that
a test runs on inputs where the word must and must not appear.

* :func:`neuron_spread` -- "a handful": at most :data:`HANDFUL` neurons bring back at least :data:`MOST` of an MLP's
  effect; "spread over many": the top :data:`HANDFUL` bring back less than :data:`HALF`; in between, neither word.

>>> neuron_spread({1: 0.11, 5: 0.57, 10: 0.74, 20: 0.86})
'between'
>>> neuron_spread({1: 0.4, 5: 0.85, 10: 0.9})
'handful'
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
