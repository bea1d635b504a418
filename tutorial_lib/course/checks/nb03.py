"""Checks for notebook 03 (the spectral recipe: participation ratio, induction selectivity, group ablation and its
layer-matched test)."""
from __future__ import annotations

from collections import Counter
from typing import Callable

import torch

from .common import ExerciseError, as_number, call_exercise, compare, compare_number, passed


def _pr_slips(X: torch.Tensor):
    """The usual wrong participation ratios of ``X``, as ``(message, function)`` for :func:`compare_number`."""
    from ...methods.spectral import participation_ratio as ref

    def spectrum():
        return torch.linalg.svdvals(X.double())

    def exp_entropy(p):
        p = p[p > 0]
        return float(torch.exp(-(p * p.log()).sum()))

    def entropy():
        s2 = spectrum() ** 2
        p = s2 / s2.sum()
        p = p[p > 0]
        return float(-(p * p.log()).sum())

    return [
        ("you centred X (subtracted its mean row): this PR is taken of X as it is, not mean-centred (the public "
         "code's choice)", lambda: ref(X - X.mean(0))),
        ("that is the order-2 participation ratio (Σσ²)² / Σσ⁴: the exercise asks for the exp-entropy one, "
         "exp(-Σ p log p) with p = σ² / Σσ²", lambda: ref(X, "order2")),
        ("p must come from the *squared* singular values: p_i = σ_i² / Σ σ_j², not σ_i / Σ σ_j",
         lambda: exp_entropy(spectrum() / spectrum().sum())),
        ("that is the entropy -Σ p log p itself: the PR is its exponential, exp(-Σ p log p)", entropy),
        ("that is the number of nonzero singular values (the rank): the PR weighs each direction by its share p_i "
         "of Σσ², exp(-Σ p log p)", lambda: float((spectrum() > 1e-6 * spectrum().max()).sum())),
    ]


def check_participation_ratio(participation_ratio: Callable) -> None:
    """``participation_ratio(X)`` must equal ``exp(entropy of σ²/Σσ²)`` (not mean-centred) on several matrices."""
    from ...methods.spectral import participation_ratio as ref

    g = torch.Generator().manual_seed(0)
    cases = {
        "identity 3×3 (3 equal directions)": torch.eye(3),
        "rank-1 matrix": torch.randn(20, 1, generator=g) @ torch.randn(1, 8, generator=g),
        "random 40×6": torch.randn(40, 6, generator=g),
        "random 30×5 with an offset (not centred)": torch.randn(30, 5, generator=g) + 3.0,
        "uneven spectrum": torch.randn(50, 4, generator=g) * torch.tensor([5.0, 2.0, 1.0, 0.1]),
    }
    for what, X in cases.items():
        got = call_exercise(participation_ratio, X.clone())
        if got is None:
            raise ExerciseError("participation_ratio returned None: return the PR as a float")
        compare_number(as_number(got, f"PR of the {what}"), ref(X), f"PR of the {what}", atol=1e-3, rtol=1e-3,
                       wrong=_pr_slips(X), fmt=".4g")
    passed("check_participation_ratio", "PR = exp(entropy of the normalised squared singular values)")


def _selectivity_slips(att: torch.Tensor, a_pos: torch.Tensor, base_pos: torch.Tensor):
    """The usual wrong induction selectivities, as ``(message, function)`` for :func:`compare`."""
    rows = torch.arange(att.shape[0])
    idx = base_pos[:, None, None, :].expand(-1, att.shape[1], att.shape[2], -1)

    def at(pos):
        return att[rows, :, :, pos]  # [n, L, H]

    def base(per_example=False):
        b = att.gather(3, idx).mean(3)
        return b if per_example else b.mean(0)

    return [
        ("you read the attention to a_pos, the earlier A itself (the duplicate-token target): induction attends to "
         "the token after it, a_pos + 1", lambda: at(a_pos).mean(0) / base().clamp(min=1e-8)),
        ("the ratio is upside down: selectivity is the target attention divided by the baseline attention",
         lambda: base() / at(a_pos + 1).mean(0).clamp(min=1e-8)),
        ("you averaged the per-example ratios: divide the mean (over examples) of the target attention by the "
         "mean of the baseline attention -- a ratio of means, as the library does",
         lambda: (at(a_pos + 1) / base(per_example=True).clamp(min=1e-8)).mean(0)),
        ("the baseline is the attention to base_pos, averaged over its positions: you summed over them",
         lambda: at(a_pos + 1).mean(0) / att.gather(3, idx).sum(3).mean(0).clamp(min=1e-8)),
        ("you divided by 1/T, the uniform baseline of the paper's text: this exercise uses the public code's, the "
         "mean attention on the random positions base_pos", lambda: at(a_pos + 1).mean(0) * att.shape[-1]),
    ]


