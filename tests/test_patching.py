"""Activation patching sweeps, against plain hooked forwards."""
import warnings

import pytest
import torch

warnings.filterwarnings("ignore", category=DeprecationWarning)
torch.set_num_threads(1)

from conftest import TOY_BATCH as B, TOY_HEADS as H, TOY_LAYERS as L, TOY_POS as P, TOY_VOCAB as V, make_tiny_model  # noqa: E402

from tutorial_lib.core.hooks import assert_no_hooks  # noqa: E402
from tutorial_lib.methods.patching import (  # noqa: E402
    metric_label,
    patch_heads,
    patch_mlps,
    patch_resid,
)
from tutorial_lib.core.forward import position_mask  # noqa: E402


def ref_patch(model, base_tokens, new_tokens, hook_name, metric, head=None, pos=None):
    """Reference: one hooked forward, replacing one activation (optionally one head / positions)."""
    with torch.no_grad():
        _, cache = model.run_with_cache(new_tokens, names_filter=hook_name)

        def hook(act, hook):
            act = act.clone()
            idx = (slice(None), slice(None) if pos is None else pos)
            if head is not None:
                idx = idx + (head,)
            if isinstance(pos, torch.Tensor):  # per-example positions
                idx = (torch.arange(act.shape[0]), pos) + ((head,) if head is not None else ())
            act[idx] = cache[hook_name][idx]
            return act

        with model.hooks(fwd_hooks=[(hook_name, hook)]):
            return metric(model(base_tokens)).mean()


def metric_of(task):
    return task.metric  # logit difference at end_pos (answer 3 vs wrong 9)


@pytest.mark.parametrize("direction", ["noising", "denoising"])
def test_patch_heads_matches_reference(toy_model, toy_task, direction):
    res = patch_heads(toy_model, toy_task.clean, toy_task.corrupt, toy_task.metric, direction=direction,
                      logit_positions=toy_task.end_pos, progress=False)
    base, new = (toy_task.clean, toy_task.corrupt) if direction == "noising" else (toy_task.corrupt, toy_task.clean)
    with torch.no_grad():
        base_m = toy_task.metric(toy_model(base)).mean()
    assert res.values.shape == (L, H)
    for l in range(L):
        for h in range(H):
            ref = ref_patch(toy_model, base, new, f"blocks.{l}.attn.hook_z", toy_task.metric, head=h) - base_m
            assert abs(res.values[l, h] - ref) < 1e-4, (l, h)
    assert res.values.abs().max() > 0.05
    assert_no_hooks(toy_model)


def test_patch_heads_by_position_and_at_given_positions(toy_model, toy_task):
    res = patch_heads(toy_model, toy_task.clean, toy_task.corrupt, toy_task.metric, by_position=True, progress=False)
    assert res.values.shape == (L, H, P)
    with torch.no_grad():
        base_m = toy_task.metric(toy_model(toy_task.clean)).mean()
    for l, h, p in [(0, 1, 2), (1, 3, 2), (1, 0, 5), (2, 2, 7), (0, 0, 0)]:
        ref = ref_patch(toy_model, toy_task.clean, toy_task.corrupt, f"blocks.{l}.attn.hook_z", toy_task.metric, head=h, pos=p)
        assert abs(res.values[l, h, p] - (ref - base_m)) < 1e-4
    assert res.values[:, :, :2].abs().max() == 0  # before the corrupted token nothing differs
    at_end = patch_heads(toy_model, toy_task.clean, toy_task.corrupt, toy_task.metric, positions=toy_task.end_pos, progress=False)
    for l, h in [(1, 2), (2, 0)]:
        ref = ref_patch(toy_model, toy_task.clean, toy_task.corrupt, f"blocks.{l}.attn.hook_z", toy_task.metric, head=h,
                        pos=toy_task.end_pos)
        assert abs(at_end.values[l, h] - (ref - base_m)) < 1e-4


def test_rotary_model_by_position(toy_task):
    """With rotary positions the engine's later-position runs (cached keys, queries offset) match the hooks."""
    rot = make_tiny_model("toy", d_vocab=V, seed=4, positional_embedding_type="rotary", rotary_dim=8)
    heads = patch_heads(rot, toy_task.clean, toy_task.corrupt, toy_task.metric, by_position=True, progress=False)
    resid = patch_resid(rot, toy_task.clean, toy_task.corrupt, toy_task.metric, progress=False)
    with torch.no_grad():
        base_m = toy_task.metric(rot(toy_task.clean)).mean()
    for l, h, p in [(0, 1, 2), (1, 3, 2), (1, 0, 5), (2, 2, 7)]:
        ref = ref_patch(rot, toy_task.clean, toy_task.corrupt, f"blocks.{l}.attn.hook_z", toy_task.metric, head=h, pos=p)
        assert abs(heads.values[l, h, p] - (ref - base_m)) < 1e-4
    for l, p in [(1, 2), (2, 6)]:
        ref = ref_patch(rot, toy_task.clean, toy_task.corrupt, f"blocks.{l}.hook_resid_pre", toy_task.metric, pos=p)
        assert abs(resid.values[l, p] - (ref - base_m)) < 1e-4
    assert heads.values.abs().max() > 0.05


