"""Checks for notebook 02 (one EAP edge score, node scores, S_P, reuse@P, the size-matched control, the permutation test,
one row of the cross-task matrix, Jaccard against chance)."""
from __future__ import annotations

import math
import re
from typing import Callable

import torch

from .common import ExerciseError, as_number, call_exercise, compare, compare_number, passed

_as_float = as_number


def check_edge_score(edge_score_to_logits: Callable, model, task, senders=("m0", None), examples=(0, 3)) -> None:
    """``edge_score_to_logits(model, task, sender_hook, example)`` must equal the library's EAP score of
    the edge ``sender -> logits`` for that example, with the logit difference as the metric.

    ``senders`` are component names (``None`` = the last layer's MLP); the check runs on the first 8
    examples of ``task`` and compares with :func:`tutorial_lib.methods.attribution.eap_scores`.
    """
    from ...methods.attribution import eap_scores
    from ...core.components import output_hook, parse
    from ...core.hooks import count_hooks

    sub = task.subset(range(min(8, len(task))))
    expected = eap_scores(model, sub, metric="logit_diff", logits_at="all", progress=False)
    senders = [s or f"m{model.cfg.n_layers - 1}" for s in senders]
    for sender in senders:
        hook_name = output_hook(parse(sender, model))
        col = expected.graph.senders.index(sender)
        for ex in examples:
            ex = ex % len(sub)
            got = _as_float(call_exercise(edge_score_to_logits, model, sub, hook_name, ex), f"edge score {sender} -> logits")
            if count_hooks(model):
                raise ExerciseError("a hook is still attached to the model after your function ran: use `with model.hooks(...)`")
            want = float(expected.edges[ex, col, -1])
            n = len(sub)
            slips = [
                ("the sign is flipped: the difference is corrupted output minus clean output", -want),
                (f"that is 1/{n} of the edge's score: you backpropagated the mean metric over the batch's {n} "
                 f"prompts; backpropagate example {ex}'s own metric (task.logit_diff(logits)[example])", want / n),
                ("that is the gradient taken at the sender's own output, which sums every path from the sender (its "
                 "node score); the edge sender -> logits takes the gradient at the final residual stream "
                 f"(blocks.{model.cfg.n_layers - 1}.hook_resid_post)", float(expected.edges[ex, col, :].sum())),
            ]
            compare_number(got, want, f"edge {sender} -> logits, example {ex}", atol=1e-3, rtol=1e-3, wrong=slips)
    model.zero_grad(set_to_none=True)
    passed("check_edge_score", f"{len(senders) * len(examples)} edge scores match the library's EAP")


def _reuse_slips(member: torch.Tensor, p: float):
    """The usual wrong reuse@P values, as ``(message, function)`` for :func:`compare_number`."""
    n = member.shape[0]
    counts, sizes = member.sum(0), member.sum(1).float()
    keep = sizes > 0

    def reuse(shared, divide_by=None):
        covered = (member & shared[None]).sum(1).float()
        denom = sizes if divide_by is None else torch.full_like(sizes, float(divide_by))
        return float((covered[keep] / denom[keep]).mean()) if divide_by != 0 else None

    ceil, floor = math.ceil(p / 100 * n - 1e-9), math.floor(p / 100 * n + 1e-9)
    shared = counts >= ceil
    return [
        (f"you rounded down: {p}/100 * {n} = {p / 100 * n:.4g}, and S_P needs at least ceil of it, {ceil} circuits, "
         f"not floor ({floor})", lambda: reuse(counts >= floor)),
        (f"you rounded to the nearest integer ({round(p / 100 * n)}): S_P needs at least ceil({p}/100 * {n}) = {ceil} "
         "circuits", lambda: reuse(counts >= round(p / 100 * n))),
        (f"you kept the components in *more than* {ceil} circuits (`>`): a component in exactly ceil({p}/100 * {n}) = "
         f"{ceil} circuits belongs to S_P too (`>=`)", lambda: reuse(counts > ceil)),
        ("you returned |S_P|, the size of the shared set: reuse@P is the mean over examples of |C_i ∩ S_P| / |C_i|",
         lambda: float(shared.sum())),
        ("you divided each example's overlap |C_i ∩ S_P| by |S_P|: divide it by the size of that example's own "
         "circuit, |C_i|", lambda: reuse(shared, divide_by=int(shared.sum()))),
        ("you compared the counts with p * n, not p/100 * n: P is a percentage", lambda: reuse(counts >= p * n)),
    ]


