"""What each architecture does around its heads and MLPs, for the engines that take a model apart.

The papers' families differ in where their norms sit and how their keys and values are shared:

* **pre-norm** (GPT-2, Pythia, Llama 3.2, Qwen3, OLMoE, the zoo): ``ln1`` normalises the attention's *input*;
  a head's result ``z_h @ W_O[h]`` is its additive share of the residual stream.
* **sandwich norm** (Gemma 2, ``use_normalization_before_and_after``): ``ln1`` on the input *and* ``ln1_post``
  on the attention's summed output; the MLP likewise (``ln2_post``, inside ``hook_mlp_out``).
* **post-norm** (OLMo-2): no norm on the attention's input; ``ln1`` on its summed output (and ``ln2`` on the
  MLP's, inside ``hook_mlp_out``).

With a norm on the summed attention output, a head's contribution to the residual stream is no longer
additive: patching one head changes the norm's scale for all. :func:`output_norm` names that norm (None when
there is none), :func:`normalize` applies any of the course's norms *without* firing its hooks, and
:func:`head_contributions` gives each head's exact contribution when it alone changes,
``N(A + Δ_h) - N(A)`` with ``A`` the layer's summed attention output.

Where the course agrees with the EAP-IG library here, and where not (read from the library's code):

* **evaluation** (edge patching, faithfulness): both pass the heads' outputs through Gemma 2's ``ln1_post``
  before a receiver reads them; the course also does so for OLMo-2's post-norm ``ln1``, which the library does
  not handle at all;
* **attribution** (EAP, EAP-IG scores): the library multiplies a head's output *before* ``ln1_post``
  (``hook_result``) by the gradient at receivers *after* it, two vectors on either side of the norm; the course
  multiplies the gradient by ``N(A + Δ_h) - N(A)``, the change the receiver actually sees when that head alone
  moves, so that the product is a first-order estimate of the edge's effect. On Gemma 2 and OLMo-2 the course's
  scores therefore differ from the library's by design; on pre-norm families the two are the same quantity.

Grouped-query attention (Llama 3.2, Gemma 2, Qwen3; OLMoE writes plain attention the GQA way): a head
component ``a5.h1`` is a *query* head, and its k and v inputs are its own, one per query head, as in the
EAP-IG library and MIB (TransformerLens' ``ungroup_grouped_query_attention``, set by
:func:`tutorial_lib.core.view.engine_view`).
"""
from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor


def is_post_norm(cfg) -> bool:
    """OLMo-2's post-norm: the attention and MLP *outputs* are normalised, their inputs are not."""
    from transformer_lens.utilities.architectures import POST_NORM_ARCHITECTURES

    return getattr(cfg, "original_architecture", None) in POST_NORM_ARCHITECTURES


def is_sandwich(cfg) -> bool:
    """Gemma 2's sandwich norm: a norm before *and* after attention and MLP."""
    return bool(getattr(cfg, "use_normalization_before_and_after", False))


def normalizes_output(cfg) -> bool:
    """True when a norm sits on the summed attention output (sandwich or post-norm)."""
    return is_post_norm(cfg) or is_sandwich(cfg)


def input_norm_type(cfg) -> Optional[str]:
    """The normalisation applied to the attention's input (``'LN'``, ``'LNPre'``, ``'RMS'``, ...) or None."""
    return None if is_post_norm(cfg) else cfg.normalization_type


def output_norm(model, layer: int):
    """The norm module applied to layer ``layer``'s summed attention output, or None (pre-norm)."""
    block = model.blocks[layer]
    if is_sandwich(model.cfg):
        return block.ln1_post
    if is_post_norm(model.cfg):
        return block.ln1
    return None


def normalize(module, x: Tensor) -> Tensor:
    """``module(x)`` for a TransformerLens LayerNorm / LayerNormPre / RMSNorm / RMSNormPre, computed here so
    that the module's hooks do not fire (engines call it inside hooked runs)."""
    name = type(module).__name__
    eps = module.eps
    if name.startswith("LayerNorm"):
        x = x - x.mean(-1, keepdim=True)
        x = x / (x.pow(2).mean(-1, keepdim=True) + eps).sqrt()
        return x * module.w + module.b if hasattr(module, "w") else x
    if name.startswith("RMSNorm"):
        x = x / (x.pow(2).mean(-1, keepdim=True) + eps).sqrt()
        return x * module.w if hasattr(module, "w") else x
    raise ValueError(f"unknown norm module {name!r}; accepted: LayerNorm, LayerNormPre, RMSNorm, RMSNormPre")


