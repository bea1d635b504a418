"""Tests for tutorial_lib.methods.spectral: PR definitions, per-head PR, trajectories, the integral, timing."""
import math


import numpy as np
import pytest
import torch

from tutorial_lib.core.hooks import count_hooks
from tutorial_lib.methods.selectivity import PlantedPairProbe
from tutorial_lib.methods.spectral import (
    emergence_timing,
    head_participation_ratios,
    participation_ratio,
    pr_integral,
    pr_trajectory,
    rank_heads,
    selectivity_trajectory,
)

torch.set_num_threads(1)
from conftest import PLANTED_T as T, make_tiny_model, planted_pair_tokens  # noqa: E402


# --------------------------------------------------------------------- reference PRs (slow and simple)
def ref_pr(X, definition):
    """Eigenvalues of the second-moment matrix, then the two formulas written out by hand."""
    X = np.asarray(X, dtype=np.float64)
    lam = np.clip(np.linalg.eigvalsh(X.T @ X / X.shape[0]), 0, None)
    if definition == "order2":
        return lam.sum() ** 2 / (lam**2).sum()
    p = lam / lam.sum()
    h = -sum(pi * math.log(pi) for pi in p if pi > 0)
    return math.exp(h)


def with_spectrum(s, n=40, d=12, seed=0):
    g = torch.Generator().manual_seed(seed)
    U, _ = torch.linalg.qr(torch.randn(n, len(s), generator=g, dtype=torch.float64))
    W, _ = torch.linalg.qr(torch.randn(d, len(s), generator=g, dtype=torch.float64))
    return U @ torch.diag(torch.tensor(s, dtype=torch.float64)) @ W.T


@pytest.mark.parametrize("definition", ["exp_entropy", "order2"])
@pytest.mark.parametrize("k", [1, 2, 3, 5, 8])
def test_k_equal_singular_values_give_k(definition, k):
    assert participation_ratio(with_spectrum([3.0] * k), definition) == pytest.approx(k, rel=1e-9)


@pytest.mark.parametrize("definition", ["exp_entropy", "order2"])
def test_one_dominant_direction_gives_about_one(definition):
    pr = participation_ratio(with_spectrum([100.0, 1e-3, 1e-3, 1e-3]), definition)
    assert 1.0 <= pr < 1.0 + 1e-5


def test_two_to_one_spectrum_by_hand():
    X = with_spectrum([2.0, 1.0])
    p = np.array([0.8, 0.2])  # σ² = 4, 1
    assert participation_ratio(X) == pytest.approx(math.exp(-(p * np.log(p)).sum()), rel=1e-9)
    assert participation_ratio(X, "order2") == pytest.approx(25 / 17, rel=1e-9)


@pytest.mark.parametrize("definition", ["exp_entropy", "order2"])
def test_random_matrices_match_eigenvalue_reference(definition):
    g = torch.Generator().manual_seed(1)
    for shape in [(30, 8), (5, 8), (64, 16)]:
        X = torch.randn(*shape, generator=g) * torch.linspace(0.1, 3, shape[1])
        assert participation_ratio(X, definition) == pytest.approx(ref_pr(X, definition), rel=1e-6)


def test_not_mean_centred_and_zero_matrix():
    X = torch.tensor([[1.0, 2.0, 3.0]]).repeat(10, 1)  # identical rows: rank 1 (centring would give 0)
    assert participation_ratio(X) == pytest.approx(1.0)
    assert math.isnan(participation_ratio(torch.zeros(5, 3)))


def test_bad_input_raises():
    with pytest.raises(ValueError, match="2-D"):
        participation_ratio(torch.ones(5))
    with pytest.raises(ValueError, match="exp_entropy"):
        participation_ratio(torch.ones(3, 3), definition="entropy")


# --------------------------------------------------------------------- per-head PR against the cache
@pytest.mark.parametrize("attn_only", [True, False])
@pytest.mark.parametrize("definition", ["exp_entropy", "order2"])
def test_head_prs_match_cache(attn_only, definition):
    model = make_tiny_model("planted", attn_only=attn_only)
    toks, a_pos = planted_pair_tokens(24)
    probe = PlantedPairProbe(toks, a_pos)
    got = head_participation_ratios(model, probe, definition=definition, batch_size=7)
    _, cache = model.run_with_cache(toks)
    for l in range(2):
        for h in range(4):
            X = cache[f"blocks.{l}.attn.hook_z"][:, T - 1, h, :]
            assert float(got[l, h]) == pytest.approx(ref_pr(X, definition), rel=1e-4)
    assert count_hooks(model) == 0


def test_head_prs_result_space_and_per_example_positions():
    model = make_tiny_model("planted")
    toks, _ = planted_pair_tokens(16)
    q = torch.randint(0, T, (16,), generator=torch.Generator().manual_seed(3))
    got = head_participation_ratios(model, toks, query_pos=q, space="result")
    model.set_use_attn_result(True)
    _, cache = model.run_with_cache(toks)
    model.set_use_attn_result(False)
    for l in range(2):
        for h in range(4):
            X = cache[f"blocks.{l}.attn.hook_result"][torch.arange(16), q, h, :]
            assert float(got[l, h]) == pytest.approx(ref_pr(X, "exp_entropy"), rel=1e-4)
    with pytest.raises(ValueError, match="space"):
        head_participation_ratios(model, toks, space="resid")
    with pytest.raises(ValueError, match="query_pos"):
        head_participation_ratios(model, toks, query_pos=T)