def check_reuse_at_p(reuse_at_p: Callable, membership=None) -> None:
    """``reuse_at_p(membership, p)`` must match :func:`tutorial_lib.methods.consistency.reuse_at` on random
    per-example circuits (several P, including thresholds that round up) and on ``membership``."""
    from ...methods.consistency import reuse_at

    gen = torch.Generator().manual_seed(0)
    cases = []
    m = torch.rand(9, 12, generator=gen) < 0.35
    m[:, 4] = True          # one component in every circuit
    m[:7, 7] = True         # one in 7 of 9: in S_75 (needs ceil(6.75) = 7) but not in S_80 (needs 8)
    cases += [(m, p) for p in (100, 80, 75, 50, 34)]
    if membership is not None:
        cases += [(membership.bool(), p) for p in (100, 90, 50)]
    results = []  # (membership, P, the learner's value, the library's)
    for member, p in cases:
        results.append((member, p, _as_float(call_exercise(reuse_at_p, member.clone(), p), f"reuse@{p}"),
                        reuse_at(member, p)))

    def close(a, b):
        return a is not None and math.isfinite(a) and abs(a - b) <= 1e-5

    wrong = [r for r in results if not close(r[2], r[3])]
    if wrong:
        member, p, got, want = wrong[0]
        what = f"reuse@{p} on a {tuple(member.shape)} membership: you have {got:.4f}, expected {want:.4f}"
        # a slip is named when it explains every case (several give the same value on one of them)
        per_case = [[alt for _, alt in _reuse_slips(m, q)] for m, q, _, _ in results]
        for i, (message, _) in enumerate(_reuse_slips(member, p)):
            alts = [alts[i]() for alts in per_case]
            if all(alt is not None and close(g, alt) for alt, (_, _, g, _) in zip(alts, results)):
                raise ExerciseError(f"{what} -- {message}")
        n = member.shape[0]
        raise ExerciseError(f"{what}. S_P holds the components in at least ceil({p}/100 * {n}) = "
                            f"{math.ceil(p / 100 * n - 1e-9)} circuits; reuse@P is the mean over examples of "
                            "|C_i ∩ S_P| / |C_i|")
    passed("check_reuse_at_p", f"{len(cases)} cases match")


