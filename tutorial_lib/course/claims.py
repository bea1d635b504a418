"""Scientific claims in the notebooks: three outcomes, each claim with the test it makes and a power check.

A notebook's claim ("the circuit is necessary beyond a random set of the same make-up") is a statement about a
*trained* model. It is only worth showing as a finding when it could have failed *on this run*. So every claim
goes through :func:`check`, which takes

* ``test`` -- what is compared, in words the learner can check against the numbers printed beside it;
* ``holds`` -- the test's result;
* ``power`` -- one or more :class:`Power` checks computed from the same run: the control has enough distinct draws
  (:func:`enough_draws`), the baseline lies away from its floor and ceiling (:func:`away_from_bounds`), a curve is
  not saturated (:func:`not_saturated`), the margin is beyond the run's own spread (:func:`beyond_noise`).

and reports one of three :class:`Outcome`\\ s:

* **holds** (``✔``) -- every power check passed and the test came out as the paper found;
* **fails** (``✗``) -- every power check passed and the test did not; raises :class:`ClaimNotMet` (never a bare
  ``AssertionError``, so a test run tells a claim not met from a crash) unless ``TUTORIAL_CLAIMS=report``;
* **not testable on this model** (``○``) -- a power check failed: the outcome could not have told a finding from an
  artefact, so it is shown with the reason and never as holding. It never raises, in any mode.

Every result is kept in :data:`RESULTS`; :func:`summary` is the table each notebook ends with.

>>> import os; os.environ.pop("TUTORIAL_CLAIMS", None) and None
>>> r = check("demo.holds", "0.9 recovered, needs >= 0.8", 0.9 >= 0.8, enough_draws(50, what="random sets"))
✔ demo.holds holds: 0.9 recovered, needs >= 0.8
>>> r = check("demo.room", "drop beyond a random set", True, enough_draws(1, what="layer-matched sets"))
○ demo.room not testable on this model: layer-matched sets: 1 distinct draw possible (needs >= 20)
>>> r.outcome is Outcome.NOT_TESTABLE
True

Set ``TUTORIAL_CLAIMS=report`` (the GPT-2-shaped test run does) to print a claim that fails and carry on;
:data:`NOT_MET` lists them. A claim's ``name`` (``"04.pp-above-random"``) is stable; the names in
``TUTORIAL_CLAIMS_REQUIRED`` (comma-separated) raise even in report mode when they fail, and print
``[required claim held: <name>]`` when they hold. :func:`claim` is the power-free form for statements that are
checks of the code's own bookkeeping, not findings (e.g. two tables agree).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from enum import Enum
from typing import Optional, Sequence, Union


MODES = ("raise", "report")
REQUIRED_ENV = "TUTORIAL_CLAIMS_REQUIRED"
NOT_MET: list[str] = []
from ..methods.power import (BOUND_ROOM, LEVEL, MIN_DRAWS, Power, away_from_bounds, beyond_noise,  # noqa: F401
                              beyond_noise_interval, enough_draws, not_saturated)


class ClaimNotMet(Exception):
    """A notebook's scientific claim does not hold on the loaded model (not a bug in the code)."""


class Outcome(str, Enum):
    HOLDS = "holds"
    FAILS = "fails"
    NOT_TESTABLE = "not testable on this model"


MARKS = {Outcome.HOLDS: "✔", Outcome.FAILS: "✗", Outcome.NOT_TESTABLE: "○"}


@dataclass
class ClaimResult:
    name: str
    test: str
    outcome: Outcome
    reasons: list = field(default_factory=list)  # the failed power checks' reasons (not testable)
    notebook: str = ""

    @property
    def held(self) -> bool:
        return self.outcome is Outcome.HOLDS

    def __bool__(self) -> bool:  # `if check(...)` reads "if it held"
        return self.held


RESULTS: list[ClaimResult] = []


# ----------------------------------------------------------------------------------------- modes
def claim_mode() -> str:
    mode = os.environ.get("TUTORIAL_CLAIMS", "raise") or "raise"
    if mode not in MODES:
        raise ValueError(f"TUTORIAL_CLAIMS={mode!r} is not one of {MODES}")
    return mode


def required_claims() -> set[str]:
    """The claim names in ``TUTORIAL_CLAIMS_REQUIRED`` (comma-separated): these raise even in report mode."""
    return {n.strip() for n in os.environ.get(REQUIRED_ENV, "").split(",") if n.strip()}


