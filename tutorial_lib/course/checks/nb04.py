"""Checks for notebook 04 (CPR and CMD from a curve, one EAP-IG step, the overlap of two circuits against chance, a
random circuit of a given size; the faithfulness of a circuit by edge patching is checked in :mod:`.nb04_edges`)."""
from __future__ import annotations

import math
from typing import Callable, Optional

import torch

from .common import ExerciseError, as_number, call_exercise, passed
from .nb04_edges import check_faithfulness  # noqa: F401  (exported with the other checks of notebook 04)


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
    results = [(x, f, _pair(call_exercise(cpr_and_cmd, list(x), list(f)), "cpr_and_cmd")) for x, f in cases]

    def wants(x, f):
        return _trap(x, f), _trap(x, [abs(1 - v) for v in f])

    def slips(x, f):
        want = wants(x, f)
        return {
            "the mean of f, not an area: multiply each segment by its width x[i+1] - x[i]":
                (sum(f) / len(f), sum(abs(1 - v) for v in f) / len(f)),
            "left rectangles (f[i] times the width): the trapezoid rule averages both ends of a segment":
                (sum((x[i + 1] - x[i]) * f[i] for i in range(len(x) - 1)),
                 sum((x[i + 1] - x[i]) * abs(1 - f[i]) for i in range(len(x) - 1))),
            "CMD is the area under |1 - f|: you took the absolute value of the area under 1 - f, |∫(1 - f)|, so the "
            "stretches where f goes above 1 cancel those below; take |1 - f| at each point, then the area":
                (want[0], abs(_trap(x, [1 - v for v in f]))),
            "CMD is the area under |1 - f|: the absolute value is missing, and the area under 1 - f is just 1 - CPR "
            "(the two differ where f goes above 1 or below 0)":
                (want[0], _trap(x, [1 - v for v in f])),
            "cpr and cmd are swapped": (want[1], want[0]),
        }

    def close(a, b):
        return all(abs(g - w) < 1e-6 for g, w in zip(a, b))

    wrong = [(x, f, got) for x, f, got in results if not close(got, wants(x, f))]
    if wrong:
        # a slip is named only if it gives the learner's numbers on every curve (on a curve that stays below 1, the
        # area of |1 - f| and |the area of 1 - f| agree: another curve tells them apart)
        for message in slips(*cases[0]):
            if all(close(got, slips(x, f)[message]) for x, f, got in results):
                raise ExerciseError(f"cpr_and_cmd: {message}")
        x, f, got = wrong[0]
        want = wants(x, f)
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


def _triple(value, what: str) -> tuple[float, float, float]:
    if not (isinstance(value, (tuple, list)) and len(value) == 3):
        raise ExerciseError(f"{what}: return a triple (jaccard, chance, p), got {type(value).__name__}")
    out = []
    for v, name in zip(value, ("jaccard", "chance", "p")):
        out.append(as_number(v, f"{what}: {name}"))
    return out[0], out[1], out[2]


def check_overlap_against_chance(overlap_against_chance: Callable, cases=()) -> None:
    """``overlap_against_chance(a, b, n, draws, seed) -> (jaccard, chance, p)`` for two sets of components ``a`` and
    ``b`` out of ``n``: their Jaccard, the mean Jaccard of two random sets of sizes ``len(a)`` and ``len(b)`` (Monte
    Carlo, ``draws`` pairs, seeded), and the share of random pairs overlapping at least as much (with the +1 of a
    permutation test). Compared with the exact values (the intersection of two random sets is hypergeometric):
    the Jaccard exactly, the chance within 0.015, p within 0.03 (Monte Carlo error at 2,000 draws is below 0.012)."""
    from ...studies.comparing import expected_jaccard, overlap_p

    names = [f"a{i // 8}.h{i % 8}" for i in range(40)]
    mine = [(names[0:9], names[4:15], 36), (names[0:4], names[2:10], 20), (names[0:6], names[0:6], 30)]
    for a, b, n in [*mine, *((list(a), list(b), n) for a, b, n in cases)]:
        got = _triple(call_exercise(overlap_against_chance, list(a), list(b), n, 2000, 0), "overlap_against_chance")
        sa, sb = set(a), set(b)
        inter, union = len(sa & sb), len(sa | sb)
        want_j = inter / union if union else 1.0
        want_c, want_p = expected_jaccard(n, len(sa), len(sb)), overlap_p(n, len(sa), len(sb), want_j)
        what = f"overlap_against_chance with |a| = {len(sa)}, |b| = {len(sb)}, n = {n}"
        if abs(got[0] - want_j) > 1e-9:
            slips = {"that is the overlap coefficient |a ∩ b| / min(|a|, |b|): Jaccard divides by |a ∪ b|":
                     inter / max(1, min(len(sa), len(sb))),
                     "that is the size of the intersection: Jaccard is |a ∩ b| / |a ∪ b|": inter,
                     "that is |a ∩ b| / |a|: Jaccard divides by the union |a ∪ b|": inter / max(1, len(sa))}
            for message, alt in slips.items():
                if abs(got[0] - alt) < 1e-9:
                    raise ExerciseError(f"{what}: your jaccard is {got[0]:.4g}; {message}")
            raise ExerciseError(f"{what}: your jaccard is {got[0]:.4g}, expected {want_j:.4g}")
        if abs(got[1] - want_c) > 0.015:
            same_a, same_b = expected_jaccard(n, len(sa), len(sa)), expected_jaccard(n, len(sb), len(sb))
            if len(sa) != len(sb) and min(abs(got[1] - same_a), abs(got[1] - same_b)) <= 0.01:
                raise ExerciseError(f"{what}: your chance {got[1]:.4g} is that of two random sets of the same size; draw "
                                    f"one of len(a) = {len(sa)} and one of len(b) = {len(sb)} (expected {want_c:.4g})")
            if abs(got[1] - len(sb) / n) < 1e-6 or abs(got[1] - len(sa) / n) < 1e-6:
                raise ExerciseError(f"{what}: your chance {got[1]:.4g} is the share of the n items in one set, not the "
                                    f"mean Jaccard of two random sets (expected {want_c:.4g})")
            raise ExerciseError(f"{what}: your chance is {got[1]:.4g}, the mean Jaccard of two random sets of these sizes "
                                f"is {want_c:.4g}")
        if abs(got[2] - want_p) > 0.03:
            above = overlap_p(n, len(sa), len(sb), want_j + 1e-6)
            if abs(got[2] - above) <= 0.03:
                raise ExerciseError(f"{what}: your p {got[2]:.4g} counts only random overlaps *larger* than the observed "
                                    f"one; a permutation p counts those at least as large (>=): expected {want_p:.4g}")
            if abs(got[2] - (1 - above)) <= 0.03 or abs(got[2] - (1 - want_p)) <= 0.03:
                raise ExerciseError(f"{what}: your p {got[2]:.4g} counts the random overlaps *below* the observed one; p "
                                    f"is the share at least as large (expected {want_p:.4g})")
            raise ExerciseError(f"{what}: your p is {got[2]:.4g}, expected {want_p:.4g} (the share of random pairs whose "
                                "Jaccard is >= the observed one, with the +1 of a permutation test)")
    passed("check_overlap_against_chance", f"{len(mine) + len(cases)} pairs of sets, against the exact hypergeometric "
                                           "values")


