"""The one place that changes which activations a TransformerLens model computes and hooks.

An engine that takes a model apart needs a *view* of it: each head's q, k and v inputs as separate residual
streams (path patching, the edge engine), each head's result before the sum (a head's direct effect), the
MLP's input hooked (MLP receivers), and under grouped-query attention one key and value per *query* head, so
that every query head has k and v inputs of its own (the EAP-IG library's and MIB's receivers). These are
``cfg`` flags of the model; :func:`engine_view` sets the ones an engine asks for and restores every one of
them on exit, even after an exception. No module outside :mod:`tutorial_lib.core` sets them (a test reads the
sources for it).

The outputs never change: ungrouping repeats each key/value group once per query head, and the split inputs
are copies of the same residual stream until an engine patches one of them.

>>> import torch
>>> from transformer_lens import HookedTransformer, HookedTransformerConfig
>>> cfg = HookedTransformerConfig(n_layers=1, d_model=8, n_heads=2, d_head=4, d_mlp=16, n_ctx=4, d_vocab=5,
...                               act_fn="gelu", n_key_value_heads=1)
>>> model = HookedTransformer(cfg)
>>> with engine_view(model, split_qkv=True, mlp_in=True):
...     (model.cfg.use_split_qkv_input, model.cfg.ungroup_grouped_query_attention)
(True, True)
>>> (model.cfg.use_split_qkv_input, model.cfg.ungroup_grouped_query_attention)
(False, False)
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

# the cfg flags a view may change, all saved and restored together
VIEW_FLAGS = ("use_split_qkv_input", "use_attn_result", "use_hook_mlp_in", "use_attn_in",
              "ungroup_grouped_query_attention")


@contextmanager
def engine_view(model, *, split_qkv: bool = False, attn_result: bool = False, mlp_in: bool = False,
                ungroup: bool = True, frozen: bool = False) -> Iterator:
    """Inside the block, ``model`` computes and hooks what an engine asks for; on exit every flag of
    :data:`VIEW_FLAGS` (and, with ``frozen``, every parameter's ``requires_grad``) is as it was.

    * ``split_qkv``: ``hook_q_input`` / ``hook_k_input`` / ``hook_v_input`` ``[batch, pos, heads, d_model]``, one
      residual stream per head and input (otherwise off: one input norm per layer, not one per head);
    * ``attn_result``: ``attn.hook_result`` ``[batch, pos, heads, d_model]``, each head's ``z_h @ W_O[h]``;
    * ``mlp_in``: ``hook_mlp_in`` (ignored on an attention-only model, which has no MLP);
    * ``ungroup`` (default on): under grouped-query attention, one key and value per query head (a model without
      key/value groups is left as it is);
    * ``frozen``: no parameter takes gradients (attribution differentiates the activations only).

    ``use_attn_in`` is always off inside a view (it conflicts with split inputs and with grouped attention).
    """
    cfg = model.cfg
    saved = {flag: getattr(cfg, flag) for flag in VIEW_FLAGS}
    grads = [p.requires_grad for p in model.parameters()] if frozen else None
    try:
        cfg.use_split_qkv_input = bool(split_qkv)
        cfg.use_attn_result = bool(attn_result)
        cfg.use_attn_in = False
        cfg.use_hook_mlp_in = bool(mlp_in) and not getattr(cfg, "attn_only", False)
        if getattr(cfg, "n_key_value_heads", None) is not None:
            cfg.ungroup_grouped_query_attention = bool(ungroup)
        if frozen:
            for p in model.parameters():
                p.requires_grad_(False)
        yield model
    finally:
        for flag, value in saved.items():
            setattr(cfg, flag, value)
        if grads is not None:
            for p, g in zip(model.parameters(), grads):
                p.requires_grad_(g)


@contextmanager
def fused_norms(model) -> Iterator[None]:
    """Within the block, the model's float32/float64 LayerNorms (``LayerNorm``, ``LayerNormPre``) compute with one
    fused ``torch.nn.functional.layer_norm`` instead of TransformerLens' five elementwise steps (the same formula:
    centre, divide by ``sqrt(mean(x²) + eps)``, then ``w`` and ``b``; equal to float rounding). Under
    :func:`engine_view`'s split q/k/v inputs every head's input is normalized apart, so the norms are a third of an
    edge-patching forward; fused, they cost a fraction of it. A norm with a hook on its ``hook_scale`` or
    ``hook_normalized`` (which the fused path would skip) keeps TransformerLens' forward, as does any other norm
    (RMSNorm families). Restored on exit, even after an exception."""
    import torch
    from transformer_lens.components import LayerNorm, LayerNormPre

    swapped = []
    for module in model.modules():
        if type(module) not in (LayerNorm, LayerNormPre) or module.cfg.dtype not in (torch.float32, torch.float64):
            continue
        if module.hook_scale._forward_hooks or module.hook_normalized._forward_hooks:
            continue
        w, b = (module.w, module.b) if isinstance(module, LayerNorm) else (None, None)
        module.forward = (lambda x, n=_norm_length(module), w=w, b=b, eps=module.eps:
                          torch.nn.functional.layer_norm(x, (n,), w, b, eps))
        swapped.append(module)
    try:
        yield
    finally:
        for module in swapped:
            del module.forward


def _norm_length(module) -> int:
    """The length a norm module normalizes over (``d_model`` unless the module says otherwise)."""
    return int(getattr(module, "length", None) or module.cfg.d_model)
