"""Reading aids for the notebooks: "what you should see", answers to reveal, predictions to commit to.

* :func:`see` shows a short **What you should see** paragraph after a figure or a table. The notebook
  formats it from the run's own variables (never typed-in numbers), so it describes whatever model is
  loaded; ``paper=`` adds the paper's figures when the model is GPT-2 small, where they are comparable.
* :func:`answer` shows a question's answer folded away (a ``<details>`` block) for the learner to open
  after thinking about it.
* :func:`predicted` compares a prediction the learner wrote into a variable *before* a result with the
  result, and says how close it was. It never raises: a prediction is not an exercise, and ``None``
  (no prediction made) only gets a reminder.

Outside a notebook each prints plain text.

With ``TUTORIAL_READINGS_FILE`` set (the test command sets it per notebook run), every reading shown is also
appended to that file as one JSON line ``{"kind", "text"}``, so that a test can compare one notebook's readings
on two models (a reading with numbers that comes out the same on both was typed in, not read from the run).
"""
from __future__ import annotations

import html
import json
import math
import os
from typing import Optional, Sequence

from ..core.progress import in_kernel

__all__ = ["see", "answer", "predicted", "is_gpt2_small", "subject", "READINGS_ENV", "MAX_WORDS", "words"]

READINGS_ENV = "TUTORIAL_READINGS_FILE"
MAX_WORDS = 120  # the longest a "What you should see" reading may be


def words(text: str) -> int:
    """The number of words in ``text`` (whitespace-separated, Markdown marks counted as part of a word)."""
    return len(text.split())


SUBJECT: list = [None]  # what the readings shown now describe (None: the model the notebook loaded)


def subject(what: Optional[str]) -> None:
    """Say what the readings from here on describe: ``None`` (the default) for the model the notebook loaded, or the
    models a section builds or trains itself (``"the small models this notebook trains"``), whose readings are the
    same whatever model was loaded. The readings' log records it, so that the test comparing one notebook's
    readings on two loaded models leaves those out."""
    SUBJECT[0] = what


def _log(kind: str, text: str) -> None:
    path = os.environ.get(READINGS_ENV)
    if path:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps({"kind": kind, "text": text, "subject": SUBJECT[0]}) + "\n")


def is_gpt2_small(model) -> bool:
    """Whether ``model`` has GPT-2 small's shape (12 layers, d_model 768): where the paper's figures apply."""
    cfg = getattr(model, "cfg", None)
    return cfg is not None and cfg.n_layers == 12 and cfg.d_model == 768


LAST: list = [""]  # the last text shown (for tests; the functions return None so that a cell does not echo it)


def _show(markdown: str) -> None:
    LAST[0] = markdown
    if in_kernel():
        from IPython.display import Markdown, display
        display(Markdown(markdown))
    else:
        print(markdown)


def see(text: str, paper: Optional[str] = None, model=None) -> None:
    """Display "**What you should see.** ``text``" (Markdown). With ``paper`` and a GPT-2-small-shaped
    ``model``, add "**The paper (GPT-2 small):** ``paper``"."""
    _log("see", text.strip())
    out = f"**What you should see.** {text.strip()}"
    if paper and is_gpt2_small(model):
        out += f"\n\n**The paper (GPT-2 small):** {paper.strip()}"
    _show(out)


def answer(question: str, text: str) -> None:
    """Display ``question`` with ``text`` folded away until the learner opens it."""
    body = text.strip()
    _log("answer", body)
    _show(f"<details><summary><b>Answer:</b> {html.escape(question.strip())} (click to open)</summary>\n\n"
                 f"{body}\n\n</details>")


