"""The notebook-03 checks accept right answers and reject wrong ones with a plain message."""
import numpy as np
import pytest
import torch

from tutorial_lib import checks
from tutorial_lib.course.checks import ExerciseError
from tutorial_lib.studies.spectral import planted_probe
from tutorial_lib.zoo.induction_models import make_model

torch.set_num_threads(1)


def pr_right(X):
    s = torch.linalg.svdvals(X.double())
    p = s**2 / (s**2).sum()
    p = p[p > 0]
    return float(torch.exp(-(p * p.log()).sum()))


def test_participation_ratio_check():
    checks.check_participation_ratio(pr_right)
    centred = lambda X: pr_right(X - X.mean(0))  # noqa: E731 -- the public code does not centre
    with pytest.raises(ExerciseError, match=r"PR of the identity 3×3 \(3 equal directions\): you have 2, expected 3 -- "
                                            r"you centred X \(subtracted its mean row\)"):
        checks.check_participation_ratio(centred)
    with pytest.raises(ExerciseError, match="identity"):
        checks.check_participation_ratio(lambda X: float(torch.linalg.matrix_rank(X)) + 0.5)

    def unfinished(X):
        raise NotImplementedError("Exercise: ...")

    with pytest.raises(ExerciseError, match="not written yet"):
        checks.check_participation_ratio(unfinished)


def pr_slip(square=True, exp=True, order2=False):
    def participation_ratio(X):
        s = torch.linalg.svdvals(X.double())
        if order2:
            return float((s**2).sum() ** 2 / (s**4).sum())
        p = s**2 / (s**2).sum() if square else s / s.sum()
        p = p[p > 0]
        h = -(p * p.log()).sum()
        return float(torch.exp(h) if exp else h)
    return participation_ratio


@pytest.mark.parametrize("slip,message", [
    (dict(order2=True), r"PR of the random 40×6: you have .*, expected .* -- that is the order-2 participation ratio "
                        r"\(Σσ²\)² / Σσ⁴"),
    (dict(square=False), r"PR of the random 40×6: .* -- p must come from the \*squared\* singular values"),
    (dict(exp=False), r"PR of the identity 3×3 \(3 equal directions\): you have 1\.099, expected 3 -- that is the "
                      r"entropy -Σ p log p itself"),
])
def test_participation_ratio_check_names_each_slip(slip, message):
    checks.check_participation_ratio(pr_slip())
    with pytest.raises(ExerciseError, match=message):
        checks.check_participation_ratio(pr_slip(**slip))


def sel_right(att, a_pos, base_pos):
    rows = torch.arange(att.shape[0])
    target = att[rows, :, :, a_pos + 1].mean(0)
    idx = base_pos[:, None, None, :].expand(-1, att.shape[1], att.shape[2], -1)
    return target / att.gather(3, idx).mean(3).mean(0).clamp(min=1e-8)


