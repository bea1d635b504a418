"""Checks for notebook 04 (CPR and CMD from a curve, one EAP-IG step, the faithfulness of one circuit)."""
from __future__ import annotations

import math
from typing import Callable, Optional

import torch

from .common import ExerciseError, as_number, call_exercise, passed


def _pair(value, what: str) -> tuple[float, float]:
    if not (isinstance(value, (tuple, list)) and len(value) == 2):
        raise ExerciseError(f"{what}: return a pair (cpr, cmd), got {type(value).__name__}")
    out = []
    for v, name in zip(value, ("cpr", "cmd")):
        if isinstance(v, torch.Tensor):
            v = v.item()
        try:
            out.append(float(v))
        except (TypeError, ValueError):
            raise ExerciseError(f"{what}: {name} must be a number, got {type(v).__name__}") from None
    return out[0], out[1]


def _trap(x, y) -> float:
    return sum((x[i + 1] - x[i]) * (y[i + 1] + y[i]) / 2 for i in range(len(x) - 1))


def check_cpr_cmd(cpr_and_cmd: Callable) -> None:
    """``cpr_and_cmd(fractions, f) -> (cpr, cmd)``: trapezoid areas under f and under |1 - f| over the
    fractions (uneven steps, an f above 1, an f below 0)."""
    cases = [
        ([0.0, 0.1, 0.2, 0.5, 1.0], [0.0, 0.4, 0.9, 1.0, 1.0]),
        ([0.0, 0.001, 0.01, 0.1, 0.3, 1.0], [0.0, -0.2, 0.3, 1.3, 1.1, 1.0]),
        ([0.0, 0.5, 1.0], [0.0, 1.0, 1.0]),
    ]
    for x, f in cases:
        got = _pair(call_exercise(cpr_and_cmd, list(x), list(f)), "cpr_and_cmd")
        want = (_trap(x, f), _trap(x, [abs(1 - v) for v in f]))
        if all(abs(g - w) < 1e-6 for g, w in zip(got, want)):
            continue
        hints = {
            "the mean of f, not an area: multiply each segment by its width x[i+1] - x[i]":
                (sum(f) / len(f), sum(abs(1 - v) for v in f) / len(f)),
            "left rectangles (f[i] times the width): the trapezoid rule averages both ends of a segment":
                (sum((x[i + 1] - x[i]) * f[i] for i in range(len(x) - 1)),
                 sum((x[i + 1] - x[i]) * abs(1 - f[i]) for i in range(len(x) - 1))),
            "CMD is the area under |1 - f|, not 1 - CPR (they differ where f goes above 1 or below 0)":
                (want[0], 1 - want[0]),
            "CMD is the area under |1 - f|: the absolute value is missing":
                (want[0], _trap(x, [1 - v for v in f])),
            "cpr and cmd are swapped": (want[1], want[0]),
        }
        for message, alt in hints.items():
            if all(abs(g - a) < 1e-6 for g, a in zip(got, alt)) and any(abs(a - w) > 1e-6 for a, w in zip(alt, want)):
                raise ExerciseError(f"cpr_and_cmd: {message}")
        raise ExerciseError(f"cpr_and_cmd on x = {x}, f = {f}: you have (cpr, cmd) = ({got[0]:.4f}, {got[1]:.4f}), "
                            f"expected ({want[0]:.4f}, {want[1]:.4f})")
    passed("check_cpr_cmd", f"{len(cases)} curves, including f above 1 and below 0")


def _swapped(task):
    """``task`` with its clean and corrupted prompts exchanged (EAP-IG on it walks from clean to corrupted)."""
    import copy

    out = copy.copy(task)
    out.clean, out.corrupt = task.corrupt, task.clean
    return out