def predicted(guess, actual, what: str, options: Optional[Sequence] = None, tolerance: Optional[float] = None,
              why: str = "", interval: Optional[tuple] = None, unsure: Optional[set] = None) -> None:
    """Say how a prediction compares with the run (printed; also kept in ``LAST[0]``).

    ``guess``: the learner's prediction (``None``: not made). ``actual``: what the run found -- a value, or
    a set of values for a set-valued prediction (which components, which tasks). ``what``: the question in
    a few words. ``options``: the accepted answers, named when ``guess`` is not one of them. ``tolerance``
    (numbers): a guess within it counts as right; the message gives the distance either way. ``why``: one
    sentence on what the result means, shown after the verdict. ``interval`` (numbers): ``(low, high)``, the run's
    own 95% interval; a guess inside it counts as right (``tutorial_lib.studies.fair``). ``unsure`` (sets): the items
    the run cannot place (their interval straddles the test's threshold); a guess counts as right when it agrees
    with the run on every other item.
    """
    tail = f" {why.strip()}" if why else ""

    def say(msg: str) -> None:
        _log("predicted", msg + tail)
        LAST[0] = msg + tail
        print(msg + tail)

    shown = _fmt(actual)
    if guess is None:
        return say(f"✎ {what}: you did not write down a prediction (set the variable above before running this "
                   f"cell). The run says: {shown}.")
    if isinstance(actual, (set, frozenset, list, tuple)) and isinstance(guess, (set, frozenset, list, tuple)):
        g, a, u = set(guess), set(actual), set(unsure or ())
        if g == a:
            return say(f"✔ {what}: exactly as you predicted ({shown}).")
        if g - u == a - u:
            return say(f"✔ {what}: you predicted {_fmt(guess)}; the run says {shown}, and cannot place "
                       f"{_fmt(sorted(u & (g ^ a)))} either way (its interval straddles the threshold).")
        hit = len(g & a)
        parts = [f"{hit} of your {len(g)} right"] + ([f"missed {_fmt(sorted(a - g))}"] if a - g else []) + (
            [f"not found: {_fmt(sorted(g - a))}"] if g - a else [])
        return say(f"✗ {what}: you predicted {_fmt(guess)}; the run says {shown} ({'; '.join(parts)}).")
    if options is not None and guess not in options and not (isinstance(actual, (set, frozenset)) and guess in actual):
        return say(f"? {what}: your prediction {guess!r} is not one of {list(options)}; the run says {shown}.")
    if isinstance(actual, (set, frozenset)):
        ok = guess in actual
        tie = (f" ({_fmt(guess)} ties with {', '.join(_fmt(x) for x in sorted(set(actual) - {guess}, key=str))}: this run cannot tell "
               "them apart)" if ok and len(actual) > 1 else "")
        return say(f"{'✔' if ok else '✗'} {what}: you predicted {_fmt(guess)}; the run says {shown}{tie}.")
    if isinstance(guess, (int, float)) and isinstance(actual, (int, float)) and not isinstance(guess, bool) \
            and not isinstance(actual, bool):
        if not (math.isfinite(float(guess)) and math.isfinite(float(actual))):
            return say(f"? {what}: you predicted {_fmt(guess)}; the run says {shown}.")
        dist = abs(float(guess) - float(actual))
        if interval is not None:
            lo, hi = (float(x) for x in interval)
            ok = lo <= float(guess) <= hi
            return say(f"{'✔' if ok else '✗'} {what}: you predicted {_fmt(guess)}; the run says {shown} (95% interval "
                       f"{lo:.3g} to {hi:.3g}: {'inside' if ok else 'outside'}).")
        ok = tolerance is not None and dist <= tolerance
        return say(f"{'✔' if ok else '✗'} {what}: you predicted {_fmt(guess)}; the run says {shown} "
                   f"(off by {dist:.3g}{'' if tolerance is None else f', tolerance {tolerance:g}'}).")
    ok = guess == actual
    return say(f"{'✔' if ok else '✗'} {what}: you predicted {_fmt(guess)}; the run says {shown}.")


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.3g}"
    if isinstance(v, (set, frozenset, list, tuple)):
        items = sorted(v, key=str) if isinstance(v, (set, frozenset)) else list(v)
        return "{" + ", ".join(_fmt(x) for x in items) + "}" if items else "nothing"
    if isinstance(v, bool):
        return "yes" if v else "no"
    return str(v)
