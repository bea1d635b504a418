import pytest
import torch

from tutorial_lib.core.circuits import run_with_ablation
from tutorial_lib.core.hooks import assert_no_hooks, count_hooks, hooked


def test_hook_removed_after_exception(tiny_model):
    tokens = torch.randint(0, 50, (2, 6))

    def exploding(act, hook):
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        with hooked(tiny_model, fwd_hooks=[("blocks.0.hook_mlp_out", exploding)]):
            tiny_model(tokens)
    assert count_hooks(tiny_model) == 0
    assert_no_hooks(tiny_model)


def test_hook_removed_after_exception_in_library_ablation(tiny_model):
    # a bad reference batch makes the resample hook raise mid-forward; nothing may stay attached
    tokens = torch.randint(0, 50, (3, 6))
    with pytest.raises(ValueError):
        run_with_ablation(tiny_model, tokens, ["a0.h1"], mode="resample", reference=torch.randint(0, 50, (2, 6)))
    assert count_hooks(tiny_model) == 0


def test_count_hooks_sees_a_leaked_hook(tiny_model):
    tiny_model.add_hook("blocks.0.hook_mlp_out", lambda act, hook: act)
    assert count_hooks(tiny_model) > 0
    with pytest.raises(RuntimeError, match="still attached"):
        assert_no_hooks(tiny_model)
    tiny_model.reset_hooks()
    assert count_hooks(tiny_model) == 0


def test_hooked_changes_output_only_inside(tiny_model):
    tokens = torch.randint(0, 50, (2, 6))
    base = tiny_model(tokens)
    with hooked(tiny_model, fwd_hooks=[("blocks.1.hook_mlp_out", lambda a, hook: a * 0)]):
        inside = tiny_model(tokens)
    after = tiny_model(tokens)
    assert not torch.allclose(base, inside)
    assert torch.allclose(base, after)


def test_hooked_checks_that_nothing_was_left_over(tiny_model):
    """A raw PyTorch hook registered inside the block survives TransformerLens' reset: hooked() says so."""
    tokens = torch.randint(0, 50, (2, 6))
    with pytest.raises(RuntimeError, match="left attached"):
        with hooked(tiny_model):
            handle = tiny_model.blocks[0].mlp.register_forward_hook(lambda m, i, o: o)
            tiny_model(tokens)
    handle.remove()
    with hooked(tiny_model, fwd_hooks=[("blocks.0.hook_mlp_out", lambda act, hook: act)]):
        tiny_model(tokens)
    assert count_hooks(tiny_model) == 0
