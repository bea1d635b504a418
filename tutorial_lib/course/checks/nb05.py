"""Checks for notebook 05 (a previous-token head by hand, ROC and AUROC from a ranking, why a method missed an edge)."""
from __future__ import annotations

import math
from typing import Callable

import torch

from .common import ExerciseError, call_exercise, passed


def _prev_attention(model, tokens, layer: int, head: int) -> torch.Tensor:
    """Attention of ``a{layer}.h{head}`` from every position q >= 1 to each key offset: ``[n_offsets]`` means for
    offsets q - k = 0, 1, 2 and the rest."""
    with torch.no_grad():
        _, cache = model.run_with_cache(tokens, names_filter=f"blocks.{layer}.attn.hook_pattern")
    pat = cache[f"blocks.{layer}.attn.hook_pattern"][:, head]  # [batch, q, k]
    q = torch.arange(1, tokens.shape[1])
    back = [pat[:, q, q - d].mean().item() if d <= 1 else pat[:, q[d - 1:], q[d - 1:] - d].mean().item() for d in (0, 1, 2)]
    return torch.tensor(back + [pat[:, 1:].sum(-1).mean().item() - sum(back)])


def check_previous_token_head(set_previous_token: Callable) -> None:
    """``set_previous_token(model, layer, head, pos)`` sets the head's W_Q and W_K so that it attends from each
    position to the one before (``pos``: the slice of the residual stream holding the position one-hot). Checked on
    a fresh induction answer key whose previous-token head ``a0.h0`` has had its W_Q and W_K zeroed: after the call
    the head must put >= 0.9 of its attention one back, the other heads must be untouched, and the model must
    do the task again (>= 80% of the intact key's logit difference)."""
    from ...zoo.answer_key import induction_key

    key = induction_key(seed=1)
    model, task = key.model, key.task(16, seed=1)
    with torch.no_grad():
        intact = float(task.metric(model(task.clean)).mean())
        attn = model.blocks[0].attn
        attn.W_Q[0] = 0
        attn.W_K[0] = 0
        others = {n: p.detach().clone() for n, p in model.named_parameters()}
    call_exercise(set_previous_token, model, 0, 0, key.layout["pos"])
    changed = sorted(n for n, p in model.named_parameters() if not torch.equal(p.detach(), others[n]))
    allowed = {"blocks.0.attn.W_Q", "blocks.0.attn.W_K"}
    if set(changed) - allowed:
        raise ExerciseError(f"set_previous_token changed {sorted(set(changed) - allowed)}: set only W_Q and W_K of "
                            "the one head (model.blocks[layer].attn.W_Q[head], ...)")
    with torch.no_grad():
        for name in ("W_Q", "W_K"):
            full = getattr(model.blocks[0].attn, name)
            if not torch.equal(full[1:], others[f"blocks.0.attn.{name}"][1:]):
                raise ExerciseError(f"set_previous_token changed {name} of other heads of layer 0: index the head "
                                    f"({name}[head]), not the whole layer")
    self_, prev, two, rest = _prev_attention(model, task.clean, 0, 0).tolist()
    if prev < 0.9:
        if self_ > 0.5:
            raise ExerciseError(f"the head attends to its own position ({self_:.2f} of its attention), not the previous "
                                "one: the key of position j must match the query of position j + 1 (W_K row pos j -> "
                                "the query's dimension for j + 1)")
        if two > 0.5:
            raise ExerciseError(f"the head attends two positions back ({two:.2f}): shift the key by one position, not two")
        if max(self_, prev, two) < 0.5:
            raise ExerciseError(f"the head's attention is spread out (one back {prev:.2f}, itself {self_:.2f}): the match "
                                "must beat the other keys by several units of attention score (a scale like 12), "
                                "and the key must sit one position *earlier* than the query (a later key is masked)")
        raise ExerciseError(f"only {prev:.2f} of the head's attention goes to the previous position (>= 0.9 needed)")
    with torch.no_grad():
        now = float(task.metric(model(task.clean)).mean())
    if now < 0.8 * intact:
        raise ExerciseError(f"the head attends one back ({prev:.2f}), but the model's logit difference is {now:.2f} "
                            f"against {intact:.2f} intact: the query must read the position block (pos), not the tokens")
    passed("check_previous_token_head", f"{prev:.2f} of the attention one back; logit difference {now:.2f} "
                                        f"(intact {intact:.2f})")


