"""tutorial_lib.core.view: the one context manager that sets an engine's view of the model, and nothing else sets it."""
import re
from pathlib import Path

import pytest
import torch

from transformer_lens import HookedTransformer, HookedTransformerConfig

from tutorial_lib.core.view import VIEW_FLAGS, engine_view
from tutorial_lib.zoo.families import tiny_family_model

torch.set_num_threads(1)
LIB = Path(__file__).resolve().parents[1] / "tutorial_lib"


def test_ungrouped_gives_one_key_per_query_head_and_restores():
    model = tiny_family_model("llama")
    tokens = torch.randint(0, 61, (1, 5))
    base = model(tokens)
    with engine_view(model, split_qkv=True, mlp_in=True):
        _, cache = model.run_with_cache(tokens, names_filter=lambda n: n in ("blocks.0.attn.hook_k",
                                                                             "blocks.0.hook_k_input", "blocks.0.hook_mlp_in"))
        assert cache["blocks.0.attn.hook_k"].shape[2] == model.cfg.n_heads
        assert cache["blocks.0.hook_k_input"].shape[2] == model.cfg.n_heads
        assert "blocks.0.hook_mlp_in" in cache
        assert torch.allclose(model(tokens), base, atol=1e-5)
    assert model.cfg.ungroup_grouped_query_attention is False and model.cfg.use_split_qkv_input is False


def test_every_flag_restored_after_an_exception_and_weights_unfrozen():
    model = tiny_family_model("gpt2")
    model.cfg.use_attn_result = True  # a caller's own setting survives the view
    before = {f: getattr(model.cfg, f) for f in VIEW_FLAGS}
    with pytest.raises(RuntimeError, match="boom"):
        with engine_view(model, split_qkv=True, mlp_in=True, frozen=True):
            assert model.cfg.use_attn_result is False and model.cfg.use_split_qkv_input is True
            assert not any(p.requires_grad for p in model.parameters())
            raise RuntimeError("boom")
    assert {f: getattr(model.cfg, f) for f in VIEW_FLAGS} == before
    assert all(p.requires_grad for p in model.parameters())


def test_attention_only_models_get_no_mlp_hook():
    from transformer_lens import HookedTransformer, HookedTransformerConfig

    cfg = HookedTransformerConfig(n_layers=1, d_model=8, n_heads=2, d_head=4, n_ctx=4, d_vocab=5, attn_only=True)
    model = HookedTransformer(cfg)
    with engine_view(model, mlp_in=True):
        assert model.cfg.use_hook_mlp_in is False


# every way a module could set a view flag by hand: cfg.<flag> = ..., model.set_use_...(...), setattr(cfg, "<flag>", ...)
_SETTERS = re.compile(r"\.(use_split_qkv_input|use_attn_result|use_hook_mlp_in|use_attn_in|ungroup_grouped_query_attention)"
                      r"\s*(=(?!=)|,)|set_use_(split_qkv_input|attn_result|hook_mlp_in|attn_in)\(|"
                      r"set_ungroup_grouped_query_attention\(|setattr\([^)]*(use_split_qkv|use_attn|use_hook_mlp|ungroup)")


def test_no_module_outside_core_sets_the_view_flags():
    offenders = []
    for path in LIB.rglob("*.py"):
        if path.parent.name == "core" and path.name == "view.py":
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if _SETTERS.search(line.split("#")[0]):
                offenders.append(f"{path.relative_to(LIB)}:{n}: {line.strip()}")
    assert not offenders, "set the model's view through tutorial_lib.core.view.engine_view:\n" + "\n".join(offenders)


def test_the_scan_catches_a_planted_setter():
    for planted in ("cfg.use_split_qkv_input = True", "model.set_use_attn_result(True)",
                    "cfg.ungroup_grouped_query_attention = cfg.n_key_value_heads is not None",
                    "(cfg.use_split_qkv_input, cfg.use_hook_mlp_in) = saved"):
        assert _SETTERS.search(planted), planted
    assert not _SETTERS.search("if getattr(cfg, 'use_attn_result', False):")


