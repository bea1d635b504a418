"""Shared machinery of the inline checks: compare a learner's answer with the library's, explain the difference.

Each check runs the learner's function on a small case, compares it with the library's answer, and
either prints a short success line or raises :class:`ExerciseError` saying plainly what is wrong (the
first mismatching value, a shape, a hook left attached). An unfinished exercise -- one that still
raises ``NotImplementedError`` -- gets a reminder instead of a traceback.

:func:`compare` says *how* two tensors differ where that can be read off them (a missing or extra
entry along one dimension, the dimensions in another order, the sign flipped, a constant factor or
offset, differences confined to a few indices of one dimension), and a check can hand it the usual
wrong answers (``wrong=[(message, tensor or zero-argument function)]``): when the learner's result
matches one of them, that message is what the learner reads. :func:`compare_number` does the same for one
number (a p-value, a score), and :func:`as_number` turns a learner's return value into one, or says why not.
"""
from __future__ import annotations

from typing import Callable, Optional, Sequence

import torch


class ExerciseError(AssertionError):
    """The learner's answer is not right yet; the message says what differs."""


def call_exercise(fn: Callable, *args, **kwargs):
    try:
        return fn(*args, **kwargs)
    except NotImplementedError as err:
        raise ExerciseError(f"{getattr(fn, '__name__', 'your function')} is not written yet: {err}") from None


def _as_float_tensor(value) -> torch.Tensor:
    if isinstance(value, torch.Tensor):
        return value.detach().float().cpu()
    return torch.as_tensor(value).detach().float().cpu()


def _dim(d: int, dims: Optional[Sequence[str]], size: Optional[int] = None) -> str:
    extra = "" if size is None else f", of size {size}"
    if dims is not None and d < len(dims):
        return f"the {dims[d]} dimension (dim {d}{extra})"
    return f"dimension {d}" + (f" (of size {size})" if size is not None else "")


def describe_shape_difference(got_shape, expected_shape, dims: Optional[Sequence[str]] = None) -> str:
    """A plain description of how ``got_shape`` differs from ``expected_shape`` ('' when nothing specific)."""
    g, e = tuple(got_shape), tuple(expected_shape)
    n_e = 1
    for s in e:
        n_e *= s
    if len(g) == 0 and n_e > 1:
        return (f"you returned a single number; expected one value per entry of shape {e} "
                "(did you average or sum over a dimension?)")
    if len(g) == len(e) - 1:
        gone = [d for d in range(len(e)) if e[:d] + e[d + 1:] == g]
        if gone:
            return (f"{_dim(gone[-1], dims, e[gone[-1]])} is missing: did you index it "
                    "or reduce over it? Keep it")
    if len(g) == len(e) + 1:
        extra = [d for d in range(len(g)) if g[:d] + g[d + 1:] == e]
        if extra:
            d = extra[-1]
            return (f"you have an extra dimension {d} of size {g[d]}"
                    + (" (squeeze it or index it away)" if g[d] == 1 else ""))
    if len(g) == len(e):
        diff = [d for d in range(len(e)) if g[d] != e[d]]
        if len(diff) == 1:
            d = diff[0]
            k = g[d] - e[d]
            return (f"{_dim(d, dims)} has {g[d]} entries instead of {e[d]}: "
                    + (f"{k} extra" if k > 0 else f"{-k} missing") + (" entry" if abs(k) == 1 else " entries"))
        if len(diff) > 1 and sorted(g) == sorted(e):
            return "the dimensions are in a different order (a transpose or a permute too many or too few?)"
    if len(g) != len(e) and sorted(s for s in g if s != 1) == sorted(s for s in e if s != 1):
        return "the same entries but a different number of size-1 dimensions (squeeze or unsqueeze?)"
    return ""


def describe_value_difference(got: torch.Tensor, expected: torch.Tensor, atol: float = 1e-4, rtol: float = 1e-4,
                              dims: Optional[Sequence[str]] = None) -> str:
    """How two same-shape tensors differ, where a simple pattern explains it ('' when none does)."""
    got, expected = got.float(), expected.float()
    if not torch.isfinite(got).all():
        n = int((~torch.isfinite(got)).sum())
        return f"your result holds {n} non-finite value{'' if n == 1 else 's'} (NaN or inf)"

    def close(a):
        return bool(torch.isclose(a, expected, atol=atol, rtol=rtol).all())

    scale = float(expected.abs().max()) if expected.numel() else 0.0
    if scale > 10 * atol and not got.any():
        return "your result is all zeros"
    if scale > 10 * atol and close(-got):
        return "the sign is flipped: you have minus the expected values (a difference taken the wrong way round?)"
    if got.numel() >= 3 and scale > 10 * atol:
        e = expected.double().flatten()
        g = got.double().flatten()
        if float(e @ e) > 0:
            c = float(g @ e / (e @ e))
            if abs(c - 1) > 1e-3 and abs(c) > 1e-6 and close(got / c):
                return (f"every value is {c:.4g} times the expected one (a sum instead of a mean, "
                        "or a division or scaling too many or too few?)")
        off = float((g - e).mean())
        if abs(off) > atol and close(got - off):
            return f"every value is off by the same constant {off:+.4g}"
    bad = ~torch.isclose(got, expected, atol=atol, rtol=rtol)
    best = None  # (how small a share of the dimension it names, message)
    for d in range(bad.ndim):
        size = bad.shape[d]
        if size < 2:
            continue
        other = tuple(i for i in range(bad.ndim) if i != d)
        per_index = bad.any(dim=other) if other else bad
        differ = per_index.nonzero()[:, 0].tolist()
        match = (~per_index).nonzero()[:, 0].tolist()
        if not (differ and match) or min(len(differ), len(match)) > 3:
            continue
        if len(differ) <= len(match):
            cand = (len(differ) / size, (f"the differences all lie at index {', '.join(map(str, differ))} of "
                                         f"{_dim(d, dims, size)}; every other index matches"))
        else:
            cand = (len(match) / size, (f"only index {', '.join(map(str, match))} of {_dim(d, dims, size)} "
                                        "matches; every other index differs"))
        if best is None or cand[0] < best[0]:
            best = cand
    return best[1] if best else ""


