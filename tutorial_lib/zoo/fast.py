"""The trainer's fused forward pass: what ``model(tokens)`` computes, without hook points, on every family.

:func:`fast_forward` is what :func:`tutorial_lib.zoo.train.train` uses for training steps when
:func:`supports_fast_forward` says it reproduces the model (what it refuses is listed once, in
:func:`tutorial_lib.core.supported.architecture_problems`, engine ``"fast_forward"``). ``tests/test_fast.py`` checks
its logits, loss and gradients against the model's own forward on a tiny model of every family the papers used
(GPT-2, Llama 3.2, Gemma 2, Qwen3, OLMo-2, Pythia, OLMoE); ``tests/test_train.py`` on the zoo's shapes.

What it computes itself, in fused form (one matmul for Q, K and V; PyTorch's fused attention where it applies):

* **grouped-query attention** (Llama 3.2, Gemma 2, Qwen3; OLMoE writes plain attention the GQA way): the query
  heads and the key/value *groups* come out of one matmul; after their norms and rotary, each group is expanded
  so that query head ``h`` reads group ``h // (n_heads / n_key_value_heads)`` (``repeat_interleave``, as
  TransformerLens does);
* **QK-norm**: Qwen3's (``use_qk_norm``) per head over ``d_head``; the OLMo family's (OLMo-2, OLMoE) over the
  full projected vector (q over ``n_heads * d_head``, k over ``n_kv * d_head``); both before rotary; ``clip_qkv``
  after them;
* **rotary** from the layer's own sin/cos tables (partial rotary as in Pythia, Llama 3's NTK-by-parts, YaRN and
  Gemma's local bases live in those tables); GPT-J's adjacent pairs through the layer's ``rotate_every_two``;
* **attention** with the causal mask, Gemma 2's **local window** on its local layers (a boolean mask), and its
  **attention-score soft cap** ``cap * tanh(scores / cap)`` (the scores are then computed explicitly: the cap sits
  between the scores and the softmax, where the fused kernel has no place for it);
* **norms**: LayerNorm, LayerNormPre, RMSNorm, RMSNormPre or none, on the inputs (pre-norm); Gemma 2's
  **sandwich** norms (``ln1_post`` / ``ln2_post`` on the attention and MLP outputs, before the residual add);
  OLMo-2's **post-norm** (``ln1`` / ``ln2`` on the outputs, no norm on the inputs);
* Pythia's **parallel attention + MLP** (both read the block's input; the MLP never sees this layer's heads);
* **MLPs**: plain and gated (Llama, Gemma, Qwen, OLMo), with the model's own activation function;
* the final norm, the unembedding and the **logit soft cap**.

Where it calls the model's own module instead (exact, the module's hook points idle): **mixture-of-experts**
MLPs (OLMoE: the router's softmax, top-k and per-expert loop are ``blocks[l].mlp``'s own), MLPs with a
LayerNorm activation (SoLU), and a post-embedding LayerNorm (``model.embed``).

On the zoo's own architecture (plain attention, LayerNorm, learned or rotary positions) it runs the very
operations it always ran, in the same order, so the zoo's trained weights do not change.
"""
from __future__ import annotations

from typing import Callable, Optional

import torch
import torch.nn.functional as F
from jaxtyping import Int
from torch import Tensor

from ..core.arch import is_post_norm, is_sandwich
from ..core.supported import architecture_problems

_FAST_ACTS = {"gelu": F.gelu, "relu": F.relu, "silu": F.silu,
              "gelu_new": lambda x: F.gelu(x, approximate="tanh")}
_OLMO_QK_NORM = ("OlmoeForCausalLM", "Olmo2ForCausalLM", "Olmo3ForCausalLM")  # q/k norms over the full vector
_NORMS = ("LayerNorm", "LayerNormPre", "RMSNorm", "RMSNormPre", "Identity")


