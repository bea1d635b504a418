"""Tests for tutorial_lib.zoo.fast: the trainer's fused forward computes what ``model(tokens)`` computes on a tiny
model of every family the papers used (logits, the residual stream part-way, the loss and every gradient), and
planted bugs -- key/value groups mis-mapped, a sandwich or post norm left out, a parallel MLP fed by its own
layer's heads, OLMo's QK-norm left out, the soft cap or the local window ignored -- make those comparisons fail."""
import doctest
import types
import warnings

import pytest
import torch

warnings.filterwarnings("ignore", category=DeprecationWarning)

from tutorial_lib.core.forward import architecture_problems  # noqa: E402
from tutorial_lib.zoo import fast  # noqa: E402
from tutorial_lib.zoo.families import FAMILIES, tiny_family_model  # noqa: E402
from tutorial_lib.zoo.train import masked_next_token_loss  # noqa: E402

torch.set_num_threads(1)
GROUPED = ("llama", "gemma2", "qwen3")  # fewer key/value heads than query heads


def tokens(n=3, T=20, seed=0, vocab=61):
    return torch.randint(0, vocab, (n, T), generator=torch.Generator().manual_seed(seed))


def worst(model, x=None) -> float:
    """Largest |fused - model(tokens)| over the logits."""
    x = tokens() if x is None else x
    with torch.no_grad():
        return float((fast.fast_forward(model, x) - model(x)).abs().max())


def test_module_doctests():
    assert doctest.testmod(fast).failed == 0


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_family_float64_logits_and_residual(family):
    """float64, weights x3 (so that every feature's effect is large): logits to 1e-10, and the residual stream
    after one block (``stop_at_layer``)."""
    model = tiny_family_model(family, dtype=torch.float64, scale=3.0, seed=1)
    assert architecture_problems(model, "fast_forward") == [] and fast.supports_fast_forward(model)
    x = tokens()
    with torch.no_grad():
        ref, got = model(x), fast.fast_forward(model, x)
        assert ref.abs().max() > 1.0
        assert torch.allclose(got, ref, atol=1e-10, rtol=1e-9), (family, float((got - ref).abs().max()))
        resid = fast.fast_forward(model, x, stop_at_layer=1)
        assert torch.allclose(resid, model(x, stop_at_layer=1), atol=1e-10, rtol=1e-9), family


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_family_float32_logits(family):
    """float32 at the default initialisation: logits to 1e-5 (+ 1e-4 relative), as the trainer runs them."""
    model = tiny_family_model(family, seed=2)
    assert fast.supports_fast_forward(model)
    x = tokens(seed=3)
    with torch.no_grad():
        ref, got = model(x), fast.fast_forward(model, x)
    assert torch.allclose(got, ref, atol=1e-5, rtol=1e-4), (family, float((got - ref).abs().max()))
    with model.hooks(fwd_hooks=[("blocks.0.hook_resid_pre", lambda a, hook: a)]):
        assert not fast.supports_fast_forward(model)  # hooks attached: the hooked forward must run


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_family_loss_and_gradients(family):
    """The trainer's loss through the fused forward equals it through the model's forward, and so does every
    parameter's gradient (float64): with a dense mask (full logits) and a sparse one (only the selected rows are
    unembedded, the logit soft cap included)."""
    x = tokens(n=4, T=16, seed=5)
    dense = torch.ones_like(x)
    sparse = torch.zeros_like(x)
    sparse[:, 5:8] = 1
    for mask in (dense, sparse):
        out = {}
        for use_fast in (False, True):
            model = tiny_family_model(family, dtype=torch.float64, scale=2.0, seed=1)
            loss = masked_next_token_loss(model, x, mask, fast=use_fast)
            loss.backward()
            out[use_fast] = (loss.item(), {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None})
        (l0, g0), (l1, g1) = out[False], out[True]
        assert abs(l0 - l1) < 1e-10, (family, l0, l1)
        assert g0.keys() == g1.keys()
        for n in g0:
            assert torch.allclose(g0[n], g1[n], atol=1e-9, rtol=1e-7), (family, n, float((g0[n] - g1[n]).abs().max()))


def test_the_sparse_loss_applies_the_logit_soft_cap():
    """Gemma 2: the trainer's loss on a few selected positions equals cross-entropy of ``model(tokens)``'s own
    (soft-capped) logits, through either forward."""
    model = tiny_family_model("gemma2", dtype=torch.float64, scale=3.0, seed=1)
    x = tokens(n=4, T=16, seed=6)
    mask = torch.zeros_like(x)
    mask[:, 4:6] = 1
    with torch.no_grad():
        logits = model(x)
        ref = torch.nn.functional.cross_entropy(logits[:, 4:6].reshape(-1, logits.shape[-1]), x[:, 5:7].reshape(-1))
        for use_fast in (False, True):
            assert abs(masked_next_token_loss(model, x, mask, fast=use_fast).item() - ref.item()) < 1e-10


