"""Logit lens, PCA of an MLP input, linear probe and top-k neurons, against direct computations."""
import warnings

import numpy as np
import pytest
import torch

warnings.filterwarnings("ignore", category=DeprecationWarning)
torch.set_num_threads(1)

from conftest import make_tiny_model  # noqa: E402

from tutorial_lib.methods.lens import (  # noqa: E402
    activations,
    component_output,
    linear_probe,
    logit_lens,
    mlp_input_pca,
    topk_neuron_recovery,
)
from tutorial_lib.tasks.base import TaskData  # noqa: E402

L, H, B, P, V, D_MLP = 2, 4, 24, 7, 41, 32


@pytest.fixture(scope="module")
def model():
    return make_tiny_model(n_layers=L, n_heads=H, d_mlp=D_MLP, d_vocab=V, n_ctx=16, act_fn="gelu_new", seed=5, scale=2.0)


@pytest.fixture(scope="module")
def task():
    g = torch.Generator().manual_seed(2)
    clean = torch.randint(0, V, (B, P), generator=g)
    yy = torch.arange(B) % 6
    clean[:, 3] = 20 + yy  # the "YY" token carries the group
    corrupt = clean.clone()
    corrupt[:, 3] = 19
    end = torch.full((B,), P - 1)
    t = TaskData("toy", [""] * B, [""] * B, clean, corrupt, end, torch.full((B,), 3), torch.full((B, 1), 9),
                 positions={"YY": torch.full((B,), 3)})
    t.yy = yy
    t.year_ids = torch.arange(20, 30)
    return t


def test_logit_lens_components_sum_to_the_logits(model, task):
    """Σ over every component's lens (+ the bias terms) equals the model's END logits exactly."""
    toks = torch.as_tensor(task.year_ids)
    parts = ["embed"] + [f"a{l}.h{h}" for l in range(L) for h in range(H)] + [f"m{l}" for l in range(L)]
    total = sum(logit_lens(model, task, c).per_example for c in parts)
    with torch.no_grad():
        logits, cache = model.run_with_cache(task.clean)
    final = logits[torch.arange(B), task.end_pos][:, toks]
    scale = cache["ln_final.hook_scale"][torch.arange(B), task.end_pos]  # [B, 1]
    b_o = sum(model.blocks[l].attn.b_O for l in range(L))
    b_o_part = ((b_o - b_o.mean()) / scale * model.ln_final.w) @ model.W_U[:, toks]
    bias = model.ln_final.b @ model.W_U[:, toks] + model.b_U[toks]
    assert torch.allclose(total + b_o_part + bias, final, atol=1e-4)


def test_logit_lens_groups_and_plot(model, task):
    res = logit_lens(model, task, "m1")
    assert res.values.shape == (6, 10) and res.groups == list(range(6))
    for i, k in enumerate(res.groups):
        assert torch.allclose(res.values[i], res.per_example[task.yy == k].mean(0))
    # a head's output is its z times W_O, read at END
    out = component_output(model, task.clean, "a1.h2", task.end_pos)
    _, cache = model.run_with_cache(task.clean)
    z = cache["blocks.1.attn.hook_z"][torch.arange(B), task.end_pos, 2]
    assert torch.allclose(out, z @ model.W_O[1, 2], atol=1e-6)
    fig = res.plot()
    assert fig.data[0].type == "heatmap" and fig.data[0].zmid == 0
    assert fig.layout.yaxis.title.text == "YY" and "logit" in fig.data[0].colorbar.title.text
    assert fig.layout.yaxis.autorange != "reversed"  # YY increases upward, as in the year-probability heatmap
    with pytest.raises(ValueError, match="has no output"):
        logit_lens(model, task, "logits")
    with pytest.raises(ValueError, match="groups"):
        logit_lens(model, task, "m0", groups=torch.arange(3))


def test_pca_of_mlp_input(model, task):
    res = mlp_input_pca(model, task, 1)
    _, cache = model.run_with_cache(task.clean)
    x = cache["blocks.1.hook_resid_mid"][torch.arange(B), task.end_pos].numpy()
    xc = x - x.mean(0)
    _, s, vt = np.linalg.svd(xc, full_matrices=False)
    assert np.allclose(res.explained_variance_ratio, (s[:2] ** 2) / (s ** 2).sum(), atol=1e-4)
    assert np.allclose(np.abs(res.coords), np.abs(xc @ vt[:2].T), atol=1e-3)  # up to the sign of each PC
    assert np.array_equal(res.groups, task.yy.numpy())
    fig = res.plot()
    assert fig.layout.xaxis.title.text.startswith("PC1") and fig.data[0].marker.colorbar.title.text == "YY"