def supports_fast_forward(model) -> bool:
    """True if :func:`fast_forward` reproduces ``model(tokens)``.

    The architectures it refuses come from the shared list, :func:`tutorial_lib.core.supported.architecture_problems`
    (engine ``"fast_forward"``). Beyond architecture it needs: float32 or float64 weights (in half precision
    TransformerLens upcasts its norms to float32, which this does not copy), no hooks attached (they would not
    fire), no per-head hook settings asked for (``use_attn_result``, ``use_split_qkv_input``: whoever set them
    wants the hooked forward), and norm modules it knows.
    """
    cfg = getattr(model, "cfg", None)
    if cfg is None or not hasattr(model, "blocks") or not hasattr(model, "unembed"):
        return False
    if architecture_problems(model, "fast_forward"):
        return False
    if getattr(cfg, "use_attn_result", False) or getattr(cfg, "use_split_qkv_input", False):
        return False
    if cfg.dtype not in (torch.float32, torch.float64):
        return False
    norms = [m for b in model.blocks for m in (getattr(b, "ln1", None), getattr(b, "ln2", None),
                                               getattr(b, "ln1_post", None), getattr(b, "ln2_post", None))]
    if any(m is not None and type(m).__name__ not in _NORMS for m in norms):
        return False
    return not any(h.fwd_hooks or h.bwd_hooks for h in model.hook_dict.values())


def _norm(module, x: Tensor) -> Tensor:
    """``module(x)`` for the course's norm modules, without their hooks."""
    name = type(module).__name__
    if name.startswith("LayerNorm"):  # LayerNorm: w and b; LayerNormPre: neither
        return F.layer_norm(x, x.shape[-1:], getattr(module, "w", None), getattr(module, "b", None), module.eps)
    if name.startswith("RMSNorm"):  # RMSNorm: w; RMSNormPre: none
        return F.rms_norm(x, x.shape[-1:], getattr(module, "w", None), module.eps)
    if name == "Identity":
        return x
    raise ValueError(f"unknown norm module {name!r}; accepted: {_NORMS}")


def _plain_attention(cfg, att) -> bool:
    """Plain multi-head attention as in the zoo: the code path the zoo's weights were trained with."""
    return (cfg.n_key_value_heads is None and not cfg.use_qk_norm and cfg.original_architecture not in _OLMO_QK_NORM
            and getattr(cfg, "clip_qkv", None) is None)


def _qkv(cfg, att, h: Tensor, B: int, T: int) -> tuple[Tensor, Tensor, Tensor]:
    """Queries ``[B, H, T, dh]`` and key/value groups ``[B, G, T, dh]`` (``G = n_key_value_heads``, or ``H``),
    after the QK-norms and ``clip_qkv``, before rotary."""
    H, dh = cfg.n_heads, cfg.d_head
    if _plain_attention(cfg, att):
        W = torch.cat([att.W_Q, att.W_K, att.W_V], 0)  # [3H, d_model, d_head]
        bias = torch.cat([att.b_Q, att.b_K, att.b_V], 0)  # [3H, d_head]
        qkv = (h @ W.permute(1, 0, 2).reshape(cfg.d_model, 3 * H * dh) + bias.reshape(-1))
        q, k, v = qkv.view(B, T, 3, H, dh).permute(2, 0, 3, 1, 4)  # each [B, H, T, dh]
        return q, k, v
    grouped = cfg.n_key_value_heads is not None
    G = cfg.n_key_value_heads if grouped else H
    W_K, W_V, b_K, b_V = (att._W_K, att._W_V, att._b_K, att._b_V) if grouped else (att.W_K, att.W_V, att.b_K, att.b_V)
    W = torch.cat([att.W_Q, W_K, W_V], 0)  # [H + 2G, d_model, d_head]
    bias = torch.cat([att.b_Q, b_K, b_V], 0)
    qkv = h @ W.permute(1, 0, 2).reshape(cfg.d_model, (H + 2 * G) * dh) + bias.reshape(-1)
    q, k, v = qkv.split([H * dh, G * dh, G * dh], -1)  # [B, T, H*dh], [B, T, G*dh] x 2
    q, k, v = q.reshape(B, T, H, dh), k.reshape(B, T, G, dh), v.reshape(B, T, G, dh)
    if cfg.use_qk_norm:  # Qwen3: per head, over d_head
        q, k = _norm(att.q_norm, q), _norm(att.k_norm, k)
    if cfg.original_architecture in _OLMO_QK_NORM:  # OLMo: over the whole projected vector
        q = _norm(att.q_norm, q.reshape(B, T, H * dh)).reshape(B, T, H, dh)
        k = _norm(att.k_norm, k.reshape(B, T, G * dh)).reshape(B, T, G, dh)
    if getattr(cfg, "clip_qkv", None) is not None:
        c = cfg.clip_qkv
        q, k, v = q.clamp(-c, c), k.clamp(-c, c), v.clamp(-c, c)
    return q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)


