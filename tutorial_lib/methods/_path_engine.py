"""The path-patching engine behind :mod:`tutorial_lib.methods.path_patching` (which documents what it computes):
the receivers modes, the receivers' sites in the residual stream, what each run's senders write, and the final
residual stream of a chunk of runs with their paths patched."""
from __future__ import annotations

from enum import Enum
from typing import Union

import torch
from torch import Tensor

from ..core import arch
from ..core.components import Component, parse_many, sort_key
from ..core.view import engine_view
from ..core.forward import Runs, heads_change, repeat_batch, resid_after_attention_change, run_downstream


class ReceiversMode(str, Enum):
    """What a receiver's input is when there are several receivers at different depths.

    * ``INDEPENDENT`` (``"independent"``, the default; Wang et al. 2022, Goldowsky-Dill et al. 2023, and the
      greater-than paper's step into the circuit heads): each receiver's input is its baseline input plus
      only the direct sender -> receiver paths, ``baseline_input + Σ Δ_s``. No receiver sees another
      receiver's change. The receivers' changed outputs are still all added to the residual stream that
      the logits (and everything after the last receiver) read.
    * ``JOINT`` (``"joint"``): a receiver's input also holds the changed outputs of the receivers before
      it, ``baseline_input + (changes of earlier receivers) + Σ Δ_s`` (e.g. a5.h1's change at END reaches
      a9.h1's keys and values when both are receivers), so paths sender -> receiver -> later receiver
      are patched too.

    The two agree when all receivers read the residual stream at one place (the heads of one layer, one
    MLP, the logits, or the logits plus one layer's receivers: the logits always read every receiver's
    change).
    """

    INDEPENDENT = "independent"
    JOINT = "joint"


ReceiversModeLike = Union[ReceiversMode, str]


def as_receivers_mode(mode: ReceiversModeLike) -> ReceiversMode:
    """``mode`` as a :class:`ReceiversMode`; a ``ValueError`` names a bad value and what is accepted."""
    try:
        return ReceiversMode(mode)
    except ValueError:
        raise ValueError(f"unknown receivers_mode {mode!r}; accepted: "
                         f"{[m.value for m in ReceiversMode]}") from None


# ----------------------------------------------------------------------------------------- receivers
def parse_receivers(receivers, model) -> list[Component]:
    """Receiver names as components in residual order; a bare head (``"a5.h1"``) means its q, k and v inputs."""
    if isinstance(receivers, (str, Component)):
        receivers = [receivers]
    out: list[Component] = []
    for r in parse_many(list(receivers), model):
        if r.kind == "embed":
            raise ValueError("'embed' cannot be a receiver (it has no input); accepted receivers: 'logits', "
                             "'m<layer>' (an MLP's input), 'a<layer>.h<head>.q|k|v' (a head's input)")
        if r.kind == "head" and r.input is None:  # a bare head: all three of its inputs
            out += [Component("head", r.layer, r.head, x) for x in "qkv"]
        else:
            out.append(r)
    if not out:
        raise ValueError("receivers is empty; give at least one of 'logits', 'm<layer>', 'a<L>.h<H>.q|k|v'")
    return sorted(set(out), key=sort_key)


def _site_order(r: Component, parallel: bool = False) -> float:
    """Where receiver ``r`` reads the residual stream: heads of layer L at L, MLP L at L + 0.5 (at L when
    attention and MLP run in parallel and both read the layer's input), logits at inf."""
    if r.kind == "mlp" and parallel:
        return float(r.layer)
    return r.order


def _sites(receivers: list[Component], parallel: bool = False) -> list[tuple[float, list[Component]]]:
    """Receivers grouped by where they read the residual stream, in residual order."""
    groups: dict[float, list[Component]] = {}
    for r in receivers:
        groups.setdefault(_site_order(r, parallel), []).append(r)
    return sorted(groups.items())


# ----------------------------------------------------------------------------------------- engine
def _run_changes(run, model, base, new, sender_masks, p0: int) -> list[tuple[float, Tensor]]:
    """What one run's senders write into the residual stream, ``[(order, change [batch, pos - p0, d_model])]``:
    the embedding's and the MLPs' changes (additive in every family) and, per layer, its patched heads'
    change together (:func:`~tutorial_lib.core.forward.heads_change`: the output norm recomputed on the
    layer's patched sum where the family has one). Each sender's new value is used only at its positions."""
    out, heads_by_layer = [], {}
    for s in run:
        m = sender_masks[s][:, p0:, None]
        if s.kind == "embed":
            out.append((s.order, (new.resid_pre[0][:, p0:] - base.resid_pre[0][:, p0:]) * m))
        elif s.kind == "mlp":
            out.append((s.order, (new.mlp_out[s.layer][:, p0:] - base.mlp_out[s.layer][:, p0:]) * m))
        else:
            heads_by_layer.setdefault(s.layer, []).append(s)
    for layer, heads in heads_by_layer.items():
        dz = torch.zeros_like(base.z[layer][:, p0:])
        for s in heads:
            dz[:, :, s.head] = (new.z[layer][:, p0:, s.head] - base.z[layer][:, p0:, s.head]) * sender_masks[s][:, p0:, None]
        out.append((float(layer), heads_change(model, base, layer, dz[None], p0)[0]))
    return out