def check_induction_selectivity(induction_selectivity: Callable, model, probe, n_baseline: int = 50, seed: int = 0) -> None:
    """``induction_selectivity(att, a_pos, base_pos)`` must match :func:`tutorial_lib.selectivity.selectivity`."""
    from ...methods.selectivity import baseline_positions, selectivity
    from ...studies.spectral import query_attention

    att = query_attention(model, probe)
    base = baseline_positions(probe, n_baseline, seed)
    got = call_exercise(induction_selectivity, att.clone(), probe.a_pos.clone(), base.clone())
    if got is None:
        raise ExerciseError("induction_selectivity returned None: return a [n_layers, n_heads] tensor")
    expected = selectivity(model, probe, ("induction",), n_baseline, seed)["induction"]
    compare(got, expected, "induction selectivity [n_layers, n_heads]", atol=1e-3, rtol=1e-3,
            wrong=_selectivity_slips(att.float().cpu(), probe.a_pos.cpu(), base.cpu()), dims=("layer", "head"))
    passed("check_induction_selectivity", f"best head {float(expected.max()):.0f}× its baseline")


def _integral_slips(pr: torch.Tensor, tokens: list):
    """The usual wrong PR integrals, as ``(message, function)`` for :func:`compare`."""
    t = torch.tensor(tokens, dtype=torch.float64)
    keep = t > 0
    x = t[keep].log()
    f = (pr.double() - 1).clamp(min=0)[keep]

    def trapz(y, xs):
        return ((y[1:] + y[:-1]) / 2 * (xs[1:] - xs[:-1])[:, None, None]).sum(0)

    return [
        ("you integrated PR itself: the recipe integrates the excess max(PR - 1, 0), what a head holds above one "
         "dimension", lambda: trapz(pr.double()[keep], x)),
        ("you left out the clamp: max(PR - 1, 0), so a checkpoint with PR below 1 adds nothing rather than "
         "subtracting", lambda: trapz(pr.double()[keep] - 1, x)),
        ("you integrated over tokens seen, not over log(tokens seen): the axis is log-spaced, and so is the "
         "integral", lambda: trapz(f, t[keep])),
        ("that is a left Riemann sum (each interval times its left value): use the trapezoid rule, the mean of "
         "both ends times the width", lambda: (f[:-1] * (x[1:] - x[:-1])[:, None, None]).sum(0)),
    ]


def check_pr_integral(pr_integral: Callable) -> None:
    """``pr_integral(pr, tokens_seen)`` must equal :func:`tutorial_lib.methods.spectral.pr_integral` (log tokens,
    trapezoid, ``max(PR - 1, 0)``, the step-0 checkpoint left out)."""
    from ...methods.spectral import pr_integral as ref

    g = torch.Generator().manual_seed(0)
    tokens = [0, 100, 300, 1000, 3000, 10_000]
    pr = 0.5 + 3 * torch.rand(len(tokens), 2, 3, generator=g)  # some values below 1, so the clamp matters
    got = call_exercise(pr_integral, pr.clone(), list(tokens))
    if got is None:
        raise ExerciseError("pr_integral returned None: return a [n_layers, n_heads] tensor")
    got = torch.as_tensor(got, dtype=torch.float64)
    if not torch.isfinite(got).all():
        raise ExerciseError("your integral has inf or nan: the first checkpoint has tokens_seen = 0, and log(0) = -inf; "
                            "leave that checkpoint out (it has no place on a log axis)")
    compare(got, ref(pr, tokens), "PR integral [n_layers, n_heads]", atol=1e-6, rtol=1e-6,
            wrong=_integral_slips(pr, tokens), dims=("layer", "head"))
    passed("check_pr_integral", "trapezoid of max(PR - 1, 0) over log(tokens seen)")