def check_random_circuit(random_circuit: Callable, graph, draws: int = 400) -> None:
    """``random_circuit(graph, fraction, seed) -> [n_senders, n_receivers] bool``: ``fa.size_to_count(fraction,
    fa.n_edges(graph))`` edges drawn uniformly from the graph's edges (``graph.edge_mask()``), the same for the same
    seed. Checked: shape and type, no edge outside the graph, the count at several sizes, reproducible and seed-
    dependent, and uniform over ``draws`` seeds (each sender's share of the drawn edges against its share of the
    graph's edges, a chi-square test)."""
    from ...methods import faithfulness as fa

    valid = graph.edge_mask()
    total = fa.n_edges(graph)
    k_half = max(2, total // 7)
    odd = (k_half + 0.6) / total  # round() and int() differ here
    for fraction in (0.0, 0.01, odd, 0.5, 1.0):
        mask = call_exercise(random_circuit, graph, fraction, 0)
        what = f"random_circuit(graph, {fraction:.4g}, seed=0)"
        if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool or tuple(mask.shape) != tuple(valid.shape):
            raise ExerciseError(f"{what}: return a bool tensor [n_senders, n_receivers] = {tuple(valid.shape)}, got "
                                + (f"{mask.dtype} {tuple(mask.shape)}" if isinstance(mask, torch.Tensor) else type(mask).__name__))
        if bool((mask & ~valid).any()):
            raise ExerciseError(f"{what}: {int((mask & ~valid).sum())} of your edges are not edges of the graph (a sender "
                                "that sits after its receiver): draw only among graph.edge_mask()'s True entries")
        want, got = fa.size_to_count(fraction, total), int(mask.sum())
        if got != want:
            if got == int(fraction * total):
                raise ExerciseError(f"{what}: {got} edges, expected {want}: the library rounds "
                                    "(fa.size_to_count(fraction, n_edges)), int() truncates")
            if got == fa.size_to_count(fraction, valid.numel()):
                raise ExerciseError(f"{what}: {got} edges, expected {want}: a fraction of the graph's "
                                    f"{total} edges (fa.n_edges(graph)), not of all {valid.numel()} sender/receiver pairs")
            raise ExerciseError(f"{what}: {got} edges, expected fa.size_to_count({fraction:.4g}, {total}) = {want}")
    a, again, other = (call_exercise(random_circuit, graph, 0.1, s) for s in (0, 0, 1))
    if not torch.equal(a, again):
        raise ExerciseError("random_circuit: two calls with seed 0 give different circuits: draw with a generator "
                            "seeded by the seed (torch.Generator().manual_seed(seed))")
    if torch.equal(a, other):
        raise ExerciseError("random_circuit: seeds 0 and 1 give the same circuit: the draw must depend on the seed")
    k = fa.size_to_count(0.1, total)
    counts = torch.zeros(valid.shape[0])
    for s in range(draws):
        counts += call_exercise(random_circuit, graph, 0.1, s).sum(1).float()
    expected = draws * k * valid.sum(1).float() / total
    keep = expected > 0
    chi2 = float(((counts[keep] - expected[keep]) ** 2 / expected[keep]).sum())
    dof = int(keep.sum()) - 1
    if chi2 > dof + 6 * math.sqrt(2 * dof) + 10:
        worst = int(((counts - expected).abs() / expected.clamp(min=1)).argmax())
        raise ExerciseError(f"random_circuit: not uniform over the graph's edges: over {draws} seeds, sender "
                            f"{graph.senders[worst]} holds {int(counts[worst])} of the drawn edges, {expected[worst]:.0f} "
                            f"expected from its share of the edges (chi-square {chi2:.0f} on {dof} degrees of freedom): "
                            "draw the edges themselves uniformly, not a sender first")
    passed("check_random_circuit", f"5 sizes, seeds, and uniform over {draws} seeds (chi-square {chi2:.0f} on {dof} "
                                   "degrees of freedom)")