def per_query_head(kv: Tensor, cfg) -> Tensor:
    """Keys or values ``[batch, pos, n_key_value_heads, d_head]`` as one per query head (query head ``h`` reads
    group ``h // (n_heads / n_key_value_heads)``, as TransformerLens' grouped-query attention does)."""
    return kv.repeat_interleave(cfg.n_heads // (cfg.n_key_value_heads or cfg.n_heads), dim=2)


class _ZCaught(Exception):
    """Raised by the hook that catches a receiving layer's ``z``: its output projection is never needed."""


def _receivers_z_change(model, base, layer: int, inputs: dict, p0: int, n_rep: int) -> Tensor:
    """``z`` of layer ``layer``'s heads (positions p0:) when some heads' q/k/v inputs are replaced, minus the
    baseline's: ``[n_rep * batch, pos - p0, heads, d_head]``, zero for heads without a replaced input.

    ``inputs``: ``{head: {"q"|"k"|"v": residual stream [n_rep * batch, pos - p0, d_model]}}``. The layer's own
    attention module computes it (under grouped-query attention with one key and value per *query* head): its
    input norm, QK-norm, rotary, clipping, soft cap and local window are the model's own; earlier positions come
    from the baseline's cache. Only what differs between runs is computed per run: the module projects the
    baseline's stream once (``batch`` rows), its ``hook_q`` / ``hook_k`` / ``hook_v`` widen that to the
    ``n_rep`` runs and put in each replaced input's own projection (that head's slice of the module's weights),
    and the ``hook_z`` ends the module there.
    """
    from transformer_lens.cache.key_value_cache_entry import TransformerLensKeyValueCacheEntry as Entry
    from transformer_lens.utilities.attention import simple_attn_linear

    cfg, block = model.cfg, model.blocks[layer]
    attn, H = block.attn, cfg.n_heads
    norm = block.ln1 if arch.input_norm_type(cfg) is not None else None
    normed = (lambda t: arch.normalize(norm, t)) if norm is not None else (lambda t: t)  # noqa: E731
    entry = None
    if p0 > 0:
        widen = lambda t: repeat_batch(per_query_head(t[:, :p0], cfg), n_rep)  # noqa: E731
        entry = Entry(widen(base.k_cached[layer]), widen(base.v_cached[layer]), frozen=True)
    captured = {}

    def widened(letter):
        def hook(act, hook):  # act: the baseline's [batch, pos, heads, d_head]
            out = repeat_batch(act, n_rep).clone()
            given = [(head, inp[letter]) for head, inp in inputs.items() if letter in inp]
            if given:
                W, b = {"q": (attn.W_Q, attn.b_Q), "k": (attn.W_K, attn.b_K), "v": (attn.W_V, attn.b_V)}[letter]
                for head, value in given:
                    out[:, :, head] = simple_attn_linear(normed(value), W[head:head + 1], b[head:head + 1])[:, :, 0]
            return out
        return hook

    def catch(z, hook):
        captured["z"] = z
        raise _ZCaught

    hooks = [(f"blocks.{layer}.attn.hook_{letter}", widened(letter)) for letter in "qkv"]
    x = normed(base.resid_pre[layer][:, p0:])
    with engine_view(model), model.hooks(fwd_hooks=hooks + [(f"blocks.{layer}.attn.hook_z", catch)]):
        try:
            attn(query_input=x, key_input=x, value_input=x, past_kv_cache_entry=entry)
        except _ZCaught:
            pass
    dz = captured["z"] - repeat_batch(base.z[layer][:, p0:], n_rep)
    keep = torch.zeros(H, dtype=dz.dtype, device=dz.device)
    keep[list(inputs)] = 1.0
    if arch.shares_qk_norm(cfg) and any(set(given) & {"q", "k"} for given in inputs.values()):
        keep[:] = 1.0  # the OLMo family's QK-norm: a head's q/k input moves every head's scale (core.arch)
    return dz * keep[:, None]


def _final_resid_with_paths_patched(model, base, new, runs: Runs, receivers, sender_masks, receiver_masks,
                                    out_masks, p0: int, mode: ReceiversMode) -> Tensor:
    """The final residual stream (positions p0:) when each run's senders are patched along their direct paths
    into ``receivers`` (``mode`` says whether a receiver's input also holds earlier receivers' changes):
    ``[n_runs * batch, pos - p0, d_model]``, run ``r`` in rows ``r*batch:(r+1)*batch``."""
    B = base.resid_pre[0].shape[0]
    c = len(runs)
    parallel = bool(model.cfg.parallel_attn_mlp)
    changes = [_run_changes(run, model, base, new, sender_masks, p0) for run in runs]
    zero = torch.zeros_like(base.resid_pre[0][:, p0:])

    def delta_into(r: Component):
        """Σ of the senders' changes that reach receiver r (those before it), for each run: [c * B, pos, d]."""
        site = _site_order(r, parallel)
        rows = [sum((d for order, d in run if order < site), zero) * receiver_masks[r][:, p0:, None] for run in changes]
        return torch.stack(rows).reshape(c * B, *zero.shape[1:])

    # D: the receivers' changed outputs so far, added to the residual stream every later site reads
    D = torch.zeros(c * B, *zero.shape[1:], device=zero.device, dtype=zero.dtype)
    joint = mode is ReceiversMode.JOINT
    sites = _sites(receivers, parallel)
    for order, group in sites:
        if order == float("inf"):  # logits: the final residual, read through ln_final (every receiver's change)
            return repeat_batch(base.final[:, p0:], c) + D + delta_into(group[0])
        layer = group[0].layer
        seen = D if joint else 0.0  # what a receiver's input holds of earlier receivers' changes
        added = torch.zeros_like(D)
        heads = [r for r in group if r.kind == "head"]
        if heads:
            x_base = repeat_batch(base.resid_pre[layer][:, p0:], c) + seen
            by_head: dict[int, dict] = {}
            for r in heads:
                by_head.setdefault(r.head, {})[r.input] = x_base + delta_into(r)
            dz = _receivers_z_change(model, base, layer, by_head, p0, c)
            masks = {head: repeat_batch(out_masks[Component("head", layer, head)][:, p0:, None], c) for head in by_head}
            if arch.shares_qk_norm(model.cfg):  # heads moved through the shared QK-norm: the receivers' positions
                union = torch.stack(list(masks.values())).amax(0)
                masks = {head: masks.get(head, union) for head in range(model.cfg.n_heads)}
            for head, mask in masks.items():
                dz[:, :, head] *= mask
            added = added + heads_change(model, base, layer, dz.reshape(c, B, *dz.shape[1:]), p0).reshape(c * B, *zero.shape[1:])
        for r in group:
            if r.kind == "mlp":  # its input: the layer's input (parallel) or the stream after its attention
                read = base.resid_pre if parallel else base.resid_mid
                x = repeat_batch(read[layer][:, p0:], c) + seen + delta_into(r)
                added = added + arch.mlp_output(model, layer, x) - repeat_batch(base.mlp_out[layer][:, p0:], c)
        D = D + added
    # after the last receiver: recompute everything normally, from the first position a receiver's output can
    # change (before it the stream is the baseline's: its keys and values come from the cache)
    order, group = sites[-1]
    layer = group[0].layer
    p1 = _first_changed(receivers, sender_masks, receiver_masks, out_masks, p0)
    if p1 is None:  # no receiver's output moves anywhere
        return repeat_batch(base.final[:, p0:], c)
    D = D[:, p1 - p0:]
    if any(r.kind == "mlp" for r in group) or model.cfg.attn_only or parallel:
        resid = repeat_batch(base.resid_post[layer][:, p1:], c) + D
    else:  # head receivers of a sequential block: its MLP reads their change
        resid = resid_after_attention_change(model, base, layer, D, p1)
    out = run_downstream(model, base, resid, layer + 1, p1, c)
    return out if p1 == p0 else torch.cat([repeat_batch(base.final[:, p0:p1], c), out], dim=1)


def _first_changed(receivers, sender_masks, receiver_masks, out_masks, p0: int) -> "int | None":
    """The first position (``>= p0``) where some receiver's output can differ from the baseline's, or None.

    A head receiver changes only where its output is kept (``out_masks``; under a shared QK-norm, where any
    receiver head's is). An MLP receiver changes only where its input does: where it receives (its receiver
    mask) and some sender changed, or (joint mode) an earlier receiver did -- a position already counted."""
    senders = torch.stack([m.bool() for m in sender_masks.values()]).any(0)
    changed = torch.zeros_like(senders)
    for r in receivers:
        if r.kind == "head":
            changed |= out_masks[r.node].bool()
        elif r.kind == "mlp":
            changed |= receiver_masks[r].bool() & senders
    cols = changed[:, p0:].any(0).nonzero()
    return p0 + int(cols[0, 0]) if len(cols) else None