def _ablation_slips(model, probe, heads):
    """The usual wrong group ablations, as ``(message, function)`` for :func:`compare_number`."""
    from ...core.components import parse_many

    comps = parse_many(list(heads), model)

    def loss(hook_fn):
        hooks = [(f"blocks.{c.layer}.attn.hook_z", (lambda c: lambda z, hook: hook_fn(z, c.head))(c)) for c in comps]
        with torch.no_grad():
            logits = model.run_with_hooks(probe.tokens, fwd_hooks=hooks)
        return float(torch.nn.functional.cross_entropy(logits[:, probe.query_pos].float(), probe.targets.to(logits.device)))

    def at_query(z, h):
        z[:, probe.query_pos, h] = 0
        return z

    def zero(z, h):
        z[:, :, h] = 0
        return z

    def whole_sequence():
        hooks = [(f"blocks.{c.layer}.attn.hook_z", (lambda c: lambda z, hook: zero(z, c.head))(c)) for c in comps]
        with torch.no_grad():
            return float(model.run_with_hooks(probe.tokens, return_type="loss", fwd_hooks=hooks))

    def wrong_axis(z, h):
        z[..., h] = 0
        return z

    return [
        ("you took the loss over the whole sequence (every next-token prediction, return_type=\"loss\"): the loss asked "
         "is the token loss on B alone, the cross-entropy of the logits at the query position against probe.targets",
         whole_sequence),
        ("you zeroed the heads at the query position only: a head's output is zeroed at every position, so that "
         "no later position reads it either", lambda: loss(at_query)),
        ("your ablation changes nothing: the hooks must be active during the forward pass (model.run_with_hooks, or "
         "model(...) inside `with model.hooks(fwd_hooks=...)`)", lambda: loss(lambda z, h: z)),
        ("you zeroed one dimension of d_head in every head (hook_z is [batch, pos, head, d_head]): index the head "
         "axis, z[:, :, head] = 0", lambda: loss(wrong_axis)),
    ]


def check_group_ablation(ablated_loss: Callable, model, probe, heads) -> None:
    """``ablated_loss(model, probe, heads)`` must give the mean loss on ``B`` (cross-entropy at the query, nats) with
    ``heads`` zero-ablated, as :func:`tutorial_lib.methods.head_ablation.evaluate_induction` does, for ``heads``, the
    last layer, all of layer 0 (whose output later layers read at every position, so that zeroing only the query
    position shows) and none."""
    from ...core.hooks import count_hooks
    from ...methods.head_ablation import evaluate_induction

    H, L = model.cfg.n_heads, model.cfg.n_layers
    last = [f"a{L - 1}.h{i}" for i in range(H)]  # nothing reads their output but the logits: where the query alone counts
    layer0 = [f"a0.h{i}" for i in range(H)]  # heads whose output later layers read at every position
    for case in (list(heads), last, layer0, []):
        got = call_exercise(ablated_loss, model, probe, list(case))
        if count_hooks(model):
            model.reset_hooks()
            raise ExerciseError("a hook was left attached to the model after ablated_loss returned: use "
                                "model.run_with_hooks or `with model.hooks(...)`, which remove their hooks")
        want = float(evaluate_induction(model, probe, case)["loss"].mean())
        compare_number(as_number(got, f"loss with {case or 'no head'} ablated"), want,
                       f"loss on B with {case or 'no head'} ablated", atol=1e-3, rtol=1e-3,
                       wrong=_ablation_slips(model, probe, case) if case else (), fmt=".4f")
    passed("check_group_ablation", f"the loss with {len(heads)} head(s), the last layer, all of layer 0 and no head "
           "zeroed matches the library's")


