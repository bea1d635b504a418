"""Hooks only through context managers, so an exception never leaves a hook behind.

TransformerLens' ``model.hooks(fwd_hooks=...)`` already removes its hooks on exit; this
module adds :func:`hooked` (the same, plus a check on exit that no hook was left over, used by
:func:`tutorial_lib.core.circuits.run_with_ablation`) and
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

    Checks on the way out that the model carries no more hooks than it did on the way in: a raw PyTorch
    hook registered inside the block (``module.register_forward_hook``), which TransformerLens' reset does
    not see, raises ``RuntimeError`` naming how many were left (unless the block itself raised).
    """
    before = count_hooks(model)
    with model.hooks(fwd_hooks=list(fwd_hooks), bwd_hooks=list(bwd_hooks), reset_hooks_end=True):
        yield model
    left = count_hooks(model) - before
    if left > 0:
        raise RuntimeError(f"{left} hook(s) were left attached to the model by the 'with hooked(...)' block; "
                           "attach hooks through model.hooks(...) or hooked(...) only")