def check_size_matched_control(size_matched_control: Callable, model=None) -> None:
    """``size_matched_control(circuit, heads, mlps, seed)`` must return as many heads and as many MLPs as
    ``circuit`` (a set of names), none of them in it, the same set for the same seed, different sets
    for different seeds. When fewer heads (or MLPs) lie outside the circuit than it holds, it must raise
    a ``ValueError`` whose message gives both counts (needed and left), as
    :func:`tutorial_lib.core.controls.size_matched_random` does -- never a smaller or overlapping control."""
    heads = [f"a{l}.h{h}" for l in range(12) for h in range(12)]
    mlps = [f"m{l}" for l in range(12)]
    cases = [{"m0", "m3", "a5.h1", "a9.h9", "a10.h7"}, {"a0.h0"}, {"m11"},
             # two of four heads in the circuit: the control's heads can only be the other two, so a draw that
             # forgets to leave out the circuit's heads overlaps it in all but 1 of 6 draws
             ({"a0.h0", "a0.h1", "m2"}, heads[:4], mlps)]
    if model is not None:
        from ...core.components import all_heads, all_mlps

        cases.append((set(all_heads(model)[:1]) | set(all_mlps(model)[:1]), all_heads(model), all_mlps(model)))
    for case in cases:
        circuit, hs, ms = case if isinstance(case, tuple) else (case, heads, mlps)
        draws = []
        for seed in range(10):
            got = call_exercise(size_matched_control, set(circuit), list(hs), list(ms), seed)
            if got is None:
                raise ExerciseError("size_matched_control returned None: return the set of chosen component names")
            got_list = [str(c) for c in got]
            if len(set(got_list)) != len(got_list):
                raise ExerciseError(f"the control {sorted(got_list)} holds a component twice: draw without replacement")
            got = set(got_list)
            bad = got - set(hs) - set(ms)
            if bad:
                raise ExerciseError(f"the control holds {sorted(bad)}, which are not in the heads/MLPs you were given")
            if got & set(circuit):
                raise ExerciseError(f"the control {sorted(got)} overlaps the circuit in {sorted(got & set(circuit))}: "
                                    "draw only from components outside it")
            n_h, n_m = sum(c in set(hs) for c in got), sum(c in set(ms) for c in got)
            want_h, want_m = sum(c in set(hs) for c in circuit), sum(c in set(ms) for c in circuit)
            if (n_h, n_m) != (want_h, want_m):
                raise ExerciseError(f"circuit {sorted(circuit)} has {want_h} head(s) and {want_m} MLP(s); your control "
                                    f"{sorted(got)} has {n_h} and {n_m}")
            again = {str(c) for c in call_exercise(size_matched_control, set(circuit), list(hs), list(ms), seed)}
            if again != got:
                raise ExerciseError(f"seed {seed} gave {sorted(got)} and then {sorted(again)}: the same seed must give the same control "
                                    "(use np.random.default_rng(seed) or a torch.Generator)")
            draws.append(frozenset(got))
        if len(ms) + len(hs) - len(circuit) > len(circuit) + 1 and len(set(draws)) < 2:
            raise ExerciseError(f"10 seeds all gave {sorted(draws[0])}: the control must be random")
    short = [({"m0", "m1", "m2", "m3", "m4", "m5", "m6", "m7", "m8", "a3.h4"}, heads, mlps, "MLP"),
             ({"a0.h0", "a0.h2", "a0.h3", "m5"}, heads[:4], mlps, "head")]
    for circuit, hs, ms, kind in short:
        pool = hs if kind == "head" else ms
        need, left = sum(c in pool for c in circuit), sum(c not in circuit for c in pool)
        what = (f"circuit {sorted(circuit)} with {len(hs)} heads and {len(ms)} MLPs in all: it has {need} {kind}s "
                f"but only {left} lie outside it")
        try:
            got = call_exercise(size_matched_control, set(circuit), list(hs), list(ms), 0)
        except ValueError as err:
            msg = str(err)
            if not (re.search(rf"(?<!\d){need}(?!\d)", msg) and re.search(rf"(?<!\d){left}(?!\d)", msg)):
                raise ExerciseError(f"{what}. You raised ValueError({msg!r}); make the message name the shortfall: "
                                    f"how many {kind}s are needed ({need}) and how many are left ({left})") from None
            continue
        except ExerciseError:
            raise
        except Exception as err:  # noqa: BLE001 -- report what the learner raised instead
            raise ExerciseError(f"{what}. You raised {type(err).__name__}({str(err)!r}); raise a ValueError that says "
                                f"how many {kind}s are needed ({need}) and how many are left ({left})") from None
        shown = sorted(str(c) for c in got) if got is not None else None
        raise ExerciseError(f"{what}, so no size-matched control exists; you returned {shown}. Raise a ValueError "
                            f"that says how many {kind}s are needed ({need}) and how many are left ({left}), as "
                            "tutorial_lib.core.controls.size_matched_random does")
    passed("check_size_matched_control", "sizes per kind, disjointness, seeding and the too-few-left error are right")


def _p_value(a: torch.Tensor, b: torch.Tensor, n: int, tail: str, seed: int = 0) -> float:
    """The permutation p-value with the library's sign flips, for one of the usual tails (slips included):
    ``"greater"`` (right), ``"two-sided"``, ``"less"`` (the wrong tail)."""
    import numpy as np

    d = (a - b).double().numpy()
    signs = np.random.default_rng(seed).choice([-1.0, 1.0], size=(n, d.size))
    stats, observed = (signs * d).mean(axis=1), d.mean()
    if tail == "two-sided":
        k = int((np.abs(stats) >= abs(observed) - 1e-12).sum())
    elif tail == "less":
        k = int((stats <= observed + 1e-12).sum())
    else:
        k = int((stats >= observed - 1e-12).sum())
    return (k + 1) / (n + 1)