def check_k_composition(k_composition: Callable, model) -> None:
    """``k_composition(W_OV, W_QK)`` must equal ``||W_OV @ W_QK.T||_F / (||W_OV||_F ||W_QK||_F)``, the score
    TransformerLens's ``all_composition_scores("K")`` gives, on ``model``'s layer-0 -> layer-1 head pairs."""
    from ...methods.composition import composition_score, head_ov, head_qk

    pairs = [(0, s, 1, r) for s in range(model.cfg.n_heads) for r in range(min(2, model.cfg.n_heads))]
    for ls, s, lr, r in pairs:
        ov, qk = head_ov(model, ls, s), head_qk(model, lr, r)
        got = call_exercise(k_composition, ov.clone(), qk.clone())
        what = f"K-composition of a{ls}.h{s} (sender) with a{lr}.h{r} (receiver)"
        compare_number(as_number(got, what), composition_score(ov, qk.T), what, atol=1e-5, rtol=1e-4, fmt=".4f", wrong=[
            ("that is Q-composition, W_OV @ W_QK: K-composition feeds the receiver's keys, x_query @ W_QK @ (x @ W_OV).T, "
             "so the product is W_OV @ W_QK.T", lambda: composition_score(ov, qk)),
            ("you did not normalise: divide ||W_OV @ W_QK.T||_F by ||W_OV||_F × ||W_QK||_F, so that the score does not "
             "grow with the weights' scale", lambda: float((ov @ qk.T).norm())),
            ("the product is in the wrong order: W_QK @ W_OV reads the receiver's query side into the sender; "
             "K-composition is W_OV @ W_QK.T", lambda: composition_score(qk, ov)),
        ])
    passed("check_k_composition", "||W_OV W_QKᵀ||_F / (||W_OV||_F ||W_QK||_F), as TransformerLens computes it")