@pytest.mark.parametrize("fold", [False, True], ids=["LayerNorm", "LayerNormPre"])
def test_fused_ops_give_the_same_outputs_and_restore(fold):
    """The fused LayerNorm is TransformerLens' formula (outputs equal to float rounding, with split q/k/v inputs
    too); a norm whose hook_scale is hooked keeps its own forward; every forward is restored, even after an error."""
    from tutorial_lib.core.view import engine_view, fused_ops

    cfg = HookedTransformerConfig(n_layers=2, d_model=16, n_heads=2, d_head=8, d_mlp=32, n_ctx=8, d_vocab=11,
                                  act_fn="gelu", normalization_type="LNPre" if fold else "LN", seed=0)
    model = HookedTransformer(cfg)
    if not fold:
        for ln in (model.blocks[0].ln1, model.blocks[1].ln2, model.ln_final):
            ln.w.data.uniform_(0.5, 1.5), ln.b.data.uniform_(-0.3, 0.3)  # weights that matter
    tokens = torch.randint(0, 11, (3, 8), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        want = model(tokens)
        with fused_ops(model):
            assert "forward" in vars(model.blocks[0].ln1)
            got = model(tokens)
        with engine_view(model, split_qkv=True), fused_ops(model):
            split = model(tokens)
    assert torch.allclose(got, want, atol=1e-5) and torch.allclose(split, want, atol=1e-5)
    assert not any("forward" in vars(m) for m in model.modules())
    seen = []
    model.blocks[0].ln1.hook_scale.add_hook(lambda act, hook: seen.append(act.shape))
    with pytest.raises(RuntimeError, match="boom"), fused_ops(model):
        assert "forward" not in vars(model.blocks[0].ln1) and "forward" in vars(model.blocks[0].ln2)
        model(tokens)
        raise RuntimeError("boom")
    assert seen and not any("forward" in vars(m) for m in model.modules())
    model.reset_hooks()


def test_fused_ops_gelu_and_unembed_are_the_models_own_bit_for_bit():
    """GPT-2's GELU in place and the unembedding with its transposed weight made once give exactly the model's
    logits; the unembedding's hooks still fire; ``norms=False`` leaves every norm alone; all restored on exit."""
    from tutorial_lib.core.view import fused_ops
    from transformer_lens.utilities.activation_functions import gelu_new

    cfg = HookedTransformerConfig(n_layers=2, d_model=16, n_heads=2, d_head=8, d_mlp=32, n_ctx=8, d_vocab=11,
                                  act_fn="gelu_new", normalization_type="LN", seed=0)
    model = HookedTransformer(cfg)
    tokens = torch.randint(0, 11, (3, 8), generator=torch.Generator().manual_seed(0))
    seen = []
    model.unembed.hook_out.add_hook(lambda act, hook: seen.append(act.shape))
    with torch.no_grad():
        want = model(tokens)
        with fused_ops(model, norms=False):
            assert model.blocks[0].mlp.act_fn is not gelu_new and "forward" in vars(model.unembed)
            assert not any("forward" in vars(m) for m in model.modules() if "LayerNorm" in type(m).__name__)
            got = model(tokens)
    assert torch.equal(got, want) and len(seen) == 2
    assert model.blocks[0].mlp.act_fn is gelu_new and not any("forward" in vars(m) for m in model.modules())
    model.reset_hooks()
    x = torch.randn(4, 32, requires_grad=True)  # autograd records the activation: TransformerLens' own runs
    with fused_ops(model):
        y = model.blocks[0].mlp.act_fn(x)
    y.sum().backward()
    assert torch.equal(y, gelu_new(x)) and x.grad is not None


def test_unembedding_stored_transposed_keeps_every_logit_and_skips_the_copy():
    """``W_U`` becomes the transpose of a contiguous tensor: the same values, shape and ``requires_grad``, the same
    logits bit for bit, and TransformerLens' ``W_U.T.contiguous()`` is then the stored weight itself (no copy);
    a second call changes nothing, and the layout survives a dtype change."""
    from tutorial_lib.core.view import unembedding_stored_transposed

    cfg = HookedTransformerConfig(n_layers=1, d_model=16, n_heads=2, d_head=8, d_mlp=32, n_ctx=8, d_vocab=23,
                                  act_fn="gelu_new", normalization_type="LN", seed=0)
    model = HookedTransformer(cfg)
    tokens = torch.randint(0, 23, (2, 8), generator=torch.Generator().manual_seed(0))
    before = model.unembed.W_U.detach().clone()
    with torch.no_grad():
        want = model(tokens)
    assert not model.unembed.W_U.T.is_contiguous()  # TransformerLens' own layout: a copy at every forward
    unembedding_stored_transposed(model)
    w = model.unembed.W_U
    assert isinstance(w, torch.nn.Parameter) and w.requires_grad and w.shape == (16, 23) and torch.equal(w, before)
    assert w.T.contiguous().data_ptr() == w.data_ptr()
    with torch.no_grad():
        assert torch.equal(model(tokens), want)
    unembedding_stored_transposed(model)
    assert model.unembed.W_U is w
    model.to(torch.float64)
    assert model.unembed.W_U.T.is_contiguous()
