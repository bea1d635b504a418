"""The one place that changes which activations a TransformerLens model computes and hooks.

An engine that takes a model apart needs a *view* of it: each head's q, k and v inputs as separate residual
streams (path patching, the edge engine), each head's result before the sum (a head's direct effect), the
MLP's input hooked (MLP receivers), and under grouped-query attention one key and value per *query* head, so
that every query head has k and v inputs of its own (the EAP-IG library's and MIB's receivers). These are
``cfg`` flags of the model; :func:`engine_view` sets the ones an engine asks for and restores every one of
them on exit, even after an exception. No module outside :mod:`tutorial_lib.core` sets them (a test reads the
sources for it).

The outputs never change: ungrouping repeats each key/value group once per query head, and the split inputs
are copies of the same residual stream until an engine patches one of them. Two helpers change only how fast a
model computes, never what: :func:`fused_ops` (inside an engine: GPT-2's GELU in place, fused LayerNorms where an
engine allows float rounding, the unembedding's weight transposed once) and :func:`unembedding_stored_transposed`
(at load: no copy of ``W_U`` at every forward).

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
def fused_ops(model, norms: bool = True) -> Iterator[None]:
    """Within the block, three of the model's steps run faster, computing the same formula:

    * float32/float64 LayerNorms (``LayerNorm``, ``LayerNormPre``): one ``torch.nn.functional.layer_norm``
      instead of TransformerLens' five steps (centre, divide by ``sqrt(mean(x²) + eps)``, then ``w`` and ``b``;
      equal to float rounding). Under :func:`engine_view`'s split q/k/v inputs every head's input is normalized
      apart, so the norms are a third of an edge-patching forward; fused, they cost a fraction of it. A norm with a hook on its
      ``hook_scale`` or ``hook_normalized`` (which the fused path would skip) keeps TransformerLens' forward, as
      does any other norm (RMSNorm families). ``norms=False`` keeps every norm as it is: an engine whose
      baseline must equal the model's own forward to the last bit (path patching) fuses only the GELU;
    * GPT-2's GELU (``gelu_new``): the same six steps, bit for bit, in place on one buffer instead of six new
      tensors (a third of its time). Its hooks (``hook_pre``, ``hook_post``) sit outside the activation and still
      fire; where autograd records the activation, TransformerLens' own runs;
    * the unembedding: TransformerLens transposes ``W_U`` into a new contiguous copy on every call (154 MB for
      GPT-2's vocabulary, a quarter of an unembedding's time); here the copy is made once, on entry, and the same
      ``F.linear`` reads it (equal bit for bit; ``hook_in`` and ``hook_out`` still fire). Nothing to do for a model
      whose ``W_U`` is already stored transposed (:func:`unembedding_stored_transposed`, as ``load_model`` does).

    Restored on exit, even after an exception."""
    import torch
    from transformer_lens.components import LayerNorm, LayerNormPre
    from transformer_lens.utilities.activation_functions import gelu_new

    swapped, acts = [], []
    for module in model.modules():
        if "act_fn" in vars(module) and module.act_fn is gelu_new:
            acts.append((module, module.act_fn))
            module.act_fn = _gelu_new_in_place
        if not norms or type(module) not in (LayerNorm, LayerNormPre):
            continue
        if module.cfg.dtype not in (torch.float32, torch.float64):
            continue
        if module.hook_scale._forward_hooks or module.hook_normalized._forward_hooks:
            continue
        w, b = (module.w, module.b) if isinstance(module, LayerNorm) else (None, None)
        module.forward = (lambda x, n=_norm_length(module), w=w, b=b, eps=module.eps:
                          torch.nn.functional.layer_norm(x, (n,), w, b, eps))
        swapped.append(module)
    unembed = getattr(model, "unembed", None)
    if (unembed is not None and type(unembed).__name__ == "Unembed" and "forward" not in vars(unembed)
            and not unembed.W_U.T.is_contiguous()):
        with torch.no_grad():
            w_t = unembed.W_U.T.contiguous()
        unembed.forward = lambda x, m=unembed, w_t=w_t: _unembed(m, w_t, x)
        swapped.append(unembed)
    try:
        yield
    finally:
        for module in swapped:
            del module.forward
        for module, fn in acts:
            module.act_fn = fn


def _gelu_new_in_place(x):
    """TransformerLens' ``gelu_new``, ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x³)))``, with the same operations
    in the same order (equal bit for bit) on one buffer."""
    import numpy as np
    import torch
    from transformer_lens.utilities.activation_functions import gelu_new

    if torch.is_grad_enabled() and x.requires_grad:
        return gelu_new(x)
    out = torch.pow(x, 3.0)
    out.mul_(0.044715).add_(x).mul_(np.sqrt(2.0 / np.pi)).tanh_().add_(1.0)
    return out.mul_(0.5 * x)


def _unembed(module, w_t, x):
    """``module``'s forward with its transposed ``W_U`` made once (TransformerLens' own where ``W_U`` takes a
    gradient, which the copy would not pass on)."""
    import torch

    if torch.is_grad_enabled() and module.W_U.requires_grad:
        return type(module).forward(module, x)
    return module.hook_out(torch.nn.functional.linear(module.hook_in(x), w_t, module.b_U))


def unembedding_stored_transposed(model) -> None:
    """Store ``W_U`` (``[d_model, d_vocab]``) as the transpose of a contiguous ``[d_vocab, d_model]`` tensor.

    TransformerLens' unembedding multiplies by ``W_U.T.contiguous()`` at every forward: with ``W_U`` stored this
    way that is the weight itself, not a fresh 154 MB copy (GPT-2's vocabulary; on a CPU the copy took half the
    time of a forward on a few prompts). Values, shape, dtype, device and ``requires_grad`` are unchanged, and so
    are the logits, bit for bit. :func:`tutorial_lib.zoo.load_model` does it for every model it loads."""
    import torch

    unembed = getattr(model, "unembed", None)
    w = getattr(unembed, "W_U", None)
    if not isinstance(w, torch.nn.Parameter) or w.ndim != 2 or w.T.is_contiguous():
        return
    with torch.no_grad():
        unembed.W_U = torch.nn.Parameter(w.detach().T.contiguous().T, requires_grad=w.requires_grad)


def _norm_length(module) -> int:
    """The length a norm module normalizes over (``d_model`` unless the module says otherwise)."""
    return int(getattr(module, "length", None) or module.cfg.d_model)