def through_output_norm(model, layer: int, z_base: Tensor, delta: Tensor, dim: int) -> Tensor:
    """How layer ``layer``'s contribution to the residual stream changes when its summed attention output changes
    by ``delta`` (``d_model`` last; its axis ``dim`` holds alternatives that ``z_base`` lacks): ``delta`` itself on a
    pre-norm model, ``N(A + delta) - N(A)`` where a norm ``N`` sits on the summed output, ``A = sum_h z_base_h @
    W_O[h] + b_O`` the baseline's sum (``z_base``: ``[..., pos, heads, d_head]``)."""
    norm = output_norm(model, layer)
    if norm is None:
        return delta
    attn = model.blocks[layer].attn
    A = (torch.einsum("...phk,hkd->...pd", z_base, attn.W_O) + attn.b_O).unsqueeze(dim)
    return normalize(norm, A + delta) - normalize(norm, A)


def head_contributions(model, layer: int, z_clean: Tensor, dz: Tensor) -> Tensor:
    """What changes in the residual stream when head ``h`` alone of layer ``layer`` takes ``z_clean + dz``:
    ``[batch, heads, pos, d_model]``.

    Pre-norm: ``dz_h @ W_O[h]`` (additive, exact). With a norm ``N`` on the summed output:
    ``N(A + dz_h @ W_O[h]) - N(A)`` (:func:`through_output_norm`): exact for one head patched alone, and what
    EAP's edge scores take as a head's change (the sum over heads is not the change when all of them move
    together; the norm's scale is shared).
    """
    delta = torch.einsum("bphk,hkd->bhpd", dz, model.blocks[layer].attn.W_O)
    return through_output_norm(model, layer, z_clean, delta, dim=1)


_OLMO_QK_NORM = ("OlmoeForCausalLM", "Olmo2ForCausalLM", "Olmo3ForCausalLM")


def shares_qk_norm(cfg) -> bool:
    """True where one QK-norm spans every head's queries (and keys) together: the OLMo family (OLMo-2, OLMoE).

    There a change to one head's q or k *input* changes the norm's scale, hence every head's queries or keys.
    The course's one definition of an edge into ``aL.hH.q`` / ``aL.hH.k`` is the model's own computation with
    that one input changed: every head of the layer moves as the shared norm makes it (the edge engine, EAP's
    gradient and path patching all keep those changes). Qwen3's QK-norm is per head: nothing is shared."""
    return getattr(cfg, "original_architecture", None) in _OLMO_QK_NORM and not getattr(cfg, "use_qk_norm", False)


def cached_keys(model, layer: int, k: Tensor) -> Tensor:
    """The keys a layer keeps in its key/value cache, from ``hook_k`` (``[batch, pos, heads, d_head]``): after the
    QK-norm (Qwen3: per head; the OLMo family: over all heads together) and any clipping, before rotary -- what
    TransformerLens appends to a cache entry, so that a run resumed from the cache matches a full forward."""
    attn, cfg = model.blocks[layer].attn, model.cfg
    if getattr(cfg, "use_qk_norm", False):
        k = normalize(attn.k_norm, k)
    elif shares_qk_norm(cfg) and getattr(attn, "k_norm", None) is not None:
        k = normalize(attn.k_norm, k.flatten(-2)).view_as(k)
    clip = getattr(cfg, "clip_qkv", None)
    return k.clamp(-clip, clip) if clip is not None else k


def cached_values(model, v: Tensor) -> Tensor:
    """The values a layer keeps in its cache, from ``hook_v`` (clipped where the family clips them)."""
    clip = getattr(model.cfg, "clip_qkv", None)
    return v.clamp(-clip, clip) if clip is not None else v


def mlp_output(model, layer: int, x: Tensor) -> Tensor:
    """What layer ``layer``'s MLP (router and experts included) adds to the residual stream (``hook_mlp_out``)
    when it reads ``x``: ``apply_mlp(ln2(x))`` (its ``ln2_post`` inside on Gemma 2), or ``apply_mlp(x)`` on
    OLMo-2, whose ``ln2`` sits on the output (inside ``apply_mlp``)."""
    block = model.blocks[layer]
    return block.apply_mlp(x) if is_post_norm(model.cfg) else block.apply_mlp(block.ln2(x))
