"""Checks for notebook 04 (CPR and CMD from a curve, one EAP-IG step, the faithfulness of one circuit)."""
from __future__ import annotations

import math
from typing import Callable

import torch

from .common import ExerciseError, call_exercise, passed


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


def check_ig_step(edge_score_at_alpha: Callable, model, task, sender: str = "a0.h0", steps: int = 3,
                  examples=(0, 2)) -> None:
    """``edge_score_at_alpha(model, task, sender, example, alpha)``: the EAP score of ``sender -> logits`` with
    the gradient taken at the input ``corrupt + alpha (clean - corrupt)``. Averaged over alpha = 1/m .. 1 it must
    equal the library's EAP-IG score with ``ig_steps = m``; at alpha = 1 it is plain EAP."""
    from ...methods.attribution import eap_scores

    sub = task.subset(range(min(4, len(task))))
    ig = eap_scores(model, sub, metric="metric", logits_at="all", progress=False, ig_steps=steps)
    eap = eap_scores(model, sub, metric="metric", logits_at="all", progress=False)
    s = ig.graph.senders.index(sender)
    for ex in examples:
        ex %= len(sub)
        vals = []
        for k in range(1, steps + 1):
            v = call_exercise(edge_score_at_alpha, model, sub, sender, ex, k / steps)
            vals.append(float(v.item() if isinstance(v, torch.Tensor) else v))
        model.zero_grad(set_to_none=True)
        got, want = sum(vals) / steps, float(ig.edges[ex, s, -1])
        plain = float(eap.edges[ex, s, -1])
        tol = 1e-3 + 1e-3 * abs(want)
        if not math.isfinite(got) or abs(got - want) > tol:
            if abs(vals[-1] - plain) <= tol and len({round(v, 6) for v in vals}) == 1:
                raise ExerciseError("every alpha gives the same score: the input is not being interpolated (replace the "
                                    "block-0 input, blocks.0.hook_resid_pre, by corrupt + alpha * (clean - corrupt))")
            if abs(got + want) <= tol:
                raise ExerciseError("the sign is flipped: the sender difference is corrupted output minus clean output")
            raise ExerciseError(f"example {ex}: the mean over alpha = 1/{steps}..1 of your scores is {got:.5g}, the "
                                f"library's EAP-IG score is {want:.5g} (plain EAP: {plain:.5g}; your alpha = 1 "
                                f"score: {vals[-1]:.5g})")
    passed("check_ig_step", f"{len(examples)} examples x {steps} steps match the library's EAP-IG")


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