def test_induction_selectivity_check():
    model = make_model("small", 0)
    probe = planted_probe(24, 48)
    checks.check_induction_selectivity(sel_right, model, probe)
    # reading the earlier A (duplicate-token) instead of B is wrong
    wrong = lambda att, a, b: sel_right(att, a - 1, b)  # noqa: E731
    with pytest.raises(ExerciseError, match="induction selectivity"):
        checks.check_induction_selectivity(wrong, model, probe)

    def inverted(att, a_pos, base_pos):
        rows = torch.arange(att.shape[0])
        idx = base_pos[:, None, None, :].expand(-1, att.shape[1], att.shape[2], -1)
        return att.gather(3, idx).mean(3).mean(0) / att[rows, :, :, a_pos + 1].mean(0).clamp(min=1e-8)

    def mean_of_ratios(att, a_pos, base_pos):
        rows = torch.arange(att.shape[0])
        idx = base_pos[:, None, None, :].expand(-1, att.shape[1], att.shape[2], -1)
        return (att[rows, :, :, a_pos + 1] / att.gather(3, idx).mean(3).clamp(min=1e-8)).mean(0)

    def summed_baseline(att, a_pos, base_pos):
        rows = torch.arange(att.shape[0])
        idx = base_pos[:, None, None, :].expand(-1, att.shape[1], att.shape[2], -1)
        return att[rows, :, :, a_pos + 1].mean(0) / att.gather(3, idx).sum(3).mean(0).clamp(min=1e-8)

    prefix = r"induction selectivity \[n_layers, n_heads\]: "
    with pytest.raises(ExerciseError, match=prefix + r"you read the attention to a_pos, the earlier A itself"):
        checks.check_induction_selectivity(lambda att, a, b: sel_right(att, a - 1, b), model, probe)
    with pytest.raises(ExerciseError, match=prefix + r"the ratio is upside down"):
        checks.check_induction_selectivity(inverted, model, probe)
    with pytest.raises(ExerciseError, match=prefix + r"you averaged the per-example ratios"):
        checks.check_induction_selectivity(mean_of_ratios, model, probe)
    with pytest.raises(ExerciseError, match=prefix + r"the baseline is the attention to base_pos, averaged over its "
                                                     r"positions: you summed over them"):
        checks.check_induction_selectivity(summed_baseline, model, probe)
    with pytest.raises(ExerciseError, match="shape"):
        checks.check_induction_selectivity(lambda att, a, b: sel_right(att, a, b)[0], model, probe)

    def uniform_baseline(att, a_pos, base_pos):  # the paper text's 1/T instead of the random positions
        return att[torch.arange(att.shape[0]), :, :, a_pos + 1].mean(0) * att.shape[-1]

    with pytest.raises(ExerciseError, match=prefix + r"you divided by 1/T, the uniform baseline of the paper's text"):
        checks.check_induction_selectivity(uniform_baseline, model, probe)


# ------------------------------------------------------------------ exercises 2, 4, 6, 7 (PR integral, group ablation,
# K-composition, induction scores)
def integral_right(pr, tokens_seen):
    t = torch.tensor(tokens_seen, dtype=torch.float64)
    keep = t > 0
    return torch.trapezoid((pr.double() - 1).clamp(min=0)[keep], t[keep].log(), dim=0)


def test_pr_integral_check_names_each_slip():
    checks.check_pr_integral(integral_right)

    def variant(excess=True, clamp=True, log=True, drop0=True, left=False):
        def pr_integral(pr, tokens_seen):
            t = torch.tensor(tokens_seen, dtype=torch.float64)
            keep = t > 0 if drop0 else torch.ones_like(t, dtype=torch.bool)
            f = pr.double()[keep]
            if excess:
                f = (f - 1).clamp(min=0) if clamp else f - 1
            x = t[keep].log() if log else t[keep]
            if left:
                return (f[:-1] * (x[1:] - x[:-1])[:, None, None]).sum(0)
            return torch.trapezoid(f, x, dim=0)
        return pr_integral

    prefix = r"PR integral \[n_layers, n_heads\]: "
    for kw, msg in [(dict(excess=False), "you integrated PR itself"), (dict(clamp=False), "you left out the clamp"),
                    (dict(log=False), "you integrated over tokens seen, not over log"),
                    (dict(left=True), "that is a left Riemann sum")]:
        with pytest.raises(ExerciseError, match=prefix + msg):
            checks.check_pr_integral(variant(**kw))
    with pytest.raises(ExerciseError, match="inf or nan.*log\\(0\\) = -inf"):
        checks.check_pr_integral(variant(drop0=False))


@pytest.fixture(scope="module")
def trained():
    from tutorial_lib.zoo import store

    return store.load_model_from_zoo("zoo-induction-small"), planted_probe(48, 48)


def ablated_right(model, probe, heads, where=None, axis_slip=False, keep_hooks=False):
    from functools import partial

    def zero(z, hook, head):
        if axis_slip:
            z[..., head] = 0
        elif where is None:
            z[:, :, head] = 0
        else:
            z[:, where, head] = 0
        return z

    hooks = [(f"blocks.{int(h.split('.')[0][1:])}.attn.hook_z", partial(zero, head=int(h.split(".h")[1]))) for h in heads]
    if keep_hooks:
        for name, fn in hooks:
            model.add_hook(name, fn)
        hooks = []
    with torch.no_grad():
        logits = model.run_with_hooks(probe.tokens, fwd_hooks=hooks)
    return float(torch.nn.functional.cross_entropy(logits[:, probe.query_pos], probe.targets))