def compare(got, expected, what: str, atol: float = 1e-4, rtol: float = 1e-4,
            wrong: Sequence = (), dims: Optional[Sequence[str]] = None) -> None:
    """Raise ExerciseError unless ``got`` matches ``expected`` (shape and values).

    The message says how they differ where that can be diagnosed (see :func:`describe_shape_difference`
    and :func:`describe_value_difference`). ``wrong`` lists the usual wrong answers as
    ``(message, tensor or zero-argument function returning one)``; they are computed only after a
    mismatch, and the first that ``got`` matches gives the message. ``dims`` names the dimensions
    (``("batch", "pos", "d_vocab")``) for the messages.
    """
    if got is None:
        raise ExerciseError(f"{what}: your function returned None; return the result")
    got_t = _as_float_tensor(got)
    exp_t = _as_float_tensor(expected)
    shape_ok = got_t.shape == exp_t.shape
    if shape_ok and bool(torch.isclose(got_t, exp_t, atol=atol, rtol=rtol).all()):
        return
    for message, alternative in wrong:
        alt = alternative() if callable(alternative) else alternative
        if alt is None:
            continue
        alt_t = _as_float_tensor(alt)
        if alt_t.shape == got_t.shape and not (alt_t.shape == exp_t.shape and bool(
                torch.isclose(alt_t, exp_t, atol=atol, rtol=rtol).all())) \
                and bool(torch.isclose(got_t, alt_t, atol=atol, rtol=rtol).all()):
            raise ExerciseError(f"{what}: {message}")
    if not shape_ok:
        why = describe_shape_difference(got_t.shape, exp_t.shape, dims)
        raise ExerciseError(f"{what}: expected shape {tuple(exp_t.shape)}, got {tuple(got_t.shape)}"
                            + (f" -- {why}" if why else ""))
    bad = ~torch.isclose(got_t, exp_t, atol=atol, rtol=rtol)
    idx = tuple(int(i) for i in bad.nonzero()[0])
    why = describe_value_difference(got_t, exp_t, atol, rtol, dims)
    raise ExerciseError(
        f"{what}: {int(bad.sum())} of {bad.numel()} values differ; e.g. at index {idx} "
        f"you have {got_t[idx].item():.5g}, expected {exp_t[idx].item():.5g}"
        + (f" -- {why}" if why else "")
    )


def as_number(value, what: str) -> float:
    """``value`` as a float: a Python number or a one-element tensor; anything else is an ExerciseError."""
    if value is None:
        raise ExerciseError(f"{what}: your function returned None; return one number")
    if isinstance(value, torch.Tensor):
        if value.numel() != 1:
            raise ExerciseError(f"{what}: expected one number, got a tensor of shape {tuple(value.shape)} "
                                "(sum it into one number, and return .item())")
        value = value.item()
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ExerciseError(f"{what}: expected a number, got {type(value).__name__}") from None


def _close_numbers(a: float, b: float, atol: float, rtol: float) -> bool:
    return abs(a - b) <= atol + rtol * abs(b)


def compare_number(got: float, expected: float, what: str, atol: float = 1e-6, rtol: float = 1e-6,
                   wrong: Sequence = (), hint: str = "", fmt: str = ".5g") -> None:
    """:func:`compare` for one number: raise ExerciseError unless ``got`` is within ``atol + rtol * |expected|``.

    ``wrong`` lists the usual wrong answers as ``(message, number or zero-argument function returning one)``,
    computed only after a mismatch; one that ``got`` matches (and that differs from ``expected``) gives the
    message. Otherwise ``hint`` (if any) follows the two numbers.
    """
    import math

    if math.isfinite(got) and _close_numbers(got, expected, atol, rtol):
        return
    head = f"{what}: you have {got:{fmt}}, expected {expected:{fmt}}"
    if math.isfinite(got):
        for message, alternative in wrong:
            alt = alternative() if callable(alternative) else alternative
            if alt is None:
                continue
            alt = float(alt)
            if not _close_numbers(alt, expected, atol, rtol) and _close_numbers(got, alt, atol, rtol):
                raise ExerciseError(f"{head} -- {message}")
    raise ExerciseError(head + (f" -- {hint}" if hint else ""))


def passed(name: str, detail: str = "") -> None:
    print(f"✔ {name} passed" + (f" — {detail}" if detail else ""))
