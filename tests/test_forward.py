"""Tests for tutorial_lib.core.forward: the shared forward engine, the one list of supported
architectures, the final LayerNorm plus unembedding, and the metric checks."""
import pytest
import torch

from conftest import make_tiny_model

from tutorial_lib.core.forward import (
    ENGINES,
    RunCache,
    apply_ln_final_and_unembed,
    architecture_problems,
    call_metric,
    check_finite,
    check_supported,
    evaluate_runs,
    first_differing_position,
    make_caches,
    position_mask,
    repeat_batch,
    run_downstream,
)
from tutorial_lib.methods.attribution import EAPGraph
from tutorial_lib.zoo.train import supports_fast_forward


# ------------------------------------------------------------------ supported architectures
def test_a_plain_model_is_supported_by_every_engine(tiny_model):
    for engine in ENGINES:
        assert architecture_problems(tiny_model, engine) == []
        check_supported(tiny_model, engine)
    assert supports_fast_forward(tiny_model)
    EAPGraph.from_model(tiny_model)
    with pytest.raises(ValueError, match="unknown engine 'jax'; accepted"):
        architecture_problems(tiny_model, "jax")


def test_the_papers_families_are_supported_by_eap_and_the_patching_engine():
    """Parallel blocks, grouped-query attention, post and sandwich norms and soft caps: EAP and the patching
    engine run them (their tests compare each family with a hooked reference); what stays refused is named
    with what is accepted."""
    from tutorial_lib.zoo.families import FAMILIES, tiny_family_model

    for family in FAMILIES:
        model = tiny_family_model(family)
        for engine in ("patching", "eap"):
            assert architecture_problems(model, engine) == [], (family, engine)
    parallel = make_tiny_model(parallel_attn_mlp=True)
    assert EAPGraph.from_model(parallel).parallel and architecture_problems(parallel, "patching") == []
    for kw in ({"n_key_value_heads": 2}, {"output_logits_soft_cap": 5.0}):
        assert architecture_problems(make_tiny_model(**kw), "patching") == []
    short = make_tiny_model(positional_embedding_type="shortformer")
    for engine in ENGINES:
        assert architecture_problems(short, engine) == [
            "positional_embedding_type='shortformer' (accepted: 'standard', 'rotary')"]
    with pytest.raises(ValueError, match="positional_embedding_type='shortformer'"):
        check_supported(short)
    bidirectional = make_tiny_model(attention_dir="bidirectional")
    assert architecture_problems(bidirectional, "patching") == ["bidirectional attention"]
    assert architecture_problems(bidirectional, "eap") == []


# ------------------------------------------------------------------ final LayerNorm + unembedding
@pytest.mark.parametrize("kw", [{}, {"normalization_type": None}, {"normalization_type": "RMS"},
                                {"output_logits_soft_cap": 3.0}], ids=["LN", "no-norm", "RMS", "soft-cap"])
