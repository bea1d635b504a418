"""Checks for notebook 00 (hooks, logit difference, a patching hook)."""
from __future__ import annotations

from typing import Callable

import torch

from .common import ExerciseError, call_exercise, compare, passed

def check_zero_head_hook(zero_head_hook: Callable, model=None) -> None:
    """``zero_head_hook(z, hook, head)`` must return ``z`` with ``z[:, :, head, :]`` set to 0, others intact."""
    gen = torch.Generator().manual_seed(0)
    z = torch.randn(2, 5, 4, 3, generator=gen)
    for head in (0, 2):
        out = call_exercise(zero_head_hook, z.clone(), None, head)
        if out is None:
            raise ExerciseError("zero_head_hook returned None: return the (modified) activation")
        expected = z.clone()
        expected[:, :, head, :] = 0.0
        compare(out, expected, f"zero_head_hook with head={head}")
    if model is not None:
        from ...core.hooks import count_hooks

        tokens = torch.zeros(1, 4, dtype=torch.long)
        with model.hooks(fwd_hooks=[("blocks.0.attn.hook_z", lambda z, hook: zero_head_hook(z, hook, 0))]):
            model(tokens)
        if count_hooks(model):
            raise ExerciseError("a hook is still attached to the model after the run")
    passed("check_zero_head_hook", "only the chosen head's slice is zeroed")


def check_logit_diff(logit_diff: Callable, task=None, logits=None) -> None:
    """``logit_diff(logits, task)`` must match ``task.logit_diff(logits)`` per example."""
    if task is None or logits is None:
        raise ValueError("pass the task and the logits you computed: check_logit_diff(fn, task, logits)")
    got = call_exercise(logit_diff, logits, task)
    compare(got, task.logit_diff(logits), "logit difference per example")
    passed("check_logit_diff", f"mean logit difference {task.logit_diff(logits).mean().item():.3f}")


def check_patch_hook(patch_mlp_output: Callable, model, clean, corrupt, layer: int = 0) -> None:
    """``patch_mlp_output(model, clean, corrupt, layer)`` -> logits of the clean run with MLP ``layer``'s
    output replaced by its corrupted value (at every position)."""
    from ...core.hooks import count_hooks

    got = call_exercise(patch_mlp_output, model, clean, corrupt, layer)
    name = f"blocks.{layer}.hook_mlp_out"
    with torch.no_grad():
        _, cache = model.run_with_cache(corrupt, names_filter=name)
        with model.hooks(fwd_hooks=[(name, lambda act, hook: cache[name])]):
            expected = model(clean)
    if count_hooks(model):
        raise ExerciseError("a hook is still attached after your function ran: use `with model.hooks(...)`")
    compare(got, expected, f"logits with MLP {layer} patched", atol=1e-3)
    passed("check_patch_hook", f"MLP {layer} patched from the corrupted run")
