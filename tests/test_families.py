"""tutorial_lib.zoo.families: the papers' families from TransformerLens' own config conversion, offline."""
import pytest
import torch

from tutorial_lib.zoo.families import FAMILIES, family_config, tiny_family_model

torch.set_num_threads(1)


def test_each_family_keeps_its_architecture_flags():
    flags = {f: family_config(f) for f in FAMILIES}
    assert flags["llama"]["n_key_value_heads"] == 2 and flags["llama"]["gated_mlp"] and flags["llama"]["normalization_type"] == "RMS"
    g = flags["gemma2"]
    assert g["use_normalization_before_and_after"] and g["attn_scores_soft_cap"] == 50.0
    assert g["output_logits_soft_cap"] == 30.0 and g["window_size"] == 4 and g["attn_types"] == ["local", "global"]
    assert flags["qwen3"]["use_qk_norm"] and flags["qwen3"]["n_key_value_heads"] == 2
    assert flags["olmo2"]["original_architecture"] == "Olmo2ForCausalLM"
    assert flags["pythia"]["parallel_attn_mlp"] and flags["pythia"]["rotary_dim"] < flags["pythia"]["d_head"]
    assert flags["olmoe"]["num_experts"] == 4 and flags["olmoe"]["n_key_value_heads"] == flags["olmoe"]["n_heads"]
    assert all(d["d_model"] == 32 and d["n_layers"] == 2 and "tokenizer_name" not in d for d in flags.values())


def test_real_dimensions_and_bad_input():
    real = family_config("llama", shrink=False, n_layers=2)
    assert (real["d_model"], real["n_heads"], real["n_key_value_heads"], real["d_vocab"]) == (2048, 32, 8, 128256)
    assert real["n_layers"] == 2
    with pytest.raises(ValueError, match="unknown family 'gpt-5'.*accepted"):
        family_config("gpt-5")
    with pytest.raises(ValueError, match="unknown size field"):
        family_config("llama", d_modle=8)
    with pytest.raises(ValueError, match="shrink=False"):
        family_config("llama", shrink=False, d_model=8)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_tiny_models_run_and_the_window_matters(family):
    model = tiny_family_model(family, seed=0)
    tokens = torch.randint(0, 61, (2, 12))
    logits = model(tokens)
    assert logits.shape == (2, 12, 61) and torch.isfinite(logits).all()
    if family == "gemma2":  # layer 0 is local (4-token window), layer 1 global: the window matters at 12 tokens
        _, cache = model.run_with_cache(tokens)
        local, glob = cache["blocks.0.attn.hook_pattern"], cache["blocks.1.attn.hook_pattern"]
        assert local[:, :, 11, :8].abs().max() == 0 and local[:, :, 11, 8:].sum(-1).allclose(torch.ones(2, 4))
        assert glob[:, :, 11, :8].sum() > 0


@pytest.mark.parametrize("family", ["gpt2", "gemma2", "olmoe"])
def test_scale_multiplies_weight_matrices_and_leaves_norm_scales_and_biases(family):
    plain, scaled = tiny_family_model(family, seed=1), tiny_family_model(family, seed=1, scale=2.5)
    named = dict(plain.named_parameters())
    for name, p in scaled.named_parameters():
        want = named[name] * 2.5 if p.ndim >= 2 else named[name]
        assert torch.allclose(p, want), name
    assert torch.equal(scaled.blocks[0].ln1.w, plain.blocks[0].ln1.w)  # the review's case: ln1.w stays 1.0