def test_group_ablation_check_names_each_slip(trained):
    from tutorial_lib.core.hooks import count_hooks

    model, probe = trained
    heads = ["a1.h0", "a1.h1", "a0.h1"]
    checks.check_group_ablation(ablated_right, model, probe, heads)
    with pytest.raises(ExerciseError, match=r"you zeroed the heads at the query position only"):
        checks.check_group_ablation(lambda m, p, hs: ablated_right(m, p, hs, where=p.query_pos), model, probe, heads)
    with pytest.raises(ExerciseError, match=r"one dimension of d_head"):
        checks.check_group_ablation(lambda m, p, hs: ablated_right(m, p, hs, axis_slip=True), model, probe, heads)
    with pytest.raises(ExerciseError, match=r"your ablation changes nothing"):
        checks.check_group_ablation(lambda m, p, hs: ablated_right(m, p, []), model, probe, heads)
    with pytest.raises(ExerciseError, match=r"a hook was left attached"):
        checks.check_group_ablation(lambda m, p, hs: ablated_right(m, p, hs, keep_hooks=True), model, probe, heads)
    assert count_hooks(model) == 0  # the check removed the learner's hook

    def whole_sequence(m, p, hs):  # issue 50: the full-sequence loss where the token loss was asked
        from functools import partial

        def zero(z, hook, head):
            z[:, :, head] = 0
            return z

        hooks = [(f"blocks.{int(h.split('.')[0][1:])}.attn.hook_z", partial(zero, head=int(h.split(".h")[1]))) for h in hs]
        with torch.no_grad():
            return float(m.run_with_hooks(p.tokens, return_type="loss", fwd_hooks=hooks))

    with pytest.raises(ExerciseError, match=r"you took the loss over the whole sequence"):
        checks.check_group_ablation(whole_sequence, model, probe, heads)


def test_k_composition_check_names_each_slip(trained):
    model, _ = trained
    checks.check_k_composition(lambda ov, qk: float((ov @ qk.T).norm() / (ov.norm() * qk.norm())), model)
    with pytest.raises(ExerciseError, match=r"K-composition of a0\.h0 \(sender\) with a1\.h0 \(receiver\): you have "
                                            r".* -- that is Q-composition"):
        checks.check_k_composition(lambda ov, qk: float((ov @ qk).norm() / (ov.norm() * qk.norm())), model)
    with pytest.raises(ExerciseError, match=r"you did not normalise"):
        checks.check_k_composition(lambda ov, qk: float((ov @ qk.T).norm()), model)
    with pytest.raises(ExerciseError, match=r"the product is in the wrong order"):
        checks.check_k_composition(lambda ov, qk: float((qk @ ov).norm() / (ov.norm() * qk.norm())), model)


def test_induction_scores_check_names_each_slip(trained):
    model, _ = trained
    ids = list(range(3, 100))

    def right(pattern, L, key_shift=1, first=1):
        q = torch.arange(L + first, 2 * L + first)
        return pattern[:, :, q, q - L + key_shift].mean((0, 2))

    checks.check_induction_scores(right, model, ids, length=20, bos=0)
    with pytest.raises(ExerciseError, match=r"induction scores of layer 0 \[n_heads\]: you read the attention to the "
                                            r"earlier occurrence itself"):
        checks.check_induction_scores(lambda p, L: right(p, L, key_shift=0), model, ids, length=20, bos=0)
    with pytest.raises(ExerciseError, match=r"you averaged the whole diagonal"):
        checks.check_induction_scores(lambda p, L: p.diagonal(-(L - 1), dim1=2, dim2=3).mean((0, 2)), model, ids,
                                      length=20, bos=0)
    with pytest.raises(ExerciseError, match=r"your second pass starts one position early"):
        checks.check_induction_scores(lambda p, L: right(p, L, first=0), model, ids, length=20, bos=0)