def check_induction_scores(induction_scores: Callable, model, token_ids, length: int = 24, n_seqs: int = 16,
                           bos: "int | None" = None) -> None:
    """``induction_scores(pattern, length)`` (``pattern``: one layer's ``[n, n_heads, T, T]`` on ``BOS, x1..xL,
    x1..xL``) must give each head's induction score as :func:`tutorial_lib.zoo.copying.copying_on_tokens` does."""
    from ...zoo.copying import copying_on_tokens, repeated_sequences

    length = min(length, (model.cfg.n_ctx - 1) // 2)
    if bos is None:  # the model's own BOS, as copying_on_tokens takes it
        tok = model.tokenizer
        bos = tok.bos_token_id if tok.bos_token_id is not None else tok.all_special_ids[0]
    ref = copying_on_tokens(model, token_ids, n_seqs=n_seqs, length=length, bos=bos)
    toks = repeated_sequences(token_ids, bos, n_seqs, length).to(next(model.parameters()).device)
    names = {f"blocks.{l}.attn.hook_pattern" for l in range(model.cfg.n_layers)}
    with torch.no_grad():
        _, cache = model.run_with_cache(toks, names_filter=lambda n: n in names)
    L = length
    for layer in range(model.cfg.n_layers):
        pat = cache[f"blocks.{layer}.attn.hook_pattern"].float().cpu()
        got = call_exercise(induction_scores, pat.clone(), L)
        if got is None:
            raise ExerciseError("induction_scores returned None: return a [n_heads] tensor")
        q = torch.arange(L + 1, 2 * L + 1)
        compare(torch.as_tensor(got).float(), ref.scores[layer].float(), f"induction scores of layer {layer} [n_heads]",
                atol=1e-4, rtol=1e-3, dims=("head",), wrong=[
                    ("you read the attention to the earlier occurrence itself (key q - L, the duplicate-token "
                     "pattern): induction attends to the token after it, key q - L + 1",
                     lambda: pat[:, :, q, q - L].mean((0, 2))),
                    ("you averaged the whole diagonal (pattern.diagonal(-(L - 1))), queries L-1 .. 2L: its first two "
                     "entries are first-pass tokens with no earlier occurrence; only queries L+1 .. 2L count",
                     lambda: pat.diagonal(-(L - 1), dim1=2, dim2=3).mean((0, 2))),
                    ("your second pass starts one position early: position 0 is BOS, so the first pass is 1 .. L and the "
                     "second L+1 .. 2L", lambda: pat[:, :, q - 1, q - L].mean((0, 2))),
                ])
    passed("check_induction_scores", f"every layer; best head {ref.best_head} {ref.best_score:.2f}")


def _layers(heads) -> dict:
    return dict(sorted(Counter(int(str(h).split(".")[0][1:]) for h in heads).items()))


def _drop_slips(model, probe, heads, mode: str, seed: int):
    """The usual wrong drops of ablating ``heads``, as ``(message, function)`` for :func:`compare_number`."""
    from ...core.circuits import ABLATION_MODES, ablation_hooks
    from ...core.components import parse_many

    def _one(hs, m):
        return _loss(ablation_hooks(model, list(hs), m, reference=probe.tokens, seed=seed)) - _loss([])

    def _loss(hooks):
        with torch.no_grad(), model.hooks(fwd_hooks=hooks):
            logits = model(probe.tokens)
        return float(torch.nn.functional.cross_entropy(logits[:, probe.query_pos].float(), probe.targets))

    def flat_mean():
        comps = parse_many(list(heads), model)

        def hook(z, hook, h):
            z = z.clone()
            z[:, :, h] = z[:, :, h].mean((0, 1))
            return z

        from functools import partial
        return _loss([(f"blocks.{c.layer}.attn.hook_z", partial(hook, h=c.head)) for c in comps]) - _loss([])

    out = [("you ablated the heads one at a time and summed their drops: ablate the whole set together, in one "
            "forward pass (heads can stand in for each other, so the sum is not the set's effect)",
            lambda: sum(_one([h], mode) for h in heads))]
    out += [(f"that is the drop with {m} ablation, but this case asks for mode={mode!r}: pass `mode` on to the "
             "library's ablation_hooks, the course's one home for ablation modes", (lambda m: lambda: _one(heads, m))(m))
            for m in ABLATION_MODES if m != mode]
    if mode == "mean":
        out.append(("you replaced each head by its mean over examples *and positions*: the library's mean ablation "
                    "keeps one mean per position; use ablation_hooks(..., mode, reference=probe.tokens) rather than "
                    "a mean of your own", flat_mean))
    out.append(("the sign is flipped: the drop is how much *worse* the ablated model does, so a damaging ablation "
                "has a positive drop (the loss goes up)", lambda: -_one(heads, mode)))
    return out


def _p_slips(drop: float, control_drops):
    """The usual wrong p-values of ``drop`` against ``control_drops``, as ``(message, value)``."""
    n = len(control_drops)
    ge = sum(c >= drop - 1e-12 for c in control_drops)
    le = sum(c <= drop + 1e-12 for c in control_drops)
    return [
        ("p without the +1 correction: the library counts the found set as one of the draws, so a p can never be "
         "0", ge / max(n, 1)),
        ("that is a two-sided p: the test is one-sided, it asks only whether the found set hurts *more* than the "
         "control draws", min(1.0, 2 * min((ge + 1) / (n + 1), (le + 1) / (n + 1)))),
        ("p counted the wrong way: you counted the control draws whose drop is smaller than the found set's; count "
         "those that hurt at least as much", (le + 1) / (n + 1)),
        ("p counted the wrong way: you counted the control draws whose drop is smaller than the found set's; count "
         "those that hurt at least as much", (sum(c < drop for c in control_drops) + 1) / (n + 1)),
        ("that is a two-sided p (sizes of the drops compared without their sign): the test is one-sided, whether "
         "the found set hurts *more*", (sum(abs(c) >= abs(drop) - 1e-12 for c in control_drops) + 1) / (n + 1)),
    ]


def _check_controls(controls, heads, want, n_draws: int, seed: int) -> None:
    if controls is None or len(controls) != n_draws:
        raise ExerciseError(f"you returned {0 if controls is None else len(controls)} control draws; n_draws = "
                            f"{n_draws} were asked")
    found = set(heads)
    controls = [[str(h) for h in got] for got in controls]
    for i, got in enumerate(controls):  # every draw's heads first, then every draw's layers: the slips, not the luck
        inside = sorted(found & set(got))
        if inside:
            raise ExerciseError(f"control draw {i} {got} holds found head(s) {inside}: controls may include found "
                                "heads -- a control draws only from the *other* heads of each layer")
    for i, got in enumerate(controls):
        if _layers(got) != _layers(heads):
            raise ExerciseError(f"controls not layer-matched: draw {i} {got} has heads per layer {_layers(got)}, the "
                                f"found set {_layers(heads)} -- draw in each layer as many heads as the found set has "
                                "there, not any heads")
    for i, (got, lib) in enumerate(zip(controls, want)):
        if sorted(got) != sorted(lib):
            raise ExerciseError(f"control draw {i} is {sorted(got)}; the library's layer_matched_random(model, heads, "
                                f"seed={seed + i}) draws {sorted(lib)}: take draw i from it with seed + i")


def check_ablation_test(ablation_test: Callable, model, probe, heads, mode: str = "mean", n_draws: int = 8,
                        seed: int = 0) -> None:
    """``ablation_test(model, probe, heads, mode, n_draws, seed)`` must return ``{"drop", "controls",
    "control_drops", "p"}`` as :func:`tutorial_lib.methods.head_ablation.group_ablation_test` does: on ``heads`` in
    ``mode``, then on the set's last head alone in the other of zero and mean (where draws from any layer show). It
    names the usual slips: controls not layer-matched or holding found heads, p without the +1 correction, two-sided
    or counted the wrong way, heads ablated one at a time and summed, the wrong mode."""
    from ...methods.head_ablation import control_p, group_ablation_test

    heads = [str(h) for h in heads]
    last = [max(heads, key=lambda h: (int(h.split(".")[0][1:]), h))]  # one head: draws from any layer show there
    first = None
    for heads, m in ((heads, mode), (last, "zero" if mode != "zero" else "mean")):
        what = f"{heads} ({m} ablation, {n_draws} draws, seed {seed})"
        got = call_exercise(ablation_test, model, probe, list(heads), m, n_draws, seed)
        if not isinstance(got, dict) or not {"drop", "controls", "control_drops", "p"} <= set(got):
            raise ExerciseError("return a dict with the keys 'drop', 'controls', 'control_drops' and 'p', got "
                                f"{type(got).__name__}" + (f" with keys {sorted(got)}" if isinstance(got, dict) else ""))
        want = group_ablation_test(model, probe, heads, m, n_draws, seed)
        _check_controls(got["controls"], heads, want["controls"], n_draws, seed)
        drop = as_number(got["drop"], f"drop of {what}")
        compare_number(drop, want["drop"], f"drop of {what}", atol=1e-4, rtol=1e-3, fmt=".4f",
                       wrong=_drop_slips(model, probe, heads, m, seed))
        cd = got["control_drops"]
        if cd is None or len(cd) != n_draws:
            raise ExerciseError(f"control_drops of {what}: expected {n_draws} numbers, one per draw")
        for i, (c, ctrl, w) in enumerate(zip(cd, want["controls"], want["control_drops"])):
            compare_number(as_number(c, f"drop of control draw {i}"), w, f"drop of control draw {i} {ctrl} ({m})",
                           atol=1e-4, rtol=1e-3, fmt=".4f", wrong=_drop_slips(model, probe, ctrl, m, seed))
        compare_number(as_number(got["p"], f"p of {what}"), control_p(want["drop"], want["control_drops"]),
                       f"p of {what}", atol=1e-9, rtol=1e-9, fmt=".4f",
                       wrong=_p_slips(want["drop"], want["control_drops"]))
        first = first or want
    passed("check_ablation_test", f"drop {first['drop']:.3f} nats against {n_draws} layer-matched draws, "
           f"p = {first['p']:.3g}")
