"""tutorial_lib.core.arch: norms and grouped attention as each family has them."""
import pytest
import torch

from tutorial_lib.core import arch
from tutorial_lib.zoo.families import tiny_family_model

torch.set_num_threads(1)


@pytest.mark.parametrize("family", ["gpt2", "llama", "gemma2", "olmo2"])
def test_normalize_is_the_modules_own_forward_without_hooks(family):
    model = tiny_family_model(family, dtype=torch.float64, scale=2.0)
    x = torch.randn(2, 5, model.cfg.d_model, dtype=torch.float64)
    fired = []
    module = model.blocks[0].ln1
    with model.hooks(fwd_hooks=[(lambda n: "ln1" in n, lambda a, hook: fired.append(hook.name))]):
        got = arch.normalize(module, x)
    assert torch.allclose(got, module(x), atol=1e-12) and not fired


def test_output_norm_per_family():
    assert arch.output_norm(tiny_family_model("llama"), 0) is None
    gemma, olmo = tiny_family_model("gemma2"), tiny_family_model("olmo2")
    assert arch.output_norm(gemma, 1) is gemma.blocks[1].ln1_post
    assert arch.output_norm(olmo, 0) is olmo.blocks[0].ln1 and arch.input_norm_type(olmo.cfg) is None


@pytest.mark.parametrize("family", ["llama", "gemma2", "olmo2"])
def test_head_contribution_is_the_change_when_that_head_alone_moves(family):
    """Patch one head's z in the model and read hook_attn_out: the change equals head_contributions' row."""
    model = tiny_family_model(family, dtype=torch.float64, scale=2.0)
    tokens = torch.randint(0, 61, (2, 6))
    _, cache = model.run_with_cache(tokens)
    z = cache["blocks.0.attn.hook_z"]
    dz = torch.randn_like(z)
    contrib = arch.head_contributions(model, 0, z, dz)
    for h in range(model.cfg.n_heads):
        def patch(act, hook, h=h):
            act = act.clone()
            act[:, :, h] += dz[:, :, h]
            return act
        with model.hooks(fwd_hooks=[("blocks.0.attn.hook_z", patch)]):
            _, patched = model.run_with_cache(tokens, names_filter="blocks.0.hook_attn_out")
        change = patched["blocks.0.hook_attn_out"] - cache["blocks.0.hook_attn_out"]
        assert torch.allclose(contrib[:, h], change, atol=1e-10), (family, h)
