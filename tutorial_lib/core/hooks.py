"""Hooks only through context managers, so an exception never leaves a hook behind.

TransformerLens' ``model.hooks(fwd_hooks=...)`` already removes its hooks on exit; this
module adds :func:`hooked` (the same, plus a check that nothing was left over) and
:func:`assert_no_hooks`, which tests and notebooks call after any experiment.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Callable, Iterator, Sequence


def count_hooks(model) -> int:
    """Number of forward/backward hooks currently attached anywhere in ``model``."""
    n = 0
    for mod in model.modules():
        n += len(getattr(mod, "_forward_hooks", {})) + len(getattr(mod, "_backward_hooks", {}))
        n += len(getattr(mod, "_forward_pre_hooks", {}))
        for attr in ("fwd_hooks", "bwd_hooks"):
            n += len(getattr(mod, attr, []) or [])
    return n


def assert_no_hooks(model) -> None:
    """Raise ``RuntimeError`` if any hook is still attached to ``model``."""
    n = count_hooks(model)
    if n:
        raise RuntimeError(f"{n} hook(s) are still attached to the model; call model.reset_hooks()")


@contextmanager
def hooked(
    model,
    fwd_hooks: Sequence[tuple[str | Callable, Callable]] = (),
    bwd_hooks: Sequence[tuple[str | Callable, Callable]] = (),
) -> Iterator:
    """Attach hooks for the duration of a ``with`` block; they are removed even on error.

    >>> with hooked(model, fwd_hooks=[("blocks.0.hook_mlp_out", zero_hook)]):  # doctest: +SKIP
    ...     logits = model(tokens)
    """
    with model.hooks(fwd_hooks=list(fwd_hooks), bwd_hooks=list(bwd_hooks), reset_hooks_end=True):
        yield model
