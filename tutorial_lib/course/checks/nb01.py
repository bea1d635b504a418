"""Checks for notebook 01 (greater-than): probability difference, a path-patching hook, the sufficiency test."""
from __future__ import annotations

from typing import Callable

import torch

from .common import ExerciseError, call_exercise, compare, passed


def check_prob_diff(prob_diff: Callable, task, logits) -> None:
    """``prob_diff(logits, task)`` must equal ``task.prob_diff(logits)`` per example: at END, the sum of
    p(year) over the 100 year tokens above YY minus the sum over those at or below YY (softmax over the
    full vocabulary)."""
    got = call_exercise(prob_diff, logits, task)
    if got is None:
        raise ExerciseError("prob_diff returned None: return a tensor with one value per prompt")
    expected = task.prob_diff(logits)
    got_t = torch.as_tensor(got).detach().float().cpu()
    if got_t.shape == expected.shape and not torch.allclose(got_t, expected.float().cpu(), atol=1e-4, rtol=1e-4):
        # name the usual slips before the generic mismatch message
        probs = task.final_logits(logits).float()[:, task.year_ids].softmax(-1)
        good = torch.arange(100)[None] > task.yy[:, None]
        if torch.allclose(got_t, ((probs * good).sum(1) - (probs * ~good).sum(1)).cpu(), atol=1e-4):
            raise ExerciseError("you took the softmax over the 100 year tokens only: take it over the whole "
                                "vocabulary, then pick the year tokens")
        geq = torch.arange(100)[None] >= task.yy[:, None]
        p = task.year_probs(logits).cpu()
        if torch.allclose(got_t, (p * geq).sum(1) - (p * ~geq).sum(1), atol=1e-4):
            raise ExerciseError("YY itself counts as a wrong answer: correct years are strictly greater than YY")
    compare(got_t, expected, "probability difference per example")
    passed("check_prob_diff", f"mean probability difference {expected.mean().item():.3f}")


def check_direct_path_patch(direct_path_patch: Callable, model, task, sender: str = "m1") -> None:
    """``direct_path_patch(model, task, sender)`` must return the per-example metric when only the
    direct path sender -> logits carries the corrupted value at END (as
    ``path_patch(..., senders=[sender], receivers="logits", sender_positions=task.end_pos)``)."""
    from ...core.hooks import count_hooks
    from ...methods.path_patching import path_patch

    got = call_exercise(direct_path_patch, model, task, sender)
    if count_hooks(model):
        raise ExerciseError("a hook is still attached after your function ran: use `with model.hooks(...)`")
    if got is None:
        raise ExerciseError("direct_path_patch returned None: return the metric per prompt")
    expected = path_patch(model, task.clean, task.corrupt, [sender], "logits", task.metric,
                          sender_positions=task.end_pos, logit_positions=task.end_pos)["patched"]
    expected = expected.detach().float().cpu()
    got_t = torch.as_tensor(got).detach().float().cpu()
    with torch.no_grad():
        clean_metric = task.metric(model(task.clean.to(model.cfg.device))).float().cpu()
    if got_t.shape == expected.shape and not torch.allclose(expected, clean_metric, atol=1e-4) \
            and torch.allclose(got_t, clean_metric, atol=1e-4):
        raise ExerciseError("your result equals the clean run's metric: the hook did not change anything "
                            "(is it attached to the right hook point, and does it return the patched tensor?)")
    compare(got_t, expected, f"metric per prompt with {sender} -> logits patched at END", atol=1e-3)
    passed("check_direct_path_patch", f"{sender} -> logits: mean metric {expected.float().mean().item():.3f}")


def check_sufficiency(sufficiency: Callable, model, task, components=("embed", "a0.h1", "m0", "m1")) -> None:
    """``sufficiency(model, task, components)`` must return the per-example metric when every head,
    MLP and the embedding *outside* ``components`` takes its output from the corrupted run (at every
    position) and the components themselves are recomputed on that mixed input, as
    ``circuit_sufficiency(model, task, Circuit(components))``."""
    from ...methods.circuit_eval import circuit_sufficiency
    from ...core.circuits import Circuit
    from ...core.hooks import count_hooks

    comps = list(components)
    got = call_exercise(sufficiency, model, task, comps)
    if count_hooks(model):
        raise ExerciseError("a hook is still attached after your function ran: use `with model.hooks(...)`")
    if got is None:
        raise ExerciseError("sufficiency returned None: return the metric per prompt")
    ev = circuit_sufficiency(model, task, Circuit(comps, name="exercise"))
    got_t = torch.as_tensor(got).detach().float().cpu()
    if got_t.shape == ev.per_example.shape and not torch.allclose(got_t, ev.per_example.float(), atol=1e-3):
        if torch.allclose(got_t, _necessity(model, task, comps).float().cpu(), atol=1e-3):
            raise ExerciseError("you corrupted the circuit and kept the rest clean (that is the necessity test): "
                                "sufficiency corrupts everything *outside* the circuit")
    compare(got_t, ev.per_example, f"metric per prompt with only {comps} clean", atol=1e-3)
    passed("check_sufficiency", f"only {', '.join(comps)} clean: {ev.value:.3f} "
                                f"({100 * ev.fraction_of_clean:.0f}% of the full model's {ev.clean:.3f})")


def _necessity(model, task, comps):
    from ...methods.circuit_eval import circuit_necessity
    from ...core.circuits import Circuit

    return circuit_necessity(model, task, Circuit(comps, name="exercise")).per_example