# --------------------------------------------------------------------- trajectories
def test_trajectories_use_each_checkpoint_and_restore_weights():
    model = make_tiny_model("planted", seed=0)
    original = {k: v.clone() for k, v in model.state_dict().items()}
    ckpts = [(s, s * 100, make_tiny_model("planted", seed=s + 1).state_dict()) for s in range(3)]
    toks, a_pos = planted_pair_tokens(20)
    probe = PlantedPairProbe(toks, a_pos)
    traj = pr_trajectory(ckpts, model, probe)
    sel = selectivity_trajectory(ckpts, model, probe, patterns=("induction", "BOS"))
    assert traj.shape == (3, 2, 4) and sel["BOS"].shape == (3, 2, 4)
    for i, s in enumerate(range(3)):
        other = make_tiny_model("planted", seed=s + 1)
        assert torch.allclose(traj[i], head_participation_ratios(other, probe), rtol=1e-5)
    assert not torch.allclose(traj[0], traj[1])
    for k, v in model.state_dict().items():
        assert torch.equal(v, original[k]), k
    with pytest.raises(ValueError, match="step, tokens_seen, state_dict"):
        pr_trajectory([(0, 0)], model, probe)


# --------------------------------------------------------------------- the integral and the ranking
def test_integral_hand_computed_on_log_tokens():
    pr = torch.tensor([[9.0, 1.0], [3.0, 0.5], [2.0, 4.0], [1.5, 1.0]]).reshape(4, 1, 2)
    tokens = [0, 10, 100, 1000]  # the tokens=0 checkpoint is dropped
    # head 0: f = 2, 1, 0.5 at x = ln10, ln100, ln1000 -> (2+1)/2*ln10 + (1+0.5)/2*ln10
    # head 1: f = 0, 3, 0                                 -> (0+3)/2*ln10 + (3+0)/2*ln10
    got = pr_integral(pr, tokens)
    assert got.shape == (1, 2)
    assert float(got[0, 0]) == pytest.approx(2.25 * math.log(10), rel=1e-6)
    assert float(got[0, 1]) == pytest.approx(3.0 * math.log(10), rel=1e-6)


def test_integral_over_tokens_and_errors():
    pr = torch.tensor([1.0, 3.0, 2.0]).reshape(3, 1, 1)
    assert float(pr_integral(pr, [0, 2, 6], x="tokens")) == pytest.approx((0 + 2) / 2 * 2 + (2 + 1) / 2 * 4)
    with pytest.raises(ValueError, match="strictly increasing"):
        pr_integral(pr, [1, 1, 2])
    with pytest.raises(ValueError, match="n_ckpt"):
        pr_integral(pr, [1, 2])
    with pytest.raises(ValueError, match="at least two"):
        pr_integral(pr[:2], [0, 5])
    with pytest.raises(ValueError, match="x"):
        pr_integral(pr, [1, 2, 3], x="steps")


def test_rank_heads_orders_and_puts_nan_last():
    score = torch.tensor([[1.0, float("nan")], [5.0, 2.0]])
    assert [n for n, _ in rank_heads(score)] == ["a1.h0", "a1.h1", "a0.h0", "a0.h1"]
    assert rank_heads(score, k=1) == [("a1.h0", 5.0)]


# --------------------------------------------------------------------- timing
def test_emergence_timing_by_hand():
    pr = torch.tensor([[5.0, 1.2, 1.5, 3.0, 5.0, 6.0], [2.0, 2.0, 2.0, 2.0, 2.0, 1.0]]).T.reshape(6, 1, 2)
    sel = torch.tensor([[1.0, 2.0, 10.0, 40.0, 60.0, 80.0], [1.0] * 6]).T.reshape(6, 1, 2)
    t = emergence_timing(pr, sel)  # min 1.2 at 1; need PR >= 1.2 + 0.5*4.8 = 3.6 -> index 4
    assert t["a0.h0"] == (4, 4)
    assert t["a0.h1"] == (None, None)  # ends at its minimum; never selective
    assert emergence_timing(pr, sel, baseline="one")["a0.h0"] == (0, 4)  # PR-1 >= 2.5 already at init
    assert emergence_timing(pr, sel, pr_fraction=0.2, sel_threshold=5)["a0.h0"] == (3, 2)
    with pytest.raises(ValueError, match="baseline"):
        emergence_timing(pr, sel, baseline="max")