def check_permutation_test(paired_permutation_p: Callable) -> None:
    """``paired_permutation_p(a, b, n_permutations, seed)`` must give the one-sided p-value that mean(a)
    exceeds mean(b) for paired values, ``(#{permuted >= observed} + 1) / (n_permutations + 1)``."""
    from ...core.controls import paired_permutation_test

    gen = torch.Generator().manual_seed(0)
    n = 60
    base = torch.rand(n, generator=gen)
    cases = {
        "a clear effect": (base + 0.3, base),
        "no difference at all": (base.clone(), base.clone()),
        "a small effect": (base + 0.05 * torch.randn(n, generator=gen) + 0.004, base),
        "the wrong direction": (base - 0.2, base),
    }
    results = []  # (case, a, b, the learner's p, the library's, the tolerance)
    for what, (a, b) in cases.items():
        got = _as_float(call_exercise(paired_permutation_p, a.clone(), b.clone(), 10_000, 0), f"p-value for {what}")
        if not 0 < got <= 1:
            raise ExerciseError(f"{what}: p = {got:.4g} is not in (0, 1]; with the +1 rule p is never 0")
        tol = 1e-9 if what == "no difference at all" else 0.02 + 1e-9
        results.append((what, a, b, got, paired_permutation_test(a, b, 10_000, seed=0), tol))
    wrong = [r for r in results if abs(r[3] - r[4]) > r[5]]
    if not wrong:
        passed("check_permutation_test", "p-values agree with the library's within Monte-Carlo error")
        return
    what, _, _, got, want, _ = wrong[0]
    head = f"{what}: you have p = {got:.4g}, expected about {want:.4g}"
    slips = [
        ("two-sided", "that is the two-sided p-value (|permuted mean| against |observed mean|): the test is one-sided, "
                      "whether mean(a) exceeds mean(b) -- count the permuted means >= the observed one, no absolute "
                      "value"),
        ("less", "you counted the permuted means at or *below* the observed one (the wrong tail, or a - b taken the "
                 "wrong way round): the p-value counts those >= the observed mean of a - b"),
    ]
    for tail, message in slips:
        if all(abs(g - _p_value(a, b, 10_000, tail)) <= tol for _, a, b, g, _, tol in results):
            raise ExerciseError(f"{head} -- {message}")
    hint = ""
    if what == "no difference at all":
        hint = " (every permuted statistic equals the observed one and counts as 'at least as large')"
    raise ExerciseError(head + hint)


# ------------------------------------------------------------------ node scores, S_P, a cross-task row, Jaccard
def check_node_scores(node_scores: Callable, scores, examples=(0, 5)) -> None:
    """``node_scores(edges, edge_mask)`` for one example's signed edge scores ``[n_senders, n_receivers]`` must return
    ``(sum, mean)`` over the components (the senders after ``embed``): the sum of |edge scores| leaving each one
    (``scores.nodes``, the paper's node score) and their mean over its own outgoing edges
    (:func:`tutorial_lib.methods.consistency.mean_edge_scores`)."""
    from ...methods.consistency import mean_edge_scores

    if scores.edges is None:
        raise ValueError("check_node_scores needs EAP scores with their edges (keep_edges=True)")
    mask = scores.graph.edge_mask()
    means = mean_edge_scores(scores).nodes
    n_out = mask.sum(1).float()
    for ex in examples:
        ex = ex % len(scores)
        edges = scores.edges[ex].clone()
        got = call_exercise(node_scores, edges.clone(), mask.clone())
        if not isinstance(got, (tuple, list)) or len(got) != 2:
            raise ExerciseError(f"node_scores returned {type(got).__name__}: return two tensors, (sum scores, mean scores)")
        want_sum, want_mean = scores.nodes[ex], means[ex]
        a = edges.abs()
        what = f"example {ex}"
        dims = ("component",)
        compare(got[0], want_sum, f"{what}, sum scores", atol=1e-5, rtol=1e-4, dims=dims, wrong=[
            ("you summed the signed edge scores: the node score sums their sizes, |edge score|", edges.sum(1)[1:]),
            ("that is one row per *sender*: the first sender, embed, is not a component -- drop row 0", a.sum(1)),
            ("you returned (mean, sum): return (sum, mean)", want_mean),
        ])
        compare(got[1], want_mean, f"{what}, mean scores", atol=1e-6, rtol=1e-4, dims=dims, wrong=[
            (f"you divided by the number of receivers ({mask.shape[1]}), the same for every component: divide by the "
             "number of edges that leave *that* component (edge_mask.sum(1)), which is what removes the fan-out",
             a.sum(1)[1:] / mask.shape[1]),
            ("you averaged the signed edge scores: average their sizes, |edge score|", (edges.sum(1) / n_out)[1:]),
            ("that is one row per *sender*: the first sender, embed, is not a component -- drop row 0", a.sum(1) / n_out),
        ])
    passed("check_node_scores", f"sum and mean node scores of {len(examples)} examples match the library's")