def test_linear_probe_on_known_data():
    rng = np.random.default_rng(0)
    X = torch.tensor(rng.normal(size=(400, 16)), dtype=torch.float32)
    w = rng.normal(size=16)
    y = np.round(X.numpy() @ w * 10 + 50)
    good = linear_probe(X, y, seed=1)
    assert good.r2_test > 0.99 and good.accuracy_within[2] > 0.9
    accs = [good.accuracy_within[k] for k in (0, 1, 2, 5)]
    assert accs == sorted(accs)
    again = linear_probe(X, y, seed=1)
    assert np.array_equal(again.test_index, good.test_index) and again.r2_test == good.r2_test
    assert not np.array_equal(linear_probe(X, y, seed=2).test_index, good.test_index)
    noise = linear_probe(X, rng.permutation(y), seed=1)
    assert noise.r2_test < 0.2
    with pytest.raises(ValueError, match="test_fraction"):
        linear_probe(X, y, test_fraction=1.5)


def test_activations_reads_the_right_hook(model, task):
    acts = activations(model, task.clean, "blocks.0.hook_resid_mid", task.positions["YY"])
    _, cache = model.run_with_cache(task.clean)
    assert torch.allclose(acts, cache["blocks.0.hook_resid_mid"][:, 3])
    with pytest.raises(ValueError, match="unknown hook"):
        activations(model, task.clean, "blocks.0.nope", task.end_pos)


def _metric_with_neurons(model, task, layer, keep):
    """Reference: clean run with the MLP's neurons outside ``keep`` set to their corrupted values at END."""
    name = f"blocks.{layer}.mlp.hook_post"
    _, cc = model.run_with_cache(task.corrupt)
    idx = (torch.arange(B), task.end_pos)

    def hook(act, hook):
        act = act.clone()
        for n in range(D_MLP):
            if n not in keep:
                act[idx[0], idx[1], n] = cc[name][idx[0], idx[1], n]
        return act
    with torch.no_grad(), model.hooks(fwd_hooks=[(name, hook)]):
        return float(task.metric(model(task.clean)).mean())


@pytest.mark.parametrize("rank_by", ["direct", "patching"])
def test_topk_neuron_recovery(model, task, rank_by):
    res = topk_neuron_recovery(model, task, 0, ks=[0, 3, 10, D_MLP], rank_by=rank_by)
    assert abs(res.recovered[0]) < 1e-6 and abs(res.recovered[-1] - 1) < 1e-5
    none = _metric_with_neurons(model, task, 0, set())
    full = _metric_with_neurons(model, task, 0, set(range(D_MLP)))
    assert abs(full - none) > 0.01 and abs(res.full_effect - (full - none)) < 1e-4
    top3 = set(res.ranking[:3].tolist())
    assert abs(res.recovered[1] - (_metric_with_neurons(model, task, 0, top3) - none) / (full - none)) < 1e-4
    assert list(res.scores.abs()[res.ranking]) == sorted(res.scores.abs().tolist(), reverse=True)
    fig = res.plot()  # log x axis ticked at exactly the k values measured (k = 0 cannot sit on it)
    assert fig.layout.xaxis.type == "log" and list(fig.layout.xaxis.tickvals) == [3, 10, D_MLP]
    assert list(fig.layout.xaxis.ticktext) == ["3", "10", str(D_MLP)]
    if rank_by == "patching":  # score = metric drop when that one neuron alone takes its corrupted value
        clean_m = _metric_with_neurons(model, task, 0, set(range(D_MLP)))
        for n in res.ranking[:2].tolist() + [int(res.ranking[-1])]:
            ref = clean_m - _metric_with_neurons(model, task, 0, set(range(D_MLP)) - {n})
            assert abs(res.scores[n] - ref) < 1e-4
    else:  # score = d metric / d(epsilon) along the neuron's direct path, ln_final scale frozen
        n = int(res.ranking[0])
        with torch.no_grad():
            logits, cache = model.run_with_cache(task.clean)
            _, cc = model.run_with_cache(task.corrupt)
        post = "blocks.0.mlp.hook_post"
        dpost = (cache[post] - cc[post])[torch.arange(B), task.end_pos, n]
        x = cache[f"blocks.{L - 1}.hook_resid_post"][torch.arange(B), task.end_pos]
        scale = cache["ln_final.hook_scale"][torch.arange(B), task.end_pos]
        eps = torch.zeros(B, requires_grad=True)
        xe = x + eps[:, None] * model.W_out[0][n]
        le = ((xe - xe.mean(-1, keepdim=True)) / scale * model.ln_final.w + model.ln_final.b) @ model.W_U + model.b_U
        full_logits = logits.clone()
        full_logits[torch.arange(B), task.end_pos] = le
        grad = torch.autograd.grad(task.metric(full_logits).sum(), eps)[0]
        assert abs(res.scores[n] - float((grad * dpost).mean())) < 1e-4
    fig = res.plot()
    assert fig.layout.xaxis.type == "log"


