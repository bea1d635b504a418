"""Tests for tutorial_lib.methods.composition: Q-/K-/V-composition scores and their random baseline."""
import pytest
import torch

from tutorial_lib.methods.composition import composition_score, composition_scores, head_ov, head_qk, random_baseline
from tutorial_lib.zoo.induction_models import make_model

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def model():
    return make_model("deep", seed=3)  # 3 layers, random weights


def test_score_of_a_loop_of_sums():
    g = torch.Generator().manual_seed(0)
    A, B = torch.randn(5, 3, generator=g), torch.randn(3, 4, generator=g)
    prod = [[sum(float(A[i, k]) * float(B[k, j]) for k in range(3)) for j in range(4)] for i in range(5)]
    num = sum(v * v for row in prod for v in row) ** 0.5
    den = float((A**2).sum().sqrt()) * float((B**2).sum().sqrt())
    assert composition_score(A, B) == pytest.approx(num / den, rel=1e-6)
    assert composition_score(torch.eye(3), torch.eye(3)) == pytest.approx(3 ** -0.5)
    with pytest.raises(ValueError, match=r"\[a, m\] and \[m, b\]"):
        composition_score(A, A)


@pytest.mark.parametrize("mode", ["Q", "K", "V"])
def test_scores_match_transformer_lens(model, mode):
    L, H = model.cfg.n_layers, model.cfg.n_heads
    heads = [f"a{l}.h{h}" for l in range(L) for h in range(H)]
    ours = composition_scores(model, heads, heads, mode)
    tl = model.all_composition_scores(mode).detach()
    for (s, r), v in ours.items():
        ls, hs = int(s[1]), int(s.split(".h")[1])
        lr, hr = int(r[1]), int(r.split(".h")[1])
        assert v == pytest.approx(float(tl[ls, hs, lr, hr]), rel=1e-4, abs=1e-6), (mode, s, r)
    # only pairs with the sender in an earlier layer
    assert len(ours) == sum(H * H for a in range(L) for b in range(L) if a < b)


def test_modes_differ_and_matrices_are_the_products(model):
    ov, qk = head_ov(model, 0, 1), head_qk(model, 1, 2)
    assert torch.allclose(ov, (model.W_V[0, 1] @ model.W_O[0, 1]).double().detach())
    assert torch.allclose(qk, (model.W_Q[1, 2] @ model.W_K[1, 2].T).double().detach())
    k = composition_scores(model, ["a0.h1"], ["a1.h2"], "K")["a0.h1", "a1.h2"]
    q = composition_scores(model, ["a0.h1"], ["a1.h2"], "Q")["a0.h1", "a1.h2"]
    assert k == pytest.approx(composition_score(ov, qk.T)) and q == pytest.approx(composition_score(ov, qk))
    assert k != pytest.approx(q)
    with pytest.raises(ValueError, match="unknown mode"):
        composition_scores(model, ["a0.h1"], ["a1.h2"], "X")


def test_random_baseline_is_seeded_and_near_random_heads(model):
    m1, s1 = random_baseline(model, "K", n=50, seed=1)
    assert (m1, s1) == random_baseline(model, "K", n=50, seed=1)
    assert random_baseline(model, "K", n=50, seed=2) != (m1, s1)
    assert 0 < s1 < m1 < 1
    # a freshly initialised model's heads are random matrices of the same shapes and ranks: near the baseline
    heads = [f"a{l}.h{h}" for l in range(3) for h in range(model.cfg.n_heads)]
    v = torch.tensor(list(composition_scores(model, heads, heads, "K").values()))
    assert abs(float(v.mean()) - m1) < 4 * s1
