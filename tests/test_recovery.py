"""methods.recovery: ROC, AUROC, precision at the true size, a set as one ROC point."""
from __future__ import annotations

import pytest
import torch

from tutorial_lib.methods import recovery as rc


def test_auroc_hand_computed():
    # ranked by |score|: 0.9 (in), -0.6 (out), 0.5 (in), 0.2 (out), 0.1 (in)
    scores = torch.tensor([0.9, 0.1, -0.6, 0.5, 0.2])
    truth = torch.tensor([True, True, False, True, False])
    r = rc.roc(scores, truth)
    assert r.tpr == pytest.approx([0, 1 / 3, 1 / 3, 2 / 3, 2 / 3, 1])
    assert r.fpr == pytest.approx([0, 0, 0.5, 0.5, 1, 1])
    # area: 0.5 * 1/3 + 0.5 * 2/3 = 0.5 ; pairs (in > out): 0.9 beats both, 0.5 beats 0.2, 0.1 beats none -> 3 of 6
    assert r.auroc == pytest.approx(0.5)
    assert rc.auroc(scores, truth, absolute=False) == pytest.approx(5 / 6)  # signed: -0.6 last, below 0.1


def test_ties_enter_together_and_match_the_pair_count():
    scores = torch.tensor([0.5, 0.5, 0.5, 0.1, 0.1, 0.9])
    truth = torch.tensor([True, False, False, True, False, True])
    r = rc.roc(scores, truth)
    assert r.sizes == [0, 1, 4, 6]
    # P(in > out) + 1/2 P(tie) over the 9 (in, out) pairs: 0.9 beats 3; 0.5 (in) ties two 0.5s and beats 0.1: 1 + 1;
    # 0.1 (in) ties one 0.1: 0.5
    assert r.auroc == pytest.approx((3 + 2 + 0.5) / 9)


def test_auroc_matches_sklearn_on_random_scores_with_ties():
    sk = pytest.importorskip("sklearn.metrics")
    g = torch.Generator().manual_seed(0)
    for _ in range(5):
        scores = torch.randint(-4, 5, (60,), generator=g).float()
        truth = torch.rand(60, generator=g) < 0.3
        assert rc.auroc(scores, truth) == pytest.approx(sk.roc_auc_score(truth.numpy(), scores.abs().numpy()))


def test_perfect_and_reversed():
    truth = torch.tensor([True, True, False, False])
    assert rc.auroc(torch.tensor([3.0, 2.0, 1.0, 0.5]), truth) == 1.0
    assert rc.auroc(torch.tensor([0.1, 0.2, 1.0, 2.0]), truth) == 0.0


def test_precision_at_true_size_shares_ties():
    truth = torch.tensor([True, True, False, False])
    assert rc.precision_at(torch.tensor([3.0, 1.0, 2.0, 0.0]), truth) == 0.5
    # a tie of an in and an out item at the cut: expected precision (1 + 1/2) / 2
    assert rc.precision_at(torch.tensor([3.0, 1.0, 1.0, 0.0]), truth) == 0.75


def test_roc_point_and_errors():
    assert rc.roc_point(["a", "c"], ["a", "b", "c", "d"], ["a", "b"]) == (0.5, 0.5)
    with pytest.raises(ValueError, match="not among the items"):
        rc.roc_point(["z"], ["a", "b"], ["a"])
    with pytest.raises(ValueError, match="both circuit and non-circuit"):
        rc.roc(torch.ones(3), torch.ones(3, dtype=torch.bool))
    with pytest.raises(ValueError, match="one entry each"):
        rc.roc(torch.ones(3), torch.ones(2, dtype=torch.bool))
    with pytest.raises(ValueError, match="must not decrease"):
        rc.auroc_of([0, 1, 0.5], [0, 1, 1])
