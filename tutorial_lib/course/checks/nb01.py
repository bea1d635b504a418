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
    ``circuit_sufficiency(model, task, Circuit(components))``.

    Checked on ``components`` and on the same set with ``"embed"`` toggled (removed if it is there,
    added if not), so that a version which always keeps the embedding clean -- or always corrupts it --
    gives a wrong answer on one of the two. A wrong answer is named from both results together (with
    the embedding corrupted and nothing else clean, several slips give the same fully corrupted run)."""
    from ...core.hooks import count_hooks

    comps = list(components)
    toggled = [c for c in comps if c != "embed"] if "embed" in comps else ["embed", *comps]
    results = []  # (components, learner's metric, library's evaluation)
    for case in (comps, toggled):
        got = call_exercise(sufficiency, model, task, list(case))
        if count_hooks(model):
            raise ExerciseError("a hook is still attached after your function ran: use `with model.hooks(...)`")
        if got is None:
            raise ExerciseError("sufficiency returned None: return the metric per prompt")
        results.append((case, torch.as_tensor(got).detach().float().cpu(), _sufficiency(model, task, case)))

    def close(a, b):
        b = torch.as_tensor(b).detach().float().cpu()
        return a.shape == b.shape and torch.allclose(a, b, atol=1e-3, rtol=1e-4)

    wrong_ones = [case for case, got, ev in results if not close(got, ev.per_example)]
    if wrong_ones:
        slips = [
            (("you corrupted the circuit and kept the rest clean (that is the necessity test): "
              "sufficiency corrupts everything *outside* the circuit"),
             lambda c: _necessity(model, task, c)),
            (("the embedding was not corrupted: when 'embed' is not in components, hook_embed must take the "
              "corrupted run's value, like every other component outside the circuit"),
             lambda c: _sufficiency(model, task, c if "embed" in c else ["embed", *c]).per_example),
            (("you corrupted the embedding even though 'embed' is in components: the embedding is then part of "
              "the circuit and stays clean"),
             lambda c: _sufficiency(model, task, [x for x in c if x != "embed"]).per_example),
        ]
        for message, slip in slips:
            if all(close(got, slip(case)) for case, got, _ in results):
                raise ExerciseError(f"metric per prompt with only {wrong_ones[0]} clean: {message}")
        for case, got, ev in results:
            compare(got, ev.per_example, f"metric per prompt with only {case} clean", atol=1e-3, dims=("batch",),
                    wrong=[(message, lambda slip=slip, case=case: slip(case)) for message, slip in slips])
    ev = results[0][2]
    passed("check_sufficiency", f"only {', '.join(comps)} clean: {ev.value:.3f} "
                                f"({100 * ev.fraction_of_clean:.0f}% of the full model's {ev.clean:.3f})")


def _sufficiency(model, task, comps):
    from ...core.circuits import Circuit
    from ...methods.circuit_eval import circuit_sufficiency

    return circuit_sufficiency(model, task, Circuit(list(comps), name="exercise"))


def _necessity(model, task, comps):
    from ...core.circuits import Circuit
    from ...methods.circuit_eval import circuit_necessity

    return circuit_necessity(model, task, Circuit(list(comps), name="exercise")).per_example