def test_patch_mlps_and_resid(toy_model, toy_task):
    with torch.no_grad():
        base_m = toy_task.metric(toy_model(toy_task.clean)).mean()
    mlps = patch_mlps(toy_model, toy_task.clean, toy_task.corrupt, toy_task.metric, progress=False)
    by_pos = patch_mlps(toy_model, toy_task.clean, toy_task.corrupt, toy_task.metric, by_position=True, progress=False)
    resid = patch_resid(toy_model, toy_task.clean, toy_task.corrupt, toy_task.metric, progress=False)
    assert mlps.values.shape == (L,) and by_pos.values.shape == (L, P) and resid.values.shape == (L, P)
    for l in range(L):
        ref = ref_patch(toy_model, toy_task.clean, toy_task.corrupt, f"blocks.{l}.hook_mlp_out", toy_task.metric)
        assert abs(mlps.values[l] - (ref - base_m)) < 1e-4
        for p in (2, 6):
            ref = ref_patch(toy_model, toy_task.clean, toy_task.corrupt, f"blocks.{l}.hook_mlp_out", toy_task.metric, pos=p)
            assert abs(by_pos.values[l, p] - (ref - base_m)) < 1e-4
            ref = ref_patch(toy_model, toy_task.clean, toy_task.corrupt, f"blocks.{l}.hook_resid_pre", toy_task.metric, pos=p)
            assert abs(resid.values[l, p] - (ref - base_m)) < 1e-4
    # patching the whole residual stream at the only corrupted position gives the corrupted run
    with torch.no_grad():
        corrupt_m = toy_task.metric(toy_model(toy_task.corrupt)).mean()
    assert abs(resid.values[0, 2] - (corrupt_m - base_m)) < 1e-4


def test_normalize_and_plot(toy_model, toy_task):
    raw = patch_heads(toy_model, toy_task.clean, toy_task.corrupt, toy_task.metric, progress=False, metric_name="logit diff")
    norm = patch_heads(toy_model, toy_task.clean, toy_task.corrupt, toy_task.metric, normalize=True, progress=False)
    with torch.no_grad():
        c = toy_task.metric(toy_model(toy_task.clean)).mean()
        k = toy_task.metric(toy_model(toy_task.corrupt)).mean()
    assert abs(raw.clean - c) < 1e-5 and abs(raw.corrupt - k) < 1e-5
    assert torch.allclose(norm.values, (raw.values + c - k) / (c - k), atol=1e-4)
    fig = raw.plot()
    hm = fig.data[0]
    assert hm.type == "heatmap" and hm.zmid == 0 and "logit diff" in hm.colorbar.title.text
    assert fig.layout.xaxis.title.text == "head" and fig.layout.yaxis.title.text == "layer"
    assert list(hm.y) == [f"a{l}" for l in range(L)]
    mlps = patch_mlps(toy_model, toy_task.clean, toy_task.corrupt, toy_task.metric, progress=False)
    bar = mlps.plot()
    assert bar.data[0].type == "bar" and len(bar.data[0].y) == L
    # one plain colour (not coloured by value, no colour bar) and the task's metric named on the axis
    assert isinstance(bar.data[0].marker.color, str) and bar.data[0].marker.colorbar.title.text is None
    assert mlps.metric_name == toy_task.metric_name and bar.layout.yaxis.title.text == f"Δ {toy_task.metric_name}"
    assert norm.metric_name == toy_task.metric_name and raw.metric_name == "logit diff"  # explicit names win
    assert metric_label(lambda logits: logits[:, -1, 0]) == "metric"


def test_bad_input(toy_model, toy_task):
    with pytest.raises(ValueError, match="differ in shape"):
        patch_heads(toy_model, toy_task.clean, toy_task.corrupt[:, :5], toy_task.metric, progress=False)
    with pytest.raises(ValueError, match="direction"):
        patch_mlps(toy_model, toy_task.clean, toy_task.corrupt, toy_task.metric, direction="up", progress=False)
    with pytest.raises(ValueError, match="positions"):
        position_mask(torch.tensor([1, 2]), toy_task.clean)
    with pytest.raises(ValueError, match="out of range"):
        position_mask(torch.full((B,), 99), toy_task.clean)