def test_ln_final_and_unembed_reproduce_the_model(kw):
    model = make_tiny_model(**kw)
    tokens = torch.randint(0, 50, (3, 7), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        resid = model(tokens, stop_at_layer=model.cfg.n_layers)
        assert torch.allclose(apply_ln_final_and_unembed(model, resid), model(tokens), atol=1e-5)


# ------------------------------------------------------------------ caches and recomputation
def test_run_downstream_from_layer_zero_reproduces_the_run(tiny_model):
    tokens = torch.randint(0, 50, (2, 6), generator=torch.Generator().manual_seed(1))
    base = RunCache(tiny_model, tokens)
    with torch.no_grad():
        for start, p0 in [(0, 0), (1, 0), (1, 3)]:
            resid = base.resid_pre[start][:, p0:]
            out = run_downstream(tiny_model, base, resid, start, p0, 1)
            assert torch.allclose(out, base.final[:, p0:], atol=1e-5), (start, p0)


def test_evaluate_runs_with_nothing_patched_is_the_baseline(tiny_model):
    clean = torch.randint(0, 50, (4, 5), generator=torch.Generator().manual_seed(2))
    base, _ = make_caches(tiny_model, clean, clean.clone())
    metric = lambda logits: logits[:, -1, 0]  # noqa: E731
    vals = evaluate_runs(tiny_model, base, [["a"], ["b"]], None, None, metric)
    assert vals.shape == (2, 4) and torch.equal(vals[0], base.metric(metric)) and torch.equal(vals[1], vals[0])
    assert first_differing_position(clean, clean) is None
    other = clean.clone()
    other[1, 3] += 1
    assert first_differing_position(clean, other) == 3


def _tensors(obj):
    for v in vars(obj).values():
        for t in (v if isinstance(v, list) else [v]):
            if isinstance(t, torch.Tensor):
                yield t


def test_run_cache_keeps_only_the_logits_at_logit_positions(tiny_model):
    """With logit_positions a cache holds [batch, vocab] logits, not [batch, pos, vocab]; the metric sees them
    at those positions and NaN elsewhere, and a metric that reads elsewhere is refused."""
    tokens = torch.randint(0, 50, (4, 6), generator=torch.Generator().manual_seed(3))
    end = torch.tensor([5, 3, 5, -2])  # negative positions count from the end, as in position_mask
    B, P, V = 4, 6, tiny_model.cfg.d_vocab
    base = RunCache(tiny_model, tokens, logit_positions=end)
    assert base.logit_rows.shape == (B, V)
    assert not any(t.shape[-1] == V and t.numel() >= B * P * V for t in _tensors(base)), "full logits kept"
    with torch.no_grad():
        full = tiny_model(tokens)
    ar = torch.arange(B)
    assert torch.allclose(base.logits[ar, end % P], full[ar, end % P], atol=1e-5)
    unread = torch.ones(B, P, dtype=torch.bool)
    unread[ar, end % P] = False
    assert torch.isnan(base.logits[unread]).all()  # everything the metric was not promised is NaN
    metric = lambda logits: logits[ar, end, 2] - logits[ar, end, 7]  # noqa: E731
    assert torch.allclose(base.metric(metric), metric(full), atol=1e-5)
    with pytest.raises(ValueError, match="outside logit_positions"):
        base.metric(lambda logits: logits[:, 0, 2])
    with pytest.raises(ValueError, match=r"logit_positions must be a \[batch=4\]"):
        RunCache(tiny_model, tokens, logit_positions=torch.tensor([1, 2]))
    everything = RunCache(tiny_model, tokens)  # no logit_positions: every position, as the model gives them
    assert everything.logits.shape == (B, P, V) and torch.allclose(everything.logits, full, atol=1e-5)


def test_evaluate_runs_on_kept_rows_equals_full_logits(tiny_model):
    """The same runs give the same metric whether the caches keep every position's logits or only END's."""
    g = torch.Generator().manual_seed(4)
    clean = torch.randint(0, 50, (3, 7), generator=g)
    corrupt = clean.clone()
    corrupt[:, 2] = torch.randint(0, 50, (3,), generator=g)
    end = torch.tensor([6, 4, 5])
    metric = lambda logits: logits[torch.arange(3), end, 1]  # noqa: E731

    def values(lp):
        base, new = make_caches(tiny_model, clean, corrupt, lp)

        def final_fn(runs, p0):  # run r adds r times the corrupted run's change of the last residual stream
            scale = torch.tensor(runs, dtype=torch.float)[:, None, None, None]
            return (base.final[None, :, p0:] + scale * (new.final - base.final)[None, :, p0:]).flatten(0, 1)
        return evaluate_runs(tiny_model, base, [0, 1, 2], final_fn, 2, metric, lp, chunk_size=2), base, new

    kept, base, new = values(end)
    full, _, _ = values(None)
    assert torch.allclose(kept, full, atol=1e-5)
    assert torch.allclose(kept[0], base.metric(metric), atol=1e-5) and torch.allclose(kept[1], new.metric(metric), atol=1e-5)
    with pytest.raises(ValueError, match="differ from the ones the baseline cache kept"):
        evaluate_runs(tiny_model, base, [1], lambda runs, p0: base.final[:, p0:], 2, metric, end - 1)
    with pytest.raises(ValueError, match="kept logits only at its logit_positions"):
        evaluate_runs(tiny_model, base, [1], lambda runs, p0: base.final[:, p0:], 2, metric, None)


def test_repeat_batch_stacks_copies_run_by_run():
    t = torch.arange(6).reshape(3, 2)
    out = repeat_batch(t, 2)
    assert out.shape == (6, 2) and torch.equal(out[:3], t) and torch.equal(out[3:], t)


# ------------------------------------------------------------------ metrics and positions
def test_metric_output_is_checked():
    logits = torch.zeros(3, 4, 5)

    def per_position(logits):
        return logits[:, :, 0]

    with pytest.raises(ValueError, match=r"metric must return a tensor \[batch=3\].*\(3, 4\) from .*per_position"):
        call_metric(per_position, logits, 3)
    out = call_metric(lambda x: x[:, -1, 0], logits, 3)
    assert out.shape == (3,) and not out.requires_grad
    check_finite(out, per_position, "here")

    def bad(logits):
        return logits

    with pytest.raises(ValueError, match=r"metric .*bad returned NaN and inf for 2 of 4 examples when patching m1"):
        check_finite(torch.tensor([0.0, float("nan"), float("inf"), 1.0]), bad, "when patching m1")


def test_position_mask_forms():
    tokens = torch.zeros(2, 4, dtype=torch.long)
    assert torch.equal(position_mask(None, tokens), torch.ones(2, 4))
    assert position_mask(1, tokens)[:, 1].tolist() == [1.0, 1.0]
    assert position_mask(torch.tensor([0, -1]), tokens).nonzero().tolist() == [[0, 0], [1, 3]]
    with pytest.raises(ValueError, match="out of range"):
        position_mask(torch.tensor([0, 4]), tokens)


def test_shared_caches_build_each_pair_once_and_only_while_nothing_changed():
    """Inside ``shared_caches`` the same (model, tokens, positions) gets the same pair back; other tokens, a
    parameter changed in place or an attached hook get a fresh pair; the block's end drops them all."""
    from tutorial_lib.core.forward import make_caches, shared_caches

    tiny_model = make_tiny_model()

    a = torch.randint(0, tiny_model.cfg.d_vocab, (3, 6), generator=torch.Generator().manual_seed(0))
    b = a.clone()
    b[:, 2] = (b[:, 2] + 1) % tiny_model.cfg.d_vocab
    end = torch.full((3,), 5)
    assert make_caches(tiny_model, a, b)[0] is not make_caches(tiny_model, a, b)[0]  # outside: no sharing
    with shared_caches():
        first = make_caches(tiny_model, a, b, end)
        assert make_caches(tiny_model, a.clone(), b.clone(), end) is first
        assert make_caches(tiny_model, b, a, end) is not first
        assert make_caches(tiny_model, a, b) is not first  # other logit positions
        tiny_model.hook_dict["blocks.0.hook_resid_pre"].add_hook(lambda act, hook: act)
        assert make_caches(tiny_model, a, b, end) is not first
        tiny_model.reset_hooks()
        with torch.no_grad():
            tiny_model.blocks[0].mlp.W_in.mul_(1.5)
        changed = make_caches(tiny_model, a, b, end)
        assert changed is not first and not torch.equal(changed[0].final, first[0].final)
        assert make_caches(tiny_model, a, b, end) is changed
    from tutorial_lib.core import forward
    assert forward._SHARED == []