def check_ig_step(edge_score_at_alpha: Callable, model, task, sender: Optional[str] = None, steps: int = 3,
                  examples=(0, 2)) -> None:
    """``edge_score_at_alpha(model, task, sender, example, alpha)``: the EAP score of ``sender -> logits`` with
    the gradient taken at the input ``corrupt + alpha (clean - corrupt)``. Averaged over alpha = 1/m .. 1 it must
    equal the library's EAP-IG score with ``ig_steps = m``; at alpha = 1 it is plain EAP.

    Checked on the first 4 prompts, at two (sender, example) pairs the check picks from the library's scores:
    the largest EAP-IG score into the logits, and the one EAP-IG moves furthest from plain EAP (so that a
    version without interpolation, or one that walks from clean to corrupted, gives other numbers); plus
    ``sender`` at ``examples`` if given. Each must match to 0.1%, plus 0.01% of the largest score (so that a
    sender whose scores are all tiny cannot pass with any small number)."""
    from ...methods.attribution import eap_scores

    sub = task.subset(range(min(4, len(task))))
    ig = eap_scores(model, sub, metric="metric", logits_at="all", progress=False, ig_steps=steps)
    eap = eap_scores(model, sub, metric="metric", logits_at="all", progress=False)
    names = ig.graph.senders
    to_logits, plain_to_logits = ig.edges[:, :, -1].double(), eap.edges[:, :, -1].double()
    scale = float(to_logits[:, 1:].abs().max())  # heads and MLPs (the embedding is not asked about)

    def argmax_pair(values, other_than=None):
        values = values.abs().clone()
        values[:, 0] = -1.0
        if other_than is not None:
            values[:, names.index(other_than)] = -1.0
        ex, s = divmod(int(values.argmax()), values.shape[1])
        return names[s], ex

    strongest = argmax_pair(to_logits)
    pairs = [strongest]
    if len(names) > 2:  # and another sender's edge, where EAP-IG moves furthest from EAP
        pairs.append(argmax_pair(to_logits - plain_to_logits, other_than=strongest[0]))
    if sender is not None:
        pairs += [(sender, ex % len(sub)) for ex in examples if (sender, ex % len(sub)) not in pairs]
    lazy: dict = {}

    def other(name, compute):  # a usual slip's EAP-IG scores into the logits, computed once, when needed
        if name not in lazy:
            lazy[name] = compute().edges[:, :, -1].double()
        return lazy[name]

    for name, ex in pairs:
        s = names.index(name)
        vals = []
        for k in range(1, steps + 1):
            v = call_exercise(edge_score_at_alpha, model, sub, name, ex, k / steps)
            vals.append(as_number(v, f"edge_score_at_alpha(model, task, {name!r}, {ex}, alpha={k}/{steps})"))
        model.zero_grad(set_to_none=True)
        got, want = sum(vals) / steps, float(to_logits[ex, s])
        plain = float(plain_to_logits[ex, s])
        tol = 1e-3 * abs(want) + 1e-4 * scale + 1e-9

        def near(a, b, tol=tol):
            return abs(a - b) <= tol

        if math.isfinite(got) and near(got, want):
            continue
        what = f"{name} -> logits, example {ex}"
        if all(abs(v) <= 1e-9 + 1e-6 * scale for v in vals):
            raise ExerciseError(f"{what}: your score is 0 at every alpha, the library's EAP-IG score is {want:.5g}: "
                                "return the sum over positions and d_model of (the sender's corrupted minus clean "
                                "output) x (the gradient of the metric at the final residual stream), as one number")
        if near(vals[-1], plain) and all(near(v, vals[-1]) for v in vals):
            raise ExerciseError(f"{what}: every alpha gives the same score, plain EAP's ({plain:.5g}): the input is "
                                "not being interpolated (replace the block-0 input, blocks.0.hook_resid_pre, by "
                                "corrupt + alpha * (clean - corrupt))")
        if near(got, -want):
            raise ExerciseError(f"{what}: your mean over alpha is {got:.5g}, the library's EAP-IG score {want:.5g}: "
                                "the sign is flipped: the sender difference is corrupted output minus clean output")
        backwards = -float(other("backwards", lambda: eap_scores(model, _swapped(sub), metric="metric",
                                                                  logits_at="all", progress=False,
                                                                  ig_steps=steps))[ex, s])
        if near(got, backwards):
            raise ExerciseError(f"{what}: your mean over alpha is {got:.5g}, the library's EAP-IG score {want:.5g}: "
                                "you walked from the clean input towards the corrupted one (clean + alpha * (corrupt "
                                "- clean)); the path starts at the corrupted input and reaches the clean one at "
                                "alpha = 1: corrupt + alpha * (clean - corrupt)")
        if hasattr(sub, "answers") and getattr(sub, "wrong", None) is not None:
            by_logit_diff = float(other("logit_diff", lambda: eap_scores(model, sub, metric="logit_diff",
                                                                         logits_at="all", progress=False,
                                                                         ig_steps=steps))[ex, s])
            if near(got, by_logit_diff) and not near(by_logit_diff, want):
                raise ExerciseError(f"{what}: your mean over alpha is {got:.5g}, the library's EAP-IG score "
                                    f"{want:.5g}: you took the gradient of the logit difference; take it of the "
                                    "task's own metric, task.subset([example]).metric(logits)")
        raise ExerciseError(f"{what}: the mean over alpha = 1/{steps}..1 of your scores is {got:.5g}, the "
                            f"library's EAP-IG score is {want:.5g} (plain EAP: {plain:.5g}; your alpha = 1 "
                            f"score: {vals[-1]:.5g})")
    passed("check_ig_step", f"{len(pairs)} edge{'s' if len(pairs) > 1 else ''} x {steps} steps match the library's EAP-IG: "
                            + ", ".join(f"{n} -> logits (example {ex})" for n, ex in pairs))


def check_faithfulness(faithfulness_of: Callable, model, task, circuits) -> None:
    """``faithfulness_of(model, task, circuit) -> float``: f = (m(C) - m(∅)) / (m(M) - m(∅)) with the library's
    edge patching, on a few given circuits (edge masks)."""
    from ...methods import faithfulness as fa
    from ...methods.attribution import EAPGraph

    graph = EAPGraph.from_model(model)
    full = fa.full_circuit(graph)
    m = fa.patched_metric(model, task, torch.stack([full, torch.zeros_like(full), *circuits])).tolist()
    m_full, m_empty, rest = m[0], m[1], m[2:]
    for c, m_c in zip(circuits, rest):
        v = call_exercise(faithfulness_of, model, task, c)
        got = float(v.item() if isinstance(v, torch.Tensor) else v)
        want = (m_c - m_empty) / (m_full - m_empty)
        if abs(got - want) <= 1e-4 + 1e-4 * abs(want):
            continue
        hints = {
            "that is m(C) / m(M): subtract the empty circuit's metric m(∅) from both": m_c / m_full,
            "that is 1 - f: the numerator is m(C) - m(∅), not m(M) - m(C)": 1 - want,
            "that is m(C) itself: divide (m(C) - m(∅)) by (m(M) - m(∅))": m_c,
        }
        for message, alt in hints.items():
            if abs(got - alt) <= 1e-4 + 1e-4 * abs(alt):
                raise ExerciseError(f"faithfulness_of: {message}")
        raise ExerciseError(f"faithfulness_of: you have {got:.5g}, expected {want:.5g} "
                            f"(m(C) = {m_c:.4g}, m(M) = {m_full:.4g}, m(∅) = {m_empty:.4g})")
    passed("check_faithfulness", f"{len(circuits)} circuits")