def test_a_metric_that_returns_nan_is_named_not_passed_through(toy_model, toy_task):
    """NaN on the unpatched run, and NaN only once a component is patched: both raise, naming the metric
    and (for the second) the component."""
    def nan_metric(logits):
        return torch.full((logits.shape[0],), float("nan"))

    with pytest.raises(ValueError, match=r"metric .*nan_metric returned NaN for 5 of 5 examples on the unpatched run"):
        patch_heads(toy_model, toy_task.clean, toy_task.corrupt, nan_metric, progress=False)
    with torch.no_grad():
        clean_logit = toy_model(toy_task.clean)[:, -1, 0]

    def nan_when_changed(logits):
        x = logits[:, -1, 0]
        return torch.where(torch.isclose(x, clean_logit, atol=1e-6), x, x.new_tensor(float("inf")))

    with pytest.raises(ValueError, match=r"nan_when_changed returned inf for .* when patching a0\.h"):
        patch_heads(toy_model, toy_task.clean, toy_task.corrupt, nan_when_changed, progress=False)
    assert_no_hooks(toy_model)


# ------------------------------------------------------------------ the papers' families (issue 28)
from tutorial_lib.zoo.families import FAMILIES, tiny_family_model  # noqa: E402


def family_data(seed=0, n=3, pos=12, vocab=61):
    """Random prompts with two corrupted positions (4 and 9), so the engine starts after position 0 and the
    local window (4 tokens, Gemma 2) lies between the two."""
    g = torch.Generator().manual_seed(seed)
    clean = torch.randint(1, vocab, (n, pos), generator=g)
    corrupt = clean.clone()
    corrupt[:, [4, 9]] = (clean[:, [4, 9]] + torch.randint(1, vocab - 1, (n, 2), generator=g)) % vocab
    answer = torch.randint(0, vocab, (n,), generator=g)
    metric = lambda logits: logits[torch.arange(n), -1].log_softmax(-1)[torch.arange(n), answer]  # noqa: E731
    return clean, corrupt, metric


def slow_patch(model, clean, corrupt, metric, hook, index=None, pos=None):
    """One intervention per forward, TransformerLens hooks only: ``hook``'s activation (its ``index`` slice, at
    position ``pos`` or every position) taken from the corrupted run."""
    _, cache = model.run_with_cache(corrupt, names_filter=hook)

    def patch(act, hook):
        act = act.clone()
        sel = (slice(None), slice(None) if pos is None else pos) + (() if index is None else (index,))
        act[sel] = cache[hook.name][sel]
        return act

    with torch.no_grad(), model.hooks(fwd_hooks=[(hook, patch)]):
        return metric(model(clean))


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_family_matches_the_slow_reference(family):
    """Heads, MLPs (every position and by position) and the residual stream, per example, against one
    hooked forward per intervention, on a tiny model of each family (float64)."""
    model = tiny_family_model(family, dtype=torch.float64, scale=2.5, seed=2)
    clean, corrupt, metric = family_data()
    base = metric(model(clean))
    tol = dict(atol=1e-5, rtol=1e-4)  # the bound; PatchingResult stores float32
    heads = patch_heads(model, clean, corrupt, metric, progress=False)
    mlps = patch_mlps(model, clean, corrupt, metric, progress=False)
    heads_pos = patch_heads(model, clean, corrupt, metric, by_position=True, progress=False)
    resid = patch_resid(model, clean, corrupt, metric, progress=False)
    cfg = model.cfg
    for l in range(cfg.n_layers):
        for h in range(cfg.n_heads):
            want = slow_patch(model, clean, corrupt, metric, f"blocks.{l}.attn.hook_z", h).mean() - base.mean()
            assert torch.allclose(heads.values[l, h].double(), want, **tol), (family, l, h)
            for p in (4, 9, 11):
                want = slow_patch(model, clean, corrupt, metric, f"blocks.{l}.attn.hook_z", h, p).mean() - base.mean()
                assert torch.allclose(heads_pos.values[l, h, p].double(), want, **tol), (family, l, h, p)
        want = slow_patch(model, clean, corrupt, metric, f"blocks.{l}.hook_mlp_out").mean() - base.mean()
        assert torch.allclose(mlps.values[l].double(), want, **tol), (family, l)
        for p in (4, 9):
            want = slow_patch(model, clean, corrupt, metric, f"blocks.{l}.hook_resid_pre", None, p).mean() - base.mean()
            assert torch.allclose(resid.values[l, p].double(), want, **tol), (family, l, p)
    assert heads.values.abs().max() > 1e-3  # the comparison is not between zeros
    assert_no_hooks(model)