# ------------------------------------------------------------------ exercise 5: the group ablation against layer-matched
# draws, with its p, on the zoo model and on a tiny Llama 3.2 (grouped-query attention)
def ablation_test_right(model, probe, heads, mode, n_draws, seed, singles=False, pool="layer", p_rule="right",
                        ignore_mode=False):
    from tutorial_lib.core.circuits import ablation_hooks
    from tutorial_lib.core.controls import layer_matched_random

    m = "zero" if ignore_mode else mode

    def loss(hs):
        hooks = ablation_hooks(model, hs, m, reference=probe.tokens, seed=seed) if hs else []
        with torch.no_grad():
            logits = model.run_with_hooks(probe.tokens, fwd_hooks=hooks)
        return float(torch.nn.functional.cross_entropy(logits[:, probe.query_pos], probe.targets))

    clean = loss([])

    def drop(hs):
        return sum(loss([h]) - clean for h in hs) if singles else loss(hs) - clean

    rng = np.random.default_rng(seed)
    H, L = model.cfg.n_heads, model.cfg.n_layers
    if pool == "layer":
        controls = [sorted(layer_matched_random(model, heads, seed=seed + i).nodes) for i in range(n_draws)]
    elif pool == "any":
        others = [f"a{l}.h{h}" for l in range(L) for h in range(H) if f"a{l}.h{h}" not in heads]
        controls = [sorted(rng.choice(others, len(heads), replace=False).tolist()) for _ in range(n_draws)]
    else:  # per layer, found heads not left out
        per = {}
        for h in heads:
            per[int(h.split(".")[0][1:])] = per.get(int(h.split(".")[0][1:]), 0) + 1
        controls = [sorted(f"a{l}.h{i}" for l, k in per.items() for i in rng.choice(H, k, replace=False))
                    for _ in range(n_draws)]
    d = drop(heads)
    cd = [drop(c) for c in controls]
    ge, le = sum(c >= d for c in cd), sum(c <= d for c in cd)
    p = {"right": (ge + 1) / (n_draws + 1), "no+1": ge / n_draws, "two-sided": min(1, 2 * min(ge + 1, le + 1) / (n_draws + 1)),
         "wrong way": (le + 1) / (n_draws + 1)}[p_rule]
    return {"drop": d, "controls": controls, "control_drops": cd, "p": p}


ABLATION_SLIPS = [
    (dict(pool="any"), r"controls not layer-matched: draw \d+ .* has heads per layer"),
    (dict(pool="with found"), r"holds found head\(s\) .*: controls may include found heads"),
    (dict(p_rule="no+1"), r"p of .*: you have 0\.0000, expected 0\.\d+ -- p without the \+1 correction"),
    (dict(p_rule="two-sided"), r"p of .* -- that is a two-sided p"),
    (dict(p_rule="wrong way"), r"p of .*: you have 1\.0000, .* -- p counted the wrong way"),
    (dict(singles=True), r"drop of .* -- you ablated the heads one at a time and summed their drops"),
    (dict(ignore_mode=True), r"drop of .* \(mean ablation.* -- that is the drop with zero ablation, but this case asks "
                             r"for mode='mean'"),
]


@pytest.fixture(scope="module")
def llama():
    """A tiny Llama-3.2-family model (grouped-query attention: 4 query heads share 2 key/value heads)."""
    from tutorial_lib.zoo.families import tiny_family_model

    return tiny_family_model("llama", scale=3.0, n_ctx=48, d_vocab=128), planted_probe(48, 48)


@pytest.mark.parametrize("which,heads", [("trained", ["a1.h0", "a1.h1"]), ("llama", ["a1.h1", "a1.h3"])])
def test_ablation_test_check_names_each_slip(which, heads, request):
    model, probe = request.getfixturevalue(which)
    assert model.cfg.n_key_value_heads in (None, 2)
    checks.check_ablation_test(ablation_test_right, model, probe, heads)
    checks.check_ablation_test(ablation_test_right, model, probe, ["a0.h1", "a1.h2"], mode="zero", n_draws=5, seed=3)
    for slip, message in ABLATION_SLIPS:
        with pytest.raises(ExerciseError, match=message):
            checks.check_ablation_test(lambda *a: ablation_test_right(*a, **slip), model, probe, heads)


def test_ablation_test_check_reminds_an_unfinished_exercise(trained):
    def unfinished(*a):
        raise NotImplementedError("Exercise: ...")

    with pytest.raises(ExerciseError, match="not written yet"):
        checks.check_ablation_test(unfinished, *trained, ["a1.h0"])
    with pytest.raises(ExerciseError, match="return a dict"):
        checks.check_ablation_test(lambda *a: 0.5, *trained, ["a1.h0"])
