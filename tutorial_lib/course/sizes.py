"""How big a notebook's sweeps are: chosen by model and device, said out loud, one setting to shrink them.

A sweep that takes seconds on the zoo model takes minutes on GPT-2 on a laptop CPU. Each notebook asks
:func:`pick` for its sizes, giving the paper's (or the course's) size, a smaller one for a large model on a
CPU, and a tiny one for quick checks:

>>> n = pick("prompts for the position sweep", full=200, cpu=50, quick=8, model=None)  # doctest: +SKIP
using 200 prompts for the position sweep (full size)

``TUTORIAL_SIZE`` chooses: ``auto`` (default: ``cpu`` for a model of >= 50M parameters on a CPU, else
``full``), ``full``, ``cpu`` or ``quick`` (what the course's test run on a GPT-2-shaped model uses).
"""
from __future__ import annotations

import os

MODES = ("auto", "full", "cpu", "quick")
LARGE_MODEL_PARAMS = 50_000_000


def size_mode() -> str:
    mode = os.environ.get("TUTORIAL_SIZE", "auto") or "auto"
    if mode not in MODES:
        raise ValueError(f"TUTORIAL_SIZE={mode!r} is not one of {MODES}")
    return mode


def is_large_on_cpu(model) -> bool:
    """True for a model of at least 50M parameters whose weights sit on the CPU."""
    if model is None:
        return False
    params = list(model.parameters())
    return sum(p.numel() for p in params) >= LARGE_MODEL_PARAMS and params[0].device.type == "cpu"


def resolve(model=None) -> str:
    """The size class in force: 'full', 'cpu' or 'quick'."""
    mode = size_mode()
    if mode == "auto":
        return "cpu" if is_large_on_cpu(model) else "full"
    return mode


def pick(what: str, *, full: int, cpu: int, quick: int, model=None, verbose: bool = True) -> int:
    """The size to use for ``what``; prints which and why (unless ``verbose=False``)."""
    kind = resolve(model)
    n = {"full": full, "cpu": cpu, "quick": quick}[kind]
    if verbose:
        why = {"full": "full size", "quick": "TUTORIAL_SIZE=quick",
               "cpu": f"a large model on a CPU; {full} with a GPU or TUTORIAL_SIZE=full"}[kind]
        print(f"using {n} {what} ({why})")
    return n
