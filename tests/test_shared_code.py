"""The frozen code shared by the embedding and the unembedding (issue 30): added while training, baked in after."""
import doctest

import pytest
import torch

from tutorial_lib.zoo import shared_code as shared_code_module
from tutorial_lib.zoo.shared_code import (attach_shared_code, bake_shared_code, baked_state_dict, has_shared_code,
                                          shared_code)


def tiny(seed=0):
    from transformer_lens import HookedTransformer, HookedTransformerConfig

    cfg = HookedTransformerConfig(n_layers=2, d_model=16, n_ctx=12, d_head=4, n_heads=4, d_mlp=32, d_vocab=40,
                                  act_fn="gelu", normalization_type="LN", seed=seed)
    return HookedTransformer(cfg).eval()


def test_code_is_seeded_with_rows_of_the_given_norm():
    c = shared_code(40, 16, 4.0, seed=3)
    assert c.shape == (40, 16) and torch.allclose(c.norm(dim=1), torch.full((40,), 4.0))
    assert torch.equal(c, shared_code(40, 16, 4.0, seed=3)) and not torch.equal(c, shared_code(40, 16, 4.0, seed=4))
    with pytest.raises(ValueError, match="scale"):
        shared_code(40, 16, 0.0, seed=3)


def test_attached_code_adds_to_both_ends_and_is_never_trained():
    model, plain = tiny(), tiny()
    code = shared_code(40, 16, 4.0, seed=1)
    attach_shared_code(model, scale=4.0, seed=1)
    assert has_shared_code(model) and not has_shared_code(plain)
    with torch.no_grad():  # the same sums written into a plain model by hand
        plain.embed.W_E += code
        plain.unembed.W_U += code.T
    tokens = torch.randint(0, 40, (3, 12), generator=torch.Generator().manual_seed(0))
    assert torch.allclose(model(tokens), plain(tokens), atol=1e-5)
    trained = [n for n, p in model.named_parameters()]
    assert "embed.parametrizations.W_E.original" in trained and not any("code" in n for n in trained)
    model(tokens).logsumexp(-1).mean().backward()
    assert model.embed.parametrizations.W_E.original.grad is not None
    with pytest.raises(ValueError, match="already"):
        attach_shared_code(model, scale=4.0, seed=1)


def test_baking_keeps_the_outputs_and_leaves_a_plain_model():
    model = tiny()
    attach_shared_code(model, scale=4.0, seed=1)
    tokens = torch.randint(0, 40, (3, 12), generator=torch.Generator().manual_seed(0))
    before, saved = model(tokens), {k: v.clone() for k, v in model.state_dict().items()}
    bake_shared_code(model)
    assert not has_shared_code(model) and torch.allclose(model(tokens), before, atol=1e-5)
    assert set(model.state_dict()) == set(tiny().state_dict())  # the plain keys: it loads as any zoo model
    baked = baked_state_dict(saved)  # a checkpoint written during training, converted
    assert set(baked) == set(model.state_dict())
    assert all(torch.allclose(baked[k], v, atol=1e-6) for k, v in model.state_dict().items())
    fresh = tiny(seed=5)
    fresh.load_state_dict(baked)
    assert torch.allclose(fresh(tokens), before, atol=1e-5)


def test_module_doctest():
    assert doctest.testmod(shared_code_module).failed == 0