def expand_groups(t: Tensor, n_heads: int) -> Tensor:
    """Key/value groups ``[B, G, T, dh]`` -> one per query head ``[B, n_heads, T, dh]``: head ``h`` reads group
    ``h // (n_heads / G)`` (TransformerLens' ``repeat_interleave``).

    >>> expand_groups(torch.arange(2.0).view(1, 2, 1, 1), 4).flatten().tolist()
    [0.0, 0.0, 1.0, 1.0]
    """
    G = t.shape[1]
    return t if G == n_heads else t.repeat_interleave(n_heads // G, dim=1)


def _attend(cfg, att, q: Tensor, k: Tensor, v: Tensor, T: int) -> Tensor:
    """Each query head's output ``z`` ``[B, H, T, dh]``: causal (local window where the layer has one), scaled by
    ``1 / attn_scale``, with the attention-score soft cap where the model has one."""
    scale = 1.0 / float(att.attn_scale)
    cap = getattr(cfg, "attn_scores_soft_cap", -1.0) or -1.0
    local = getattr(att, "attn_type", "global") == "local"
    if cap <= 0 and not local:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=scale)
    pos = torch.arange(T, device=q.device)
    mask = pos[None, :] <= pos[:, None]  # [query, key]
    if local:
        mask = mask & (pos[None, :] > pos[:, None] - cfg.window_size)
    if cap <= 0:
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale)
    scores = q @ k.transpose(-1, -2) / att.attn_scale
    scores = cap * torch.tanh(scores / cap)
    scores = scores.masked_fill(~mask, float("-inf"))
    return scores.softmax(-1) @ v


def _heads(model, att, h: Tensor, B: int, T: int, keep: Optional[Tensor] = None) -> Tensor:
    """The layer's per-head outputs, flattened ``[B, T, H * dh]`` (what ``W_O`` multiplies); ``keep``
    (``[B, 1, H, 1]``, 0 or 1) zeroes the heads it holds 0 for, row by row (head dropout)."""
    cfg = model.cfg
    q, k, v = _qkv(cfg, att, h, B, T)
    if cfg.positional_embedding_type == "rotary":
        q, k = (_rotary(att, t, cfg.rotary_dim, T) for t in (q, k))
    k, v = expand_groups(k, cfg.n_heads), expand_groups(v, cfg.n_heads)
    z = _attend(cfg, att, q, k, v, T)  # [B, H, T, dh]
    out = z.transpose(1, 2).reshape(B, T, cfg.n_heads * cfg.d_head)
    if keep is None:
        return out
    return (out.view(B, T, cfg.n_heads, cfg.d_head) * keep).view(B, T, cfg.n_heads * cfg.d_head)


def _mlp_core(blk, cfg, h: Tensor) -> Tensor:
    """The MLP's output *without* ``b_out`` (plain: ``act(h W_in + b_in) W_out``)."""
    mlp = blk.mlp
    act = _FAST_ACTS.get(cfg.act_fn) or mlp.act_fn
    if type(mlp).__name__ == "GatedMLP":
        return (act(h @ mlp.W_gate) * (h @ mlp.W_in) + mlp.b_in) @ mlp.W_out
    return act(h @ mlp.W_in + mlp.b_in) @ mlp.W_out


def _mlp(blk, cfg, h: Tensor) -> Tensor:
    """The MLP's output; mixture of experts and LayerNorm activations run the model's own module."""
    if type(blk.mlp).__name__ not in ("MLP", "GatedMLP") or cfg.is_layer_norm_activation():
        return blk.mlp(h)
    return _mlp_core(blk, cfg, h) + blk.mlp.b_out