def test_topk_bad_input(model, task):
    with pytest.raises(ValueError, match="rank_by"):
        topk_neuron_recovery(model, task, 0, rank_by="vibes")
    with pytest.raises(ValueError, match="ks"):
        topk_neuron_recovery(model, task, 0, ks=[D_MLP + 1])
    with pytest.raises(ValueError, match="no MLP"):
        topk_neuron_recovery(model, task, 5)


def test_lens_summaries_read_the_triangle():
    from tutorial_lib.methods.lens import LensResult

    groups = [10, 50, 90]
    tri = torch.tensor([[1.0 if j > g else -1.0 for j in range(100)] for g in groups])
    band = torch.tensor([[1.0 if g < j <= g + 2 else 0.0 for j in range(100)] for g in groups])
    r = LensResult(tri, groups, [f"{j:02d}" for j in range(100)], "m0")
    assert r.above_minus_below() == pytest.approx(2.0)
    assert LensResult(-tri, groups, r.token_labels, "m0").above_minus_below() == pytest.approx(-2.0)
    assert LensResult(band, groups, r.token_labels, "m0").peak_offset() == 1.0


@pytest.mark.parametrize("family", ["llama", "gemma2", "pythia"])
def test_frozen_final_norm_scale_is_the_models_own_on_other_families(family, task):
    """The lens freezes ln_final's scale; it reads it without running the unembedding, and must get the value
    the model's own forward pass hooks (RMSNorm on Llama and Gemma 2, LayerNorm on Pythia)."""
    from tutorial_lib.methods.lens import _final_ln_linear
    from tutorial_lib.zoo.families import tiny_family_model

    m = tiny_family_model(family, seed=1, scale=2.0, d_vocab=V)
    tokens, pos = task.clean, task.end_pos
    apply, _ = _final_ln_linear(m, tokens, pos)
    with torch.no_grad():
        _, cache = m.run_with_cache(tokens, names_filter="ln_final.hook_scale")
    x = torch.randn(B, m.cfg.d_model, generator=torch.Generator().manual_seed(0))
    scale = cache["ln_final.hook_scale"][torch.arange(B), pos]  # [B, 1]
    centred = x - x.mean(-1, keepdim=True) if m.cfg.normalization_type in ("LN", "LNPre") else x
    want = centred / scale * (m.ln_final.w if hasattr(m.ln_final, "w") else 1)
    assert torch.allclose(apply(x), want, atol=1e-5), family


def test_component_output_runs_the_model_once_per_token_tensor():
    """Every sender's output read on the same clean and corrupted tokens costs one run of each (the last two token
    tensors are kept); the values are the hooks' own; a weight changed in place, or a hook attached, gets a new run."""
    from tutorial_lib.methods import lens

    model = make_tiny_model(seed=7)
    clean = torch.randint(0, model.cfg.d_vocab, (3, 6), generator=torch.Generator().manual_seed(1))
    corrupt = clean.flip(0)
    pos = torch.tensor([5, 4, 5])
    runs = []
    original = model.run_with_cache
    model.run_with_cache = lambda *a, **k: (runs.append(1), original(*a, **k))[1]
    names = ["embed", "a0.h1", "m0", "a1.h0", "m1"]
    got = {(n, i): component_output(model, t, n, pos) for n in names for i, t in enumerate((clean, corrupt))}
    assert len(runs) == 2
    ar = torch.arange(3)
    _, cache = original(corrupt)
    assert torch.equal(got["m1", 1], cache["blocks.1.hook_mlp_out"][ar, pos])
    assert torch.allclose(got["a1.h0", 1], cache["blocks.1.attn.hook_z"][ar, pos, 0] @ model.blocks[1].attn.W_O[0])
    assert torch.equal(got["embed", 1], cache["blocks.0.hook_resid_pre"][ar, pos])
    with torch.no_grad():
        model.blocks[1].mlp.W_out.mul_(2.0)
    assert not torch.equal(component_output(model, corrupt, "m1", pos), got["m1", 1]) and len(runs) == 3
    model.hook_dict["blocks.0.hook_resid_pre"].add_hook(lambda act, hook: act + 1.0)
    shifted = component_output(model, corrupt, "embed", pos)
    model.reset_hooks()
    assert torch.allclose(shifted, got["embed", 1] + 1.0) and len(runs) == 4
    assert len(lens._OUTPUTS) == 2
