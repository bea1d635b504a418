"""The trainer's fused forward pass: the same maths as a ``HookedTransformer`` forward, without hook points.

:func:`fast_forward` is what :func:`tutorial_lib.zoo.train.train` uses for training steps when
:func:`supports_fast_forward` says the model's architecture allows it (the list of architectures is
:func:`tutorial_lib.core.forward.architecture_problems`); ``tests/test_train.py`` checks it against the model's own
forward for learned and rotary positions, every norm and attention-only models.
"""
from __future__ import annotations

from typing import Optional

import torch
import torch.nn.functional as F
from jaxtyping import Int
from torch import Tensor

from ..core.forward import architecture_problems

_FAST_ACTS = {"gelu": F.gelu, "relu": F.relu, "silu": F.silu,
              "gelu_new": lambda x: F.gelu(x, approximate="tanh")}


def supports_fast_forward(model) -> bool:
    """True if :func:`fast_forward` reproduces ``model``'s forward pass (a plain GPT-2-style HookedTransformer).

    The architectures no engine of the course runs (and those only EAP runs, such as
    ``parallel_attn_mlp``) come from the shared list, :func:`tutorial_lib.core.forward.architecture_problems`;
    the fused forward adds its own conditions (no split inputs or per-head results, plain MLPs and
    LayerNorm, float32, no hooks attached).
    """
    cfg = getattr(model, "cfg", None)
    if cfg is None or not hasattr(model, "blocks") or not hasattr(model, "unembed"):
        return False
    if architecture_problems(model, "fast_forward"):
        return False
    plain = dict(
        use_attn_result=False, use_split_qkv_input=False, gated_mlp=False, use_local_attn=False, use_qk_norm=False,
        clip_qkv=None, use_logn_attn=False, post_embedding_ln=False, use_attention_sinks=False,
        use_dynamic_ntk_rope=False, use_NTK_by_parts_rope=False, use_yarn_rope=False, num_experts=None,
        original_architecture=None, rotary_adjacent_pairs=False,
    )
    if any(getattr(cfg, k, v) != v for k, v in plain.items()):
        return False
    if cfg.normalization_type not in ("LN", "LNPre", None) or cfg.dtype != torch.float32:
        return False
    if not cfg.attn_only and cfg.act_fn not in _FAST_ACTS:
        return False
    return not any(h.fwd_hooks or h.bwd_hooks for h in model.hook_dict.values())


def _norm(module, x: Tensor, kind) -> Tensor:
    if kind is None:
        return x
    w = getattr(module, "w", None)
    return F.layer_norm(x, x.shape[-1:], w, getattr(module, "b", None), module.eps)


def fast_forward(model, tokens: Int[Tensor, "batch pos"], stop_at_layer: Optional[int] = None) -> Tensor:
    """``model(tokens)`` for a plain HookedTransformer, computed with fused kernels and no hook points.

    Same parameters, same maths (checked against ``model(tokens)`` in the tests), but one matmul for
    Q, K and V, PyTorch's fused causal attention, and no hook overhead: 2-4x faster on a CPU for small
    models. Gradients flow into ``model``'s parameters, so the trainer uses it for the training steps
    (hooks are never active there). ``stop_at_layer=model.cfg.n_layers`` returns the final residual
    stream (before ``ln_final``) instead of logits. Check :func:`supports_fast_forward` first.
    """
    cfg = model.cfg
    T = tokens.shape[1]
    x = model.embed.W_E[tokens]
    if cfg.positional_embedding_type == "standard":
        x = x + model.pos_embed.W_pos[:T]
    n_layers = cfg.n_layers if stop_at_layer is None else stop_at_layer
    B, H, dh = tokens.shape[0], cfg.n_heads, cfg.d_head
    for layer in range(n_layers):
        blk = model.blocks[layer]
        att = blk.attn
        h = _norm(blk.ln1, x, cfg.normalization_type)
        W = torch.cat([att.W_Q, att.W_K, att.W_V], 0)  # [3H, d_model, d_head]
        bias = torch.cat([att.b_Q, att.b_K, att.b_V], 0)  # [3H, d_head]
        qkv = (h @ W.permute(1, 0, 2).reshape(cfg.d_model, 3 * H * dh) + bias.reshape(-1))
        q, k, v = qkv.view(B, T, 3, H, dh).permute(2, 0, 3, 1, 4)  # each [B, H, T, dh]
        if cfg.positional_embedding_type == "rotary":
            q, k = (_rotary(att, t, cfg.rotary_dim, T) for t in (q, k))
        scale = 1.0 / float(att.attn_scale)
        z = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=scale)  # [B, H, T, dh]
        x = x + z.transpose(1, 2).reshape(B, T, H * dh) @ att.W_O.reshape(H * dh, cfg.d_model) + att.b_O
        if not cfg.attn_only:
            h = _norm(blk.ln2, x, cfg.normalization_type)
            mlp = blk.mlp
            x = x + _FAST_ACTS[cfg.act_fn](h @ mlp.W_in + mlp.b_in) @ mlp.W_out + mlp.b_out
    if stop_at_layer is not None:
        return x
    x = _norm(model.ln_final, x, cfg.normalization_type) if hasattr(model, "ln_final") else x
    return model.unembed(x)


def _rotary(att, t: Tensor, rotary_dim: int, T: int) -> Tensor:
    """TransformerLens' GPT-NeoX-style rotary on ``t [B, H, T, d_head]`` using the layer's own sin/cos."""
    rot, rest = t[..., :rotary_dim], t[..., rotary_dim:]
    half = rotary_dim // 2
    flip = torch.cat([-rot[..., half:], rot[..., :half]], -1)
    out = rot * att.rotary_cos[:T] + flip * att.rotary_sin[:T]
    return torch.cat([out, rest], -1) if rest.shape[-1] else out