def _ref_roc(scores, truth):
    from ...methods.recovery import roc

    return roc(torch.as_tensor(scores), torch.as_tensor(truth))


def _roc_in_given_order(scores, truth) -> float:
    """The AUROC of the items taken in the order given (the slip: no sort by |score|)."""
    tp = fp = 0
    pts = [(0.0, 0.0)]
    n_pos = sum(bool(t) for t in truth)
    n_neg = len(truth) - n_pos
    for t in truth:
        tp, fp = tp + bool(t), fp + (not bool(t))
        pts.append((fp / n_neg, tp / n_pos))
    return sum((x1 - x0) * (y0 + y1) / 2 for (x0, y0), (x1, y1) in zip(pts, pts[1:]))


def check_roc(roc_from_ranking: Callable) -> None:
    """``roc_from_ranking(scores, truth) -> (fpr, tpr, auroc)``: the ROC points from (0, 0) to (1, 1), ranking by
    |score|, tied scores entering together, and the trapezoid area. Checked on hand-made cases: negative scores,
    ties across the circuit boundary, a perfect and a reversed ranking."""
    cases = [
        ([0.9, 0.1, 0.5, 0.3], [True, False, False, True]),
        ([-0.8, 0.2, 0.05, -0.4, 0.6, 0.0], [True, False, False, True, False, True]),
        ([0.5, 0.5, 0.5, 0.1, 0.1, 0.9], [True, False, False, True, False, True]),
        ([3.0, 2.0, 1.0, 0.5], [True, True, False, False]),
        ([0.1, 0.2, 1.0, 2.0], [True, True, False, False]),
    ]
    for scores, truth in cases:
        out = call_exercise(roc_from_ranking, torch.tensor(scores), torch.tensor(truth))
        if not (isinstance(out, (tuple, list)) and len(out) == 3):
            raise ExerciseError(f"roc_from_ranking: return (fpr, tpr, auroc), got {type(out).__name__}")
        fpr, tpr = [float(x) for x in torch.as_tensor(out[0]).flatten()], [float(x) for x in torch.as_tensor(out[1]).flatten()]
        try:
            area = float(out[2])
        except (TypeError, ValueError):
            raise ExerciseError(f"roc_from_ranking: auroc must be a number, got {type(out[2]).__name__}") from None
        want = _ref_roc(scores, truth)
        if math.isclose(area, want.auroc, abs_tol=1e-6) and len(fpr) == len(want.fpr) and all(
                math.isclose(a, b, abs_tol=1e-6) for a, b in zip(fpr + tpr, want.fpr + want.tpr)):
            continue
        where = f"on scores {scores}, truth {[int(t) for t in truth]}"
        if fpr[:1] != [0.0] or tpr[:1] != [0.0]:
            raise ExerciseError(f"roc_from_ranking {where}: the curve must start at (0, 0), the empty circuit")
        swapped = _ref_roc(scores, truth)
        if math.isclose(area, 1 - want.auroc, abs_tol=1e-6) and not math.isclose(want.auroc, 0.5, abs_tol=1e-6):
            if all(math.isclose(a, b, abs_tol=1e-6) for a, b in zip(fpr, swapped.tpr)):
                raise ExerciseError(f"roc_from_ranking {where}: fpr and tpr are swapped (TPR counts circuit items, FPR "
                                    "the others)")
        signed = _ref_roc_signed(scores, truth)
        if math.isclose(area, signed, abs_tol=1e-6) and not math.isclose(signed, want.auroc, abs_tol=1e-6):
            raise ExerciseError(f"roc_from_ranking {where}: rank by |score| (a large negative effect matters as much as "
                                f"a large positive one); you ranked by the signed score (AUROC {area:.3f}, expected "
                                f"{want.auroc:.3f})")
        given = _roc_in_given_order(scores, truth)
        if math.isclose(area, given, abs_tol=1e-6) and not math.isclose(given, want.auroc, abs_tol=1e-6):
            raise ExerciseError(f"roc_from_ranking {where}: you walked the items in the order given, not ranked: sort "
                                f"them by |score|, highest first, before counting (AUROC {area:.3f}, expected "
                                f"{want.auroc:.3f})")
        if len(fpr) == len(scores) + 1 and len(want.fpr) < len(scores) + 1:
            raise ExerciseError(f"roc_from_ranking {where}: tied scores must enter together (one point after the whole "
                                f"group), else the order you broke the tie in decides the AUROC (you have {area:.3f}, "
                                f"expected {want.auroc:.3f})")
        n = len(scores)
        if all(math.isclose(a * n / sum(1 for t in truth if not t), b, abs_tol=1e-6) for a, b in zip(fpr, want.fpr)) \
                and not all(math.isclose(a, b, abs_tol=1e-6) for a, b in zip(fpr, want.fpr)):
            raise ExerciseError(f"roc_from_ranking {where}: divide the false positives by the number of items *outside* "
                                "the circuit, not by all items")
        raise ExerciseError(f"roc_from_ranking {where}: you have fpr {[round(x, 3) for x in fpr]}, tpr "
                            f"{[round(x, 3) for x in tpr]}, AUROC {area:.3f}; expected fpr "
                            f"{[round(x, 3) for x in want.fpr]}, tpr {[round(x, 3) for x in want.tpr]}, AUROC {want.auroc:.3f}")
    passed("check_roc", f"{len(cases)} rankings, with negative scores and ties")