def test_checkpoints_from_a_trainer_result():
    from types import SimpleNamespace

    from tutorial_lib.methods.spectral import as_checkpoint_list

    sds = {s: make_tiny_model("planted", seed=s + 1).state_dict() for s in (0, 5, 1)}
    res = SimpleNamespace(checkpoints=sds, tokens_seen={0: 0, 1: 64, 5: 320})
    got = as_checkpoint_list(res)
    assert [(s, t) for s, t, _ in got] == [(0, 0), (1, 64), (5, 320)]
    assert got[1][2] is sds[1]
    toks, a_pos = planted_pair_tokens(12)
    traj = pr_trajectory(res, make_tiny_model("planted"), PlantedPairProbe(toks, a_pos))
    assert torch.allclose(traj[2], head_participation_ratios(make_tiny_model("planted", seed=6), toks), rtol=1e-5)
    with pytest.raises(ValueError, match="empty"):
        as_checkpoint_list([])


# --------------------------------------------------------------------- every family the papers used
from family_reference import pr as family_pr, query_rows  # noqa: E402
from tutorial_lib.methods import spectral as spectral_mod  # noqa: E402
from tutorial_lib.methods.selectivity import collect_query_activations  # noqa: E402
from tutorial_lib.zoo.families import FAMILIES  # noqa: E402

FAMILY_T, FAMILY_V = 20, 61


def family_probe(n=12, seed=1):
    return PlantedPairProbe(*planted_pair_tokens(n, FAMILY_T, FAMILY_V, seed=seed))


from family_reference import family_model  # noqa: E402,F401  (one stand-in model per family for these tests)


def reference_prs(model, z, space="z", definition="exp_entropy"):
    L, H = model.cfg.n_layers, model.cfg.n_heads
    X = z if space == "z" else torch.stack([torch.stack([z[:, l, h] @ model.blocks[l].attn.W_O[h].detach()
                                                         for h in range(H)], 1) for l in range(L)], 1)
    return torch.tensor([[family_pr(X[:, l, h], definition) for h in range(H)] for l in range(L)], dtype=torch.float64)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_family_query_rows_and_prs_match_the_slow_reference(family):
    """Each query head's z and attention row at the query, per example, then the PR (both definitions, both
    spaces), against the reference rebuilt from hook_rot_q / hook_rot_k / hook_v (group h // rep, soft cap,
    local window) on a float64 tiny model of each family."""
    model, probe = family_model(family), family_probe()
    z_ref, p_ref = query_rows(model, probe.tokens, probe.query_pos)
    got = {}
    collect_query_activations(model, probe.tokens, probe.query_pos, lambda r, z, p: got.update(z=z, p=p), batch_size=64)
    assert got["z"].dtype == torch.float64
    assert torch.allclose(got["z"], z_ref, atol=1e-5, rtol=1e-4), float((got["z"] - z_ref).abs().max())
    assert torch.allclose(got["p"], p_ref, atol=1e-5, rtol=1e-4), float((got["p"] - p_ref).abs().max())
    for space in ("z", "result"):
        for definition in ("exp_entropy", "order2"):
            pr = head_participation_ratios(model, probe, definition=definition, space=space, batch_size=5)
            ref = reference_prs(model, z_ref, space, definition)
            assert torch.allclose(pr.double(), ref, atol=1e-5, rtol=1e-4), (family, space, definition)
    assert count_hooks(model) == 0


def fake_collector(**bug):
    """A stand-in for collect_query_activations that rebuilds z and the pattern by hand, with a planted bug."""
    def collect(model, tokens, query_pos, on_chunk, want_z=True, want_pattern=True, fwd_hooks=(), batch_size=64):
        z, p = query_rows(model, tokens, int(query_pos), fwd_hooks, **bug)
        on_chunk(slice(0, tokens.shape[0]), z if want_z else None, p if want_pattern else None)
    return collect


def test_planted_bugs_in_the_head_outputs_are_caught(monkeypatch):
    """The comparison above fails when z is rebuilt the tempting wrong ways: values of group h % groups instead
    of h // (heads / groups) (grouped families), q and k read before QK-norm and rotary, or Gemma 2's window and
    soft cap left out. (The library reads hook_z itself; the stand-in without a bug agrees with it.)"""
    probe = family_probe()
    models = {f: family_model(f) for f in ("gpt2", "llama", "qwen3", "gemma2", "olmo2")}
    worst = {}

    def gap(family, **bug):
        m = models[family]
        want = reference_prs(m, query_rows(m, probe.tokens, probe.query_pos)[0])
        with monkeypatch.context() as mp:
            mp.setattr(spectral_mod, "collect_query_activations", fake_collector(**bug))
            got = head_participation_ratios(m, probe).double()
        return float(((got - want).abs() / (1e-5 + 1e-4 * want.abs())).max())  # > 1: outside the tolerance

    for f in models:
        worst[f] = gap(f)
        assert worst[f] < 1, f  # the stand-in without a bug passes
    for f in ("llama", "qwen3", "gemma2"):
        assert gap(f, group=lambda h: h % 2) > 1, f
    for f in ("qwen3", "olmo2", "llama"):
        assert gap(f, pre_norm_qk=True) > 1, f
    assert gap("gemma2", window=False) > 1 and gap("gemma2", cap=False) > 1
    assert gap("gpt2", group=lambda h: h % 2) > 1  # plain attention: head h has its own values
