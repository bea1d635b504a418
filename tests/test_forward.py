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


def test_parallel_attention_and_mlp_is_rejected_everywhere_but_eap():
    model = make_tiny_model(parallel_attn_mlp=True)
    with pytest.raises(ValueError, match="the patching engine supports GPT-2-style models only; this model has "
                                         "parallel_attn_mlp=True"):
        check_supported(model)
    assert architecture_problems(model, "fast_forward") == ["parallel_attn_mlp=True"]
    assert not supports_fast_forward(model)  # the trainer's check reads the same list
    assert architecture_problems(model, "eap") == []  # EAP's graph has no head -> MLP edge within a layer
    assert EAPGraph.from_model(model).parallel


def test_grouped_query_and_positional_embeddings_are_named_with_what_is_accepted():
    gqa = make_tiny_model(n_key_value_heads=2)
    for engine in ENGINES:
        (problem,) = architecture_problems(gqa, engine)
        assert problem.startswith("grouped-query attention (n_key_value_heads=2; accepted:")
    with pytest.raises(ValueError, match="grouped-query"):
        EAPGraph.from_model(gqa)
    assert not supports_fast_forward(gqa)
    short = make_tiny_model(positional_embedding_type="shortformer")
    for engine in ENGINES:
        assert architecture_problems(short, engine) == [
            "positional_embedding_type='shortformer' (accepted: 'standard', 'rotary')"]


def test_logit_soft_cap_only_eap_handles():
    model = make_tiny_model(output_logits_soft_cap=5.0)
    assert architecture_problems(model, "patching") == ["output_logits_soft_cap=5.0"]
    assert architecture_problems(model, "fast_forward") == ["output_logits_soft_cap=5.0"]
    assert architecture_problems(model, "eap") == []


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