def _ref_roc_signed(scores, truth) -> float:
    from ...methods.recovery import roc

    return roc(torch.as_tensor(scores), torch.as_tensor(truth), absolute=False).auroc


def check_why_missed(why_missed: Callable, facts: list) -> None:
    """``why_missed(facts) -> reason`` (one of :data:`~tutorial_lib.studies.answer_key.REASONS`) for each of the run's
    ground-truth edges (``facts``: :func:`~tutorial_lib.studies.answer_key.edge_facts` of each) and for hand-made
    edges covering every reason."""
    from ...studies.answer_key import REASONS, why_missed_answer

    made = [
        {"edge": "made-up: cut to zero matters, nothing to patch", "clean metric": 8.0, "cut to zero": -7.0,
         "path patching": 0.0, "EAP": 0.0, "EAP-IG": 0.0},
        {"edge": "made-up: gradient flat", "clean metric": 8.0, "cut to zero": -7.0, "path patching": -6.0,
         "EAP": -0.05, "EAP-IG": -5.5},
        {"edge": "made-up: seen by all", "clean metric": 8.0, "cut to zero": -1.0, "path patching": -0.9,
         "EAP": -0.8, "EAP-IG": -0.85},
        {"edge": "made-up: EAP-IG flat too", "clean metric": 8.0, "cut to zero": -7.0, "path patching": -6.0,
         "EAP": -0.1, "EAP-IG": -0.2},
    ]
    for f in list(facts) + made:
        got = call_exercise(why_missed, dict(f))
        want = why_missed_answer(f)
        if got == want:
            continue
        if got not in REASONS:
            raise ExerciseError(f"why_missed({f['edge']}): return one of {list(REASONS)}, got {got!r}")
        if want == REASONS[0]:
            raise ExerciseError(f"why_missed({f['edge']}): its path-patching effect is {f['path patching']:.3g} (the "
                                f"clean metric is {f['clean metric']:.3g}) while cutting it to zero changes the metric by "
                                f"{f['cut to zero']:.3g}: the corrupted run gives this edge the same value as the clean one, "
                                "so no method that patches in the corrupted run can see it")
        if want == REASONS[1]:
            raise ExerciseError(f"why_missed({f['edge']}): path patching sees {f['path patching']:.3g} but EAP only "
                                f"{f['EAP']:.3g}: compare EAP with path patching (EAP-IG is {f['EAP-IG']:.3g}); the "
                                "gradient at the clean point misses what patching the whole way does")
        raise ExerciseError(f"why_missed({f['edge']}): path patching ({f['path patching']:.3g}) and EAP "
                            f"({f['EAP']:.3g}) agree and the effect is not small: the edge is seen, only ranked "
                            f"below the cut")
    passed("check_why_missed", f"{len(facts)} edges of the run and {len(made)} made-up ones")