def fast_forward(model, tokens: Int[Tensor, "batch pos"], stop_at_layer: Optional[int] = None,
                 head_keep: Optional[Callable] = None) -> Tensor:
    """``model(tokens)`` computed with fused kernels and no hook points (see the module docstring for what it
    fuses on each family and where it calls the model's own module).

    Same parameters, same maths (checked against ``model(tokens)`` on every family in the tests): 2-4x faster on
    a CPU for small models. Gradients flow into ``model``'s parameters, so the trainer uses it for the training
    steps (hooks are never active there). ``stop_at_layer=k`` returns the residual stream after ``k`` blocks
    (before ``ln_final``) instead of logits. Check :func:`supports_fast_forward` first. ``head_keep(B, H, dtype)``,
    called once per layer in order, returns a ``[B, 1, H, 1]`` mask of 0s and 1s: each row's heads held 0 are
    zero-ablated in that layer (the trainer's head dropout; ``None``: none).
    """
    cfg = model.cfg
    T = tokens.shape[1]
    x = model.embed(tokens) if getattr(cfg, "post_embedding_ln", False) else model.embed.W_E[tokens]
    if cfg.positional_embedding_type == "standard":
        x = x + model.pos_embed.W_pos[:T]
    n_layers = cfg.n_layers if stop_at_layer is None else stop_at_layer
    B = tokens.shape[0]
    post, sandwich, parallel = is_post_norm(cfg), is_sandwich(cfg), is_parallel(cfg)
    plain = not (post or sandwich or parallel)
    for layer in range(n_layers):
        blk = model.blocks[layer]
        att = blk.attn
        h = x if post else _norm(blk.ln1, x)
        z = _heads(model, att, h, B, T, None if head_keep is None else head_keep(B, cfg.n_heads, x.dtype))
        W_O = att.W_O.reshape(cfg.n_heads * cfg.d_head, cfg.d_model)
        if plain and _mlp_is_fused(blk, cfg):  # pre-norm and in sequence: the zoo's path, op for op
            x = x + z @ W_O + att.b_O
            if not cfg.attn_only:
                h = _norm(blk.ln2, x)
                x = x + _mlp_core(blk, cfg, h) + blk.mlp.b_out
            continue
        a = z @ W_O + att.b_O
        if sandwich:
            a = _norm(blk.ln1_post, a)
        if post:
            a = _norm(blk.ln1, a)
        if cfg.attn_only:
            x = x + a
            continue
        mlp_in = x if parallel else x + a
        m = _mlp(blk, cfg, mlp_in if post else _norm(blk.ln2, mlp_in))
        if sandwich:
            m = _norm(blk.ln2_post, m)
        if post:
            m = _norm(blk.ln2, m)
        x = x + a + m if parallel else mlp_in + m
    if stop_at_layer is not None:
        return x
    x = _norm(model.ln_final, x) if hasattr(model, "ln_final") else x
    logits = model.unembed(x)
    cap = getattr(cfg, "output_logits_soft_cap", -1.0) or -1.0
    return cap * torch.tanh(logits / cap) if cap > 0 else logits


def is_parallel(cfg) -> bool:
    """Pythia's (GPT-NeoX's) parallel block: attention and MLP both read the block's input."""
    return bool(getattr(cfg, "parallel_attn_mlp", False))


def _mlp_is_fused(blk, cfg) -> bool:
    return cfg.attn_only or (type(blk.mlp).__name__ in ("MLP", "GatedMLP") and not cfg.is_layer_norm_activation())


def _rotary(att, t: Tensor, rotary_dim: int, T: int) -> Tensor:
    """TransformerLens' rotary on ``t [B, heads, T, d_head]`` with the layer's own sin/cos (GPT-NeoX pairs
    ``i, i + rotary_dim / 2``; GPT-J's adjacent pairs through the layer's ``rotate_every_two``)."""
    if T > att.rotary_cos.shape[0]:  # as TransformerLens does when a sequence outgrows the table
        att._extend_rotary_embeddings(min(att.cfg.n_ctx, max(T, 2 * att.rotary_cos.shape[0])))
    rot, rest = t[..., :rotary_dim], t[..., rotary_dim:]
    if att.cfg.rotary_adjacent_pairs:
        flip = att.rotate_every_two(rot)
    else:
        half = rotary_dim // 2
        flip = torch.cat([-rot[..., half:], rot[..., :half]], -1)
    out = rot * att.rotary_cos[:T] + flip * att.rotary_sin[:T]
    return torch.cat([out, rest], -1) if rest.shape[-1] else out


def head_dropout_mask(p: float, generator: torch.Generator, device) -> Callable:
    """Head dropout's ``head_keep(B, H, dtype)`` for :func:`fast_forward`: ``[B, 1, H, 1]``, each head of each row
    kept (1) or zeroed (0, with probability ``p``). The draws come from ``generator`` on the CPU, so that a run
    draws the same masks on every device; the mask then moves to ``device``, where the activations live."""
    def head_keep(B: int, H: int, dtype) -> Tensor:
        return (torch.rand(B, 1, H, 1, generator=generator, device="cpu") >= p).to(device=device, dtype=dtype)
    return head_keep
