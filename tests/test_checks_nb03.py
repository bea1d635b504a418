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


def control_right(heads, n_heads, seed):
    rng = np.random.default_rng(seed)
    out = []
    for layer in sorted({int(h.split(".")[0][1:]) for h in heads}):
        k = sum(int(h.split(".")[0][1:]) == layer for h in heads)
        pool = [f"a{layer}.h{i}" for i in range(n_heads) if f"a{layer}.h{i}" not in heads]
        out += list(rng.choice(pool, size=k, replace=False))
    return out


def test_matched_control_check():
    checks.check_matched_control(control_right)
    # may draw candidates
    def with_candidates(heads, n_heads, seed):
        return list(heads)

    with pytest.raises(ExerciseError, match="candidate"):
        checks.check_matched_control(with_candidates)
    # ignores layers: draws everything from layer 0
    def wrong_layer(heads, n_heads, seed):
        rng = np.random.default_rng(seed)
        return [f"a0.h{i}" for i in rng.choice(range(1, n_heads), size=len(heads), replace=False)]

    with pytest.raises(ExerciseError, match="per layer|candidate"):
        checks.check_matched_control(wrong_layer)
    # not seeded
    def unseeded(heads, n_heads, seed):
        return control_right(heads, n_heads, int(np.random.randint(0, 10**6)))

    with pytest.raises(ExerciseError, match="same seed"):
        checks.check_matched_control(unseeded)
    # ignores the seed
    with pytest.raises(ExerciseError, match="depend on the seed"):
        checks.check_matched_control(lambda h, n, s: control_right(h, n, 0))