def test_patch_each_per_example_on_every_family():
    from tutorial_lib.methods.patching import patch_each

    for family in ("gemma2", "olmo2", "pythia", "qwen3"):
        model = tiny_family_model(family, dtype=torch.float64, scale=2.5, seed=3)
        clean, corrupt, metric = family_data(seed=1)
        base = metric(model(clean))
        got = patch_each(model, clean, corrupt, metric, ["a0.h1", "a1.h3", "m0", "embed"])
        want = [slow_patch(model, clean, corrupt, metric, "blocks.0.attn.hook_z", 1),
                slow_patch(model, clean, corrupt, metric, "blocks.1.attn.hook_z", 3),
                slow_patch(model, clean, corrupt, metric, "blocks.0.hook_mlp_out"),
                slow_patch(model, clean, corrupt, metric, "blocks.0.hook_resid_pre")]
        assert torch.allclose(got.double(), torch.stack(want, 1) - base[:, None], atol=1e-5, rtol=1e-4), family


@pytest.mark.parametrize("family,expected", [("llama", {"a0.h1", "m0", "m1"}), ("gemma2", {"a0.h1", "m0", "m1"}),
                                             ("pythia", {"a0.h1", "m1"})])
def test_a_planted_path_is_found_by_every_engine(family, expected):
    """A known answer, one family per feature (grouped-query attention, sandwich norm, parallel blocks): with every
    head's W_O zeroed except a0.h1's, the corrupted token reaches the last position only through a0.h1, then the
    MLPs that read it (not m0 in a parallel block, which reads the layer's input). Fast activation patching and
    EAP's node scores rank exactly those components first, as the slow hooked reference does; every other head's
    exact effect is 0."""
    from tutorial_lib.methods.attribution import eap_scores
    from tutorial_lib.methods.patching import patch_each
    from tutorial_lib.tasks.base import TaskData

    model = tiny_family_model(family, dtype=torch.float64, scale=2.5, seed=4)
    with torch.no_grad():
        for l, block in enumerate(model.blocks):
            keep = torch.zeros(model.cfg.n_heads, 1, 1, dtype=torch.float64)
            if l == 0:
                keep[1] = 1.0
            block.attn.W_O.mul_(keep)
    clean, corrupt, metric = family_data(seed=5)
    comps = [f"a{l}.h{h}" for l in range(2) for h in range(4)] + ["m0", "m1"]
    fast = patch_each(model, clean, corrupt, metric, comps).abs().mean(0)
    base = metric(model(clean))
    slow = torch.stack([(slow_patch(model, clean, corrupt, metric, f"blocks.{int(c[1])}.attn.hook_z", int(c[-1]))
                         if c.startswith("a") else slow_patch(model, clean, corrupt, metric, f"blocks.{c[1:]}.hook_mlp_out"))
                        - base for c in comps], 1).abs().mean(0)
    rank = lambda v: [comps[i] for i in v.argsort(descending=True).tolist()]  # noqa: E731
    k = len(expected)
    assert set(rank(fast)[:k]) == set(rank(slow)[:k]) == expected, (rank(fast), rank(slow))
    assert all(float(fast[comps.index(c)]) < 1e-12 for c in comps if c not in expected)
    n = clean.shape[0]
    task = TaskData("planted", [""] * n, [""] * n, clean, corrupt, torch.full((n,), clean.shape[1] - 1),
                    torch.zeros(n, dtype=torch.long), torch.ones(n, 1, dtype=torch.long))
    eap = eap_scores(model, task, metric="answer_logprob", progress=False)
    eap_rank = [eap.components[i] for i in eap.nodes.mean(0).argsort(descending=True).tolist()]
    assert set(eap_rank[:k]) == expected, eap_rank


def test_all_position_sweeps_keep_each_examples_change(toy_model, toy_task):
    """per_example: each example's change from the baseline, its mean the sweep's value; one example checked
    against the hooked reference (a per-example slip -- the batch mean repeated -- would not match it)."""
    mlps = patch_mlps(toy_model, toy_task.clean, toy_task.corrupt, toy_task.metric, progress=False)
    heads = patch_heads(toy_model, toy_task.clean, toy_task.corrupt, toy_task.metric, progress=False)
    assert mlps.per_example.shape == (L, B) and heads.per_example.shape == (L, H, B)
    assert torch.allclose(mlps.per_example.mean(-1), mlps.values, atol=1e-5)
    assert torch.allclose(heads.per_example.mean(-1), heads.values, atol=1e-5)
    one = toy_task.subset([1])
    with torch.no_grad():
        base = one.metric(toy_model(one.clean)).mean()
    ref = ref_patch(toy_model, one.clean, one.corrupt, "blocks.1.hook_mlp_out", one.metric) - base
    assert abs(float(mlps.per_example[1, 1]) - float(ref)) < 1e-4
    assert mlps.per_example[1].std() > 1e-3  # the examples differ
    by_pos = patch_mlps(toy_model, toy_task.clean, toy_task.corrupt, toy_task.metric, by_position=True, progress=False)
    assert by_pos.per_example is None