def check_shared_set(shared_set_p: Callable, membership=None, components=None) -> None:
    """``shared_set_p(membership, components, p)`` must return the set of names in at least ``ceil(p/100 * N)`` of
    the N per-example circuits, as :func:`tutorial_lib.methods.consistency.shared_set`."""
    from ...methods.consistency import shared_set

    gen = torch.Generator().manual_seed(1)
    names = [f"a{i // 4}.h{i % 4}" for i in range(9)] + ["m0", "m1", "m2"]
    m = torch.rand(9, 12, generator=gen) < 0.35
    m[:, 4] = True       # in every circuit
    m[:7, 7] = True      # in 7 of 9: in S_75 (ceil(6.75) = 7) but not in S_80 (needs 8)
    m[:, 9] = False
    m[:3, 9] = True      # in 3 of 9: in S_34 (ceil(3.06) = 4)? no; in S_33 (ceil(2.97) = 3) yes
    cases = [(m, names, p) for p in (100, 80, 75, 50, 34, 33)]
    if membership is not None:
        cases += [(membership.bool(), list(components), p) for p in (100, 95, 50)]
    results = []  # (membership, names, P, the learner's set, the library's)
    for member, comps, p in cases:
        got = call_exercise(shared_set_p, member.clone(), list(comps), p)
        if got is None:
            raise ExerciseError("shared_set_p returned None: return the set of component names in S_P")
        results.append((member, comps, p, {str(c) for c in got}, set(shared_set(member, comps, p).nodes)))

    def slips(member, comps, p):
        n, counts = member.shape[0], member.sum(0)
        ceil, floor = math.ceil(p / 100 * n - 1e-9), math.floor(p / 100 * n + 1e-9)
        pick = lambda keep: {c for c, k in zip(comps, keep.tolist()) if k}  # noqa: E731
        return [
            (pick(counts >= floor), f"you rounded down: S_P needs at least ceil({p}/100 * {n}) = {ceil} circuits, not {floor}"),
            (pick(counts >= p * n), "you compared the counts with p * n, not p/100 * n: P is a percentage"),
            (pick(counts > ceil), f"you kept the components in *more than* {ceil} circuits (`>`): exactly {ceil} count too (`>=`)"),
            (pick(member.all(0)), "you kept only the components in *every* circuit: that is S_100, whatever P"),
        ]

    wrong = [r for r in results if r[3] != r[4]]
    if wrong:
        member, comps, p, got, want = wrong[0]
        n = member.shape[0]
        what = f"S_{p} of {n} circuits: you have {sorted(got)}, expected {sorted(want)}"
        per_case = [slips(m, c, q) for m, c, q, _, _ in results]
        for i, (_, message) in enumerate(slips(member, comps, p)):  # a slip is named when it explains every case
            if all(alts[i][0] == g for alts, (_, _, _, g, _) in zip(per_case, results)):
                raise ExerciseError(f"{what} -- {message}")
        raise ExerciseError(f"{what}. S_P holds the components in at least ceil({p}/100 * {n}) = "
                            f"{math.ceil(p / 100 * n - 1e-9)} circuits")
    passed("check_shared_set", f"{len(cases)} shared sets match")