def test_what_is_still_refused_is_named():
    model = tiny_family_model("llama")
    model.cfg.use_attention_sinks = True
    try:
        assert architecture_problems(model, "fast_forward") == [
            "use_attention_sinks=True (the fused forward does not implement it)"]
        assert not fast.supports_fast_forward(model)
        assert architecture_problems(model, "eap") == []
    finally:
        model.cfg.use_attention_sinks = False
    half = tiny_family_model("qwen3", dtype=torch.bfloat16)
    assert not fast.supports_fast_forward(half)  # TransformerLens upcasts its norms in half precision


# ------------------------------------------------------------------ planted bugs
def _models():
    from family_reference import family_model

    return {f: family_model(f) for f in FAMILIES}


def test_planted_bugs_are_caught(monkeypatch):
    models = _models()
    assert max(worst(m) for m in models.values()) < 1e-10
    with monkeypatch.context() as mp:  # query head h reads group h % groups instead of h // (heads / groups)
        mp.setattr(fast, "expand_groups", lambda t, n: t if t.shape[1] == n else t.repeat(1, n // t.shape[1], 1, 1))
        for f in GROUPED:
            assert worst(models[f]) > 1e-4, f
        assert worst(models["olmoe"]) < 1e-10 and worst(models["gpt2"]) < 1e-10  # one group per head: no change
    with monkeypatch.context() as mp:  # Gemma 2's ln1_post / ln2_post left out
        mp.setattr(fast, "is_sandwich", lambda cfg: False)
        assert worst(models["gemma2"]) > 1e-4
    with monkeypatch.context() as mp:  # OLMo-2's post-norm taken for a pre-norm
        mp.setattr(fast, "is_post_norm", lambda cfg: False)
        assert worst(models["olmo2"]) > 1e-4
    with monkeypatch.context() as mp:  # Pythia's MLP fed by its own layer's heads (run in sequence)
        mp.setattr(fast, "is_parallel", lambda cfg: False)
        assert worst(models["pythia"]) > 1e-4
    with monkeypatch.context() as mp:  # OLMo's QK-norm over the full vector left out
        mp.setattr(fast, "_OLMO_QK_NORM", ())
        assert worst(models["olmo2"]) > 1e-4 and worst(models["olmoe"]) > 1e-4
    real = fast._attend
    with monkeypatch.context() as mp:  # the attention-score soft cap ignored
        mp.setattr(fast, "_attend", lambda cfg, att, *a: real(types.SimpleNamespace(
            attn_scores_soft_cap=-1.0, window_size=cfg.window_size), att, *a))
        assert worst(models["gemma2"]) > 1e-4
    with monkeypatch.context() as mp:  # Gemma 2's local window ignored (every layer global)
        mp.setattr(fast, "_attend", lambda cfg, att, *a: real(cfg, types.SimpleNamespace(
            attn_scale=att.attn_scale, attn_type="global"), *a))
        assert worst(models["gemma2"]) > 1e-4


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_head_keep_zero_ablates_the_heads_it_drops(family):
    """``head_keep`` (the trainer's head dropout) against the model's own forward with each dropped head's
    ``hook_z`` zeroed in the rows that drop it: same logits; an all-ones mask changes nothing, bit for bit."""
    model = tiny_family_model(family, dtype=torch.float64, scale=3.0, seed=4)
    x = tokens(n=4, seed=5)
    L, H = model.cfg.n_layers, model.cfg.n_heads
    masks = (torch.rand(L, 4, H, generator=torch.Generator().manual_seed(6)) >= 0.4).double()
    calls = []

    def keep(B, n_heads, dtype):
        calls.append((B, n_heads))
        return masks[len(calls) - 1].to(dtype)[:, None, :, None]

    def zero(z, hook):
        layer = int(hook.name.split(".")[1])
        return z * masks[layer].to(z.dtype)[:, None, :, None]

    with torch.no_grad():
        got = fast.fast_forward(model, x, head_keep=keep)
        with model.hooks(fwd_hooks=[(lambda n: n.endswith("attn.hook_z"), zero)]):
            ref = model(x)
        assert calls == [(4, H)] * L
        assert torch.allclose(got, ref, atol=1e-10, rtol=1e-9), float((got - ref).abs().max())
        assert not torch.allclose(got, fast.fast_forward(model, x))
        ones = fast.fast_forward(model, x, head_keep=lambda B, n, dtype: torch.ones(B, 1, n, 1, dtype=dtype))
        assert torch.equal(ones, fast.fast_forward(model, x))
