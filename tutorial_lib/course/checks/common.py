"""Shared machinery of the inline checks: compare a learner's answer with the library's, explain the difference.

Each check runs the learner's function on a small case, compares it with the library's answer, and
either prints a short success line or raises :class:`ExerciseError` saying plainly what is wrong (the
first mismatching value, a shape, a hook left attached). An unfinished exercise -- one that still
raises ``NotImplementedError`` -- gets a reminder instead of a traceback.
"""
from __future__ import annotations

from typing import Callable

import torch


class ExerciseError(AssertionError):
    """The learner's answer is not right yet; the message says what differs."""


def call_exercise(fn: Callable, *args, **kwargs):
    try:
        return fn(*args, **kwargs)
    except NotImplementedError as err:
        raise ExerciseError(f"{getattr(fn, '__name__', 'your function')} is not written yet: {err}") from None


def compare(got, expected, what: str, atol: float = 1e-4, rtol: float = 1e-4) -> None:
    """Raise ExerciseError unless ``got`` matches ``expected`` (shape and values)."""
    got_t = torch.as_tensor(got).detach().float().cpu() if not isinstance(got, torch.Tensor) else got.detach().float().cpu()
    exp_t = torch.as_tensor(expected).detach().float().cpu()
    if got_t.shape != exp_t.shape:
        raise ExerciseError(f"{what}: expected shape {tuple(exp_t.shape)}, got {tuple(got_t.shape)}")
    bad = ~torch.isclose(got_t, exp_t, atol=atol, rtol=rtol)
    if bad.any():
        idx = tuple(int(i) for i in bad.nonzero()[0])
        raise ExerciseError(
            f"{what}: {int(bad.sum())} of {bad.numel()} values differ; e.g. at index {idx} "
            f"you have {got_t[idx].item():.5g}, expected {exp_t[idx].item():.5g}"
        )


def passed(name: str, detail: str = "") -> None:
    print(f"✔ {name} passed" + (f" — {detail}" if detail else ""))