def _fail(text: str, message: str, required: bool) -> None:
    if claim_mode() == "report" and not required:
        NOT_MET.append(message)
        print(f"[{text}]")
        return
    raise ClaimNotMet(text)


# ----------------------------------------------------------------------------------------- claims
def check(name: str, test: str, holds, power: Union[Power, Sequence[Power]] = (), notebook: Optional[str] = None,
          quiet: bool = False) -> ClaimResult:
    """One claim: ``test`` in words, whether it ``holds``, and the ``power`` checks that say whether it could have
    failed. Prints one line (``quiet``: only when it is not testable or fails), records the result, and raises
    :class:`ClaimNotMet` when it fails (see the module docstring for the modes)."""
    if not name or not isinstance(name, str):
        raise ValueError(f"a claim needs a stable name such as '01.sufficiency', got {name!r}")
    checks = [power] if isinstance(power, Power) else list(power)
    if not checks:
        raise ValueError(f"claim {name!r} has no power check; a finding must show it could have failed (use claim() "
                         "only for the code's own bookkeeping)")
    weak = [p.reason for p in checks if not p.ok]
    nb = notebook if notebook is not None else name.split(".")[0]
    if weak:
        result = ClaimResult(name, test, Outcome.NOT_TESTABLE, weak, nb)
    else:
        result = ClaimResult(name, test, Outcome.HOLDS if bool(holds) else Outcome.FAILS, [], nb)
    RESULTS.append(result)
    mark = MARKS[result.outcome]
    if result.outcome is Outcome.NOT_TESTABLE:
        print(f"{mark} {name} not testable on this model: " + "; ".join(weak))
        return result
    required = name in required_claims()
    if result.outcome is Outcome.HOLDS:
        if required:
            print(f"[required claim held: {name}]")
        if not quiet:
            print(f"{mark} {name} holds: {test}")
        return result
    print(f"{mark} {name} fails: {test}")
    _fail(f"claim not met on this model: {name}: {test}", f"{name}: {test}", required)
    return result


def claim(condition, message: str, name: Optional[str] = None) -> bool:
    """A check of the notebook's own bookkeeping (two tables agree, a search returned something), not a finding:
    True when it holds; otherwise raises :class:`ClaimNotMet` (``TUTORIAL_CLAIMS=report``: prints and returns False,
    unless ``name`` is required). Findings go through :func:`check`, with a power check."""
    required = name is not None and name in required_claims()
    if bool(condition):
        if required:
            print(f"[required claim held: {name}]")
        elif name is not None and claim_mode() == "report":
            print(f"[claim held: {name}]")
        return True
    _fail(f"claim not met on this model: {message}", message, required)
    return False


def results(notebook: Optional[str] = None) -> list[ClaimResult]:
    """The claims checked so far in this process (only ``notebook``'s, e.g. ``"01"``); a claim checked twice (a
    cell run again) counts once, by its last result."""
    last: dict = {}
    for r in RESULTS:
        if notebook is None or r.notebook == notebook:
            last[r.name] = r
    return list(last.values())


def counts(notebook: Optional[str] = None) -> dict:
    """``{"holds": n, "fails": n, "not testable": n}`` over :func:`results`."""
    out = {"holds": 0, "fails": 0, "not testable": 0}
    for r in results(notebook):
        out["not testable" if r.outcome is Outcome.NOT_TESTABLE else r.outcome.value] += 1
    return out


def summary(notebook: Optional[str] = None, record_as: Optional[str] = None, model=None):
    """The table a notebook ends with: every claim, its outcome, and the test or the reason it is not testable.
    ``record_as`` (``"01"``): also record the counts for the README (:mod:`tutorial_lib.course.record`), with the
    name of ``model`` (the loaded model they were measured on, or a label such as ``"the answer keys"``)."""
    import pandas as pd

    rows = [{"claim": r.name, "outcome": f"{MARKS[r.outcome]} {r.outcome.value}",
             "test, or why not testable": "; ".join(r.reasons) if r.reasons else r.test} for r in results(notebook)]
    c = counts(notebook)
    print(f"{c['holds']} hold, {c['fails']} fail, {c['not testable']} not testable on this model")
    if record_as is not None:
        from .record import record_claims

        label = model if isinstance(model, str) or model is None else None
        if label is None:
            from ..studies.spectral_loaded import zoo_name

            label = zoo_name(model) or model.cfg.model_name
        record_claims(record_as, c, [(r.name, r.outcome.value) for r in results(notebook)], label)
    return pd.DataFrame(rows, columns=["claim", "outcome", "test, or why not testable"]).set_index("claim")
