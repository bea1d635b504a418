"""Scientific claims in the notebooks: checked, and told apart from crashes.

A notebook's claims ("the circuit recovers >= 80% of the probability difference") are statements about a
*trained* model: they hold on the zoo model and on GPT-2, and need not hold on a model with random weights.
Every claim goes through :func:`claim`, which raises :class:`ClaimNotMet` -- never a bare
``AssertionError`` -- with a plain message, so a learner reads "claim not met on this model: ..." and a
test run can tell a claim not met from a crash.

>>> claim(0.9 >= 0.8, "the circuit recovers 90% of the full model (needs >= 80%)")
True
>>> claim(False, "the circuit recovers 10% of the full model (needs >= 80%)")
Traceback (most recent call last):
...
tutorial_lib.course.claims.ClaimNotMet: claim not met on this model: the circuit recovers 10% of the full model (needs >= 80%)

Set ``TUTORIAL_CLAIMS=report`` (the GPT-2-shaped test run does) to print a claim that is not met and carry
on; :data:`NOT_MET` lists them. A claim may carry a stable ``name`` (``"04.pp-above-random"``); the names in
``TUTORIAL_CLAIMS_REQUIRED`` (comma-separated) raise even in report mode, and print
``[required claim held: <name>]`` when they hold, so a run can require the claims known to hold on its model
and see that each one was checked.
"""
from __future__ import annotations

import os

MODES = ("raise", "report")
REQUIRED_ENV = "TUTORIAL_CLAIMS_REQUIRED"
NOT_MET: list[str] = []


class ClaimNotMet(Exception):
    """A notebook's scientific claim does not hold on the loaded model (not a bug in the code)."""


def claim_mode() -> str:
    mode = os.environ.get("TUTORIAL_CLAIMS", "raise") or "raise"
    if mode not in MODES:
        raise ValueError(f"TUTORIAL_CLAIMS={mode!r} is not one of {MODES}")
    return mode


def required_claims() -> set[str]:
    """The claim names in ``TUTORIAL_CLAIMS_REQUIRED`` (comma-separated): these raise even in report mode."""
    return {n.strip() for n in os.environ.get(REQUIRED_ENV, "").split(",") if n.strip()}


def claim(condition, message: str, name: str | None = None) -> bool:
    """Check one claim. Returns True when it holds; otherwise raises :class:`ClaimNotMet` (or, with
    ``TUTORIAL_CLAIMS=report``, prints the message, records it in :data:`NOT_MET` and returns False -- unless
    ``name`` is one of :func:`required_claims`, which always raise)."""
    required = name is not None and name in required_claims()
    if bool(condition):
        if required:
            print(f"[required claim held: {name}]")
        elif name is not None and claim_mode() == "report":  # which named claims a report run saw hold
            print(f"[claim held: {name}]")
        return True
    text = f"claim not met on this model: {message}"
    if claim_mode() == "report" and not required:
        NOT_MET.append(message)
        print(f"[{text}]")
        return False
    raise ClaimNotMet(text)