def check_cross_task_row(cross_task_row: Callable, model, tasks: dict, circuit, n: int = 24) -> None:
    """``cross_task_row(model, tasks, circuit)`` must return ``{task: clean accuracy - accuracy with circuit
    zero-ablated}`` for every task (one row of the cross-task matrix), on the first ``n`` examples of each, as
    :func:`tutorial_lib.methods.consistency.per_example_after_ablation` gives it; no hook may stay attached."""
    from ...core.hooks import count_hooks
    from ...methods.consistency import per_example_after_ablation

    subs = {name: t.subset(range(min(n, len(t)))) for name, t in tasks.items()}
    got = call_exercise(cross_task_row, model, subs, circuit)
    if count_hooks(model):
        model.reset_hooks()  # so that the model is clean again for the next try
        raise ExerciseError("a hook was still attached to the model after your function ran (the check has removed it): "
                            "use `with model.hooks(...)`")
    if not isinstance(got, dict):
        raise ExerciseError(f"cross_task_row returned {type(got).__name__}: return a dict {{task name: accuracy drop}}, "
                            "one entry per task (the row of the matrix)")
    if set(got) != set(subs):
        raise ExerciseError(f"your row has the tasks {sorted(got)}; it needs every task, {sorted(subs)}: ablate the one "
                            "circuit and measure each task")
    for name, sub in subs.items():
        res = per_example_after_ablation(model, sub, circuit, mode="zero")
        clean, ablated = float(res["clean"].mean()), float(res["ablated"].mean())
        compare_number(as_number(got[name], f"drop on {name}"), clean - ablated, f"{name} with {sorted(circuit)} ablated",
                       atol=1e-4, rtol=0, fmt=".3f", wrong=[
                           ("that is the accuracy *with* the circuit ablated: the cell is the drop, clean minus ablated",
                            ablated),
                           ("the sign is flipped: the drop is clean accuracy minus ablated accuracy", ablated - clean),
                           ("that is the clean accuracy: ablate the circuit inside `with model.hooks(fwd_hooks="
                            "ablation_hooks(model, circuit, 'zero'))`", clean),
                       ])
    passed("check_cross_task_row", f"the drops on {len(subs)} tasks match the library's")


def check_jaccard(jaccard_vs_chance: Callable, model, n_random: int = 2000) -> None:
    """``jaccard_vs_chance(a, b, heads, mlps, n_random, seed)`` must return ``(observed, chance)``: the Jaccard
    overlap |A ∩ B| / |A ∪ B| of two sets of names, and its mean over ``n_random`` pairs of random sets with the
    same numbers of heads and of MLPs as A and B (as :func:`tutorial_lib.methods.consistency.jaccard_matrix`)."""
    import numpy as np

    from ...core.circuits import Circuit
    from ...core.components import all_heads, all_mlps
    from ...methods.consistency import jaccard_matrix

    heads, mlps = all_heads(model), all_mlps(model)
    cases = [({mlps[0], mlps[-1], heads[-1]}, {mlps[0], heads[-1], heads[-2]}),
             ({mlps[0], heads[0]}, {mlps[-1], heads[1], heads[2]}), ({mlps[0]}, {mlps[0]})]
    for a, b in cases:
        got = call_exercise(jaccard_vs_chance, set(a), set(b), list(heads), list(mlps), n_random, 0)
        if not isinstance(got, (tuple, list)) or len(got) != 2:
            raise ExerciseError(f"jaccard_vs_chance returned {type(got).__name__}: return two numbers, (observed, chance)")
        obs, chance = as_number(got[0], "observed Jaccard"), as_number(got[1], "chance Jaccard")
        what = f"A = {sorted(a)}, B = {sorted(b)}"
        inter = len(a & b)
        compare_number(obs, inter / len(a | b), f"{what}, observed", atol=1e-9, wrong=[
            ("that is |A ∩ B| / min(|A|, |B|), the overlap coefficient: Jaccard divides by |A ∪ B|",
             inter / min(len(a), len(b))),
            ("that is |A ∩ B|, a count: divide it by |A ∪ B|", inter),
            ("that is |A ∩ B| / (|A| + |B|): the union counts the shared components once", inter / (len(a) + len(b))),
        ])
        ref = jaccard_matrix(model, {"a": Circuit(a), "b": Circuit(b)}, n_random=6000, seed=1)
        want, se = float(ref.random_mean[0, 1]), float(ref.random_std[0, 1]) / math.sqrt(n_random)
        rng, pool = np.random.default_rng(2), heads + mlps
        untyped = float(np.mean([len(x & y) / len(x | y) for x, y in (
            (set(rng.choice(pool, len(a), replace=False)), set(rng.choice(pool, len(b), replace=False)))
            for _ in range(6000))]))
        compare_number(chance, want, f"{what}, chance", atol=5 * se + 0.005, rtol=0, fmt=".3f", wrong=[
            ("your random sets ignore the kinds: draw as many heads from the heads and as many MLPs from the MLPs as each "
             "set holds (with few MLPs, two random sets of MLPs overlap often)", untyped),
            ("that is the observed overlap: the chance value is the mean over random pairs", obs),
        ], hint="the chance value is the mean Jaccard of random pairs with A's and B's numbers of heads and of MLPs")
    passed("check_jaccard", f"observed overlaps and chance levels of {len(cases)} pairs match")
