"""The edge-patching engine behind :mod:`tutorial_lib.methods.faithfulness` (which documents what a circuit's
metric is): every edge outside a circuit carries its sender's corrupted value into its receiver, all circuits of a
chunk and all examples of a batch in one forward pass, corrected at each receiver with one batched product.

Every family of the course runs exactly (tested against a per-edge reference on each): under grouped-query
attention each query head has its own k and v inputs (the layer runs ungrouped); where a norm sits on the
attention's summed output (Gemma 2's ``ln1_post``, OLMo-2's ``ln1``) a receiver's input from a layer's heads is
that norm recomputed on the layer's *own mix for this receiver*, ``N(A - Σ_cut (out_h - corrupted out_h))`` with
``A`` the patched run's summed output, as the EAP-IG library's evaluation does; with parallel attention + MLP the
graph has no edge from a layer's heads into its own MLP.
"""
from __future__ import annotations

from typing import Optional

import torch
from jaxtyping import Bool, Float
from torch import Tensor

from ..core import arch
from ..core.circuits import ABLATION_MODES, real_token_mask, resample_sources, valid_mean
from ..core.device import work_budget_bytes
from ..core.forward import apply_ln_final_and_unembed, check_finite, first_differing_position
from ..core.progress import tqdm
from ..core.view import engine_view, fused_ops
from ..tasks.base import TaskData
from .attribution import EAPGraph, MetricArg, _metric_fn

BUDGET_BYTES = 2**29  # sender differences kept per chunk of circuits (~512 MB)


def _corrupt_outputs(model, graph: EAPGraph, tokens: Tensor, p0: int = 0) -> Tensor:
    """Every sender's output in one run, at positions ``p0:``: ``[batch, pos - p0, n_senders, d_model]``."""
    b, p = tokens.shape
    out = torch.zeros(b, p - p0, len(graph.senders), model.cfg.d_model, device=tokens.device, dtype=model.W_E.dtype)
    H = graph.n_heads

    def embed(act, hook):
        out[:, :, 0] = act[:, p0:]

    def z(act, hook):
        s0 = graph.sender_base(hook.layer())
        out[:, :, s0:s0 + H] = torch.einsum("bphk,hkd->bphd", act[:, p0:], model.blocks[hook.layer()].attn.W_O)

    def mlp(act, hook):
        out[:, :, graph.sender_base(hook.layer()) + H] = act[:, p0:]

    hooks = [("blocks.0.hook_resid_pre", embed), (lambda n: n.endswith("attn.hook_z"), z)]
    if graph.has_mlp:
        hooks.append((lambda n: n.endswith("hook_mlp_out"), mlp))
    with torch.no_grad(), model.hooks(fwd_hooks=hooks):
        model(tokens, stop_at_layer=graph.n_layers)
    return out


def _final_resid_with_edges_cut(model, graph: EAPGraph, tokens: Tensor, corrupt_out: Tensor, cut: Tensor,
                                end_pos: Tensor, p0: int = 0, prefix=None):
    """Final residual at ``end_pos`` with the edges where ``cut`` is True carrying corrupted values.

    ``tokens`` ``[b, p]`` (clean), ``corrupt_out`` ``[b, p - p0, S, d]``, ``cut`` ``[N, S, R]`` float 0/1 (1: the
    edge is outside the circuit). Runs ``N * b`` rows; returns ``[N * b, d_model]``. Before ``p0`` (the first
    position where clean and corrupted tokens differ) every run is the same, so nothing is corrected there.
    """
    N = cut.shape[0]
    b, p = tokens.shape
    q = p - p0
    S, d, H = len(graph.senders), model.cfg.d_model, graph.n_heads
    if prefix is not None:  # positions before p0, run once for every chunk (:func:`_shared_prefix`): N copies
        prefix = _repeated(prefix[0], N), prefix[1]
    rows = tokens.repeat(N, 1) if prefix is None else tokens[:, p0:].repeat(N, 1)
    o = p0 if prefix is None else 0  # where position p0 sits in the rows' activations
    # out(patched) - out(corrupted) per sender, laid out [N, S, b * q * d] so that the senders upstream of a
    # receiver are a prefix and each correction is one batched matrix product, without copying D
    D = torch.zeros(N, S, b, q, d, device=tokens.device, dtype=corrupt_out.dtype)
    c_out = corrupt_out.permute(2, 0, 1, 3)  # [S, b, q, d]
    pending: dict = {}
    idx = torch.arange(b, device=tokens.device)

    def embed(act, hook):
        D[:, 0] = act[:, o:].reshape(N, b, q, d) - c_out[None, 0]

    normed = arch.normalizes_output(model.cfg)
    A: dict = {}  # normed models: each layer's summed attention output in this run, [N, b, q, d]
    additive = cut
    if normed:  # the heads' edges go through their layer's output norm, per receiver (renormed below)
        additive = cut.clone()
        for l in range(graph.n_layers):
            additive[:, graph.sender_base(l):graph.sender_base(l) + H] = 0.0

    def renormed(l: int, weights: Tensor, at=None) -> Tensor:
        """How a receiver's input from layer l's heads changes when its cut heads (``weights`` [N, H, r]) take
        their corrupted outputs: N(A - X) - N(A), X = Σ_cut (out_h - corrupted out_h); [N, r, ...]."""
        s0, norm = graph.sender_base(l), arch.output_norm(model, l)
        Dl, Al = D[:, s0:s0 + H], A[l]
        if at is not None:  # the final receiver reads one position per example
            Dl, Al = Dl[:, :, idx, at], Al[:, idx, at]
        X = torch.einsum("nhr,nh...->nr...", weights, Dl)
        return arch.normalize(norm, Al[:, None] - X) - arch.normalize(norm, Al)[:, None]

    def correction(r0: int, r1: int, n_up: int) -> Tensor:
        """Σ over cut edges into receivers r0:r1 of the sender differences: [N, b, q, r1 - r0, d]."""
        out = torch.bmm(additive[:, :n_up, r0:r1].transpose(1, 2), D[:, :n_up].reshape(N, n_up, b * q * d))
        out = out.view(N, r1 - r0, b, q, d)
        if normed:
            for l in range(graph.n_layers):
                s0 = graph.sender_base(l)
                if s0 + H <= n_up:  # the layer's heads are upstream of these receivers
                    out = out - renormed(l, cut[:, s0:s0 + H, r0:r1])
        return out.permute(0, 2, 3, 1, 4)

    def qkv_in(act, hook):  # [N*b, p, H, d]
        l, letter = hook.layer(), hook.name[-7]
        r0 = graph.receiver_base(l)
        if letter == "q":
            pending[l] = correction(r0, r0 + 3 * H, graph.n_upstream[r0])
        j = "qkv".index(letter)
        act = act.clone()
        act[:, o:] -= pending[l][:, :, :, j * H:(j + 1) * H].reshape(N * b, q, H, d)
        return act

    def z(act, hook):
        l = hook.layer()
        s0 = graph.sender_base(l)
        res = torch.einsum("bphk,hkd->bhpd", act[:, o:], model.blocks[l].attn.W_O).reshape(N, b, H, q, d)
        D[:, s0:s0 + H] = res.transpose(1, 2) - c_out[None, s0:s0 + H]
        if normed:
            A[l] = res.sum(2) + model.blocks[l].attn.b_O
        pending.pop(l, None)

    def mlp_in(act, hook):
        l = hook.layer()
        r = graph.receiver_base(l) + 3 * H
        act = act.clone()
        act[:, o:] -= correction(r, r + 1, graph.n_upstream[r])[:, :, :, 0].reshape(N * b, q, d)
        return act

    def mlp_out(act, hook):
        s = graph.sender_base(hook.layer()) + H
        D[:, s] = act[:, o:].reshape(N, b, q, d) - c_out[None, s]

    hooks = [("blocks.0.hook_resid_pre", embed), (lambda n: n.endswith(("hook_q_input", "hook_k_input",
                                                                          "hook_v_input")), qkv_in),
             (lambda n: n.endswith("attn.hook_z"), z)]
    if graph.has_mlp:
        hooks += [(lambda n: n.endswith("hook_mlp_in"), mlp_in), (lambda n: n.endswith("hook_mlp_out"), mlp_out)]
    with torch.no_grad(), model.hooks(fwd_hooks=hooks):
        if prefix is None:
            resid = model(rows, stop_at_layer=graph.n_layers)  # [N*b, p, d]
        else:  # [N*b, q, d], the prefix's keys and values from its one run
            cache, before = prefix
            resid = model(rows, stop_at_layer=graph.n_layers, past_kv_cache=cache,
                          attention_mask=torch.ones_like(rows))
    R = len(graph.receivers)
    late = end_pos >= p0  # an END before p0 sees no difference at all
    if prefix is None:
        final = resid.view(N, b, p, d)[:, idx, end_pos].reshape(N * b, d)
    else:
        after = resid.view(N, b, q, d)[:, idx, (end_pos - p0).clamp(min=0)]
        early = before[idx, end_pos.clamp(max=p0 - 1)][None].expand(N, b, d)
        final = torch.where(late[None, :, None], after, early).reshape(N * b, d)
    if bool(late.any()):
        ends = (end_pos - p0).clamp(min=0)
        last = torch.einsum("nsbd,ns->nbd", D[:, :, idx, ends], additive[:, :, R - 1])
        if normed:
            for l in range(graph.n_layers):
                s0 = graph.sender_base(l)
                last = last - renormed(l, cut[:, s0:s0 + H, R - 1:R], at=ends)[:, 0]
        final = final - (last * late[None, :, None].to(D.dtype)).reshape(N * b, d)
    return final


def _shared_prefix(model, tokens: Tensor, p0: int):
    """Positions ``:p0`` are the same in every circuit's run (nothing differs before p0): run them once, on the ``b``
    clean prompts, and return ``(cache, resid)``: the model's own key/value cache of those positions (what its
    attention stores, after any q/k norm) and their final residual ``[b, p0, d]``. ``None`` where there is no
    prefix, or where the cache cannot hold the engine's view (grouped-query attention runs ungrouped there, one key
    per query head)."""
    from transformer_lens.cache.key_value_cache import TransformerLensKeyValueCache

    cfg = model.cfg
    if p0 <= 0 or cfg.n_key_value_heads not in (None, cfg.n_heads):
        return None
    cache = TransformerLensKeyValueCache.init_cache(cfg, tokens.device, batch_size=tokens.shape[0])
    with torch.no_grad():
        before = model(tokens[:, :p0], stop_at_layer=cfg.n_layers, past_kv_cache=cache,
                       attention_mask=torch.ones_like(tokens[:, :p0]))
    return cache, before


def _repeated(cache, N: int):
    """``cache`` for ``N`` stacked copies of its batch (copy ``r`` in rows ``r*b:(r+1)*b``, as the runs are laid out),
    frozen so that a forward pass reads it without appending."""
    from transformer_lens.cache.key_value_cache import TransformerLensKeyValueCache
    from transformer_lens.cache.key_value_cache_entry import TransformerLensKeyValueCacheEntry

    entries = [TransformerLensKeyValueCacheEntry(e.past_keys.repeat(N, 1, 1, 1), e.past_values.repeat(N, 1, 1, 1),
                                                 frozen=True) for e in cache.entries]
    return TransformerLensKeyValueCache(entries, cache.previous_attention_mask.repeat(N, 1), frozen=True)


def _chunk_size(model, graph: EAPGraph, b: int, p: int) -> int:  # p: the positions corrected (from p0 on)
    per = b * p * len(graph.senders) * model.cfg.d_model * 4 * 2  # D, plus the einsum's output
    return max(1, work_budget_bytes(model.cfg.device, BUDGET_BYTES) // max(per, 1))


EDGE_ABLATIONS = ("corrupt", *ABLATION_MODES)  # what a cut edge carries: the corrupted run's value, or an ablation


def _replacements(model, graph: EAPGraph, task: TaskData, ablation: str, seed: int) -> Tensor:
    """Every sender's replacement output on ``task``'s clean prompts (all examples, every position):
    ``[n, pos, n_senders, d_model]`` -- zero, the mean over the examples at each position (padding left out:
    :func:`~tutorial_lib.core.circuits.valid_mean`), or another example's (:func:`resample_sources`)."""
    out = _corrupt_outputs(model, graph, task.clean.to(model.W_E.device), 0)
    if ablation == "zero":
        return torch.zeros_like(out)
    if ablation == "mean":
        valid = real_token_mask(task.end_pos, task.clean.shape[1]).to(out.device)
        return valid_mean(out, valid, per_position=True).expand_as(out)
    return out[resample_sources(len(task), seed).to(out.device)]


@torch.no_grad()
def patched_metric(model, task: TaskData, circuits: Bool[Tensor, "n_circuits n_senders n_receivers"],
                   metric: MetricArg = "metric", batch_size: int = 64, chunk: Optional[int] = None,
                   progress: bool = False, ablation: str = "corrupt", seed: int = 0,
                   per_example: bool = False) -> Float[Tensor, "n_circuits"]:
    """The metric (mean over ``task``'s examples) of each circuit: edges outside it carry corrupted values.
    ``per_example=True``: each example's metric instead, ``[n_circuits, n_examples]`` (for a bootstrap).

    ``circuits``: ``[N, n_senders, n_receivers]`` bool (or one ``[n_senders, n_receivers]``); entries that are not
    edges of the graph are ignored. ``metric``: ``"metric"`` (the task's own, default), ``"logit_diff"``,
    ``"answer_logprob"`` or ``f(logits, sub_task)``. Circuits are run ``chunk`` at a time (default: what fits
    in ~512 MB), examples ``batch_size`` at a time. ``ablation`` (one of :data:`EDGE_ABLATIONS`): what an edge
    outside the circuit carries instead of its sender's clean output -- the corrupted run's (``"corrupt"``, the
    default), zero, the mean over the examples, or another example's (``"resample"``, drawn with ``seed``).
    """
    if ablation not in EDGE_ABLATIONS:
        raise ValueError(f"unknown edge ablation {ablation!r}; accepted: {EDGE_ABLATIONS}")
    graph = EAPGraph.from_model(model)
    circuits = _as_circuits(circuits, graph)
    fn = _metric_fn(task, metric, "end")
    dev = model.W_E.device
    edge = graph.edge_mask().to(dev)
    N, n = circuits.shape[0], len(task)
    total = torch.zeros(N, dtype=torch.float64, device="cpu")
    each = torch.zeros(N, n, dtype=torch.float32, device="cpu") if per_example else None
    with engine_view(model, split_qkv=True, mlp_in=True), fused_ops(model):
        replaced = None if ablation == "corrupt" else _replacements(model, graph, task, ablation, seed)
        for start in range(0, n, batch_size):
            idx = torch.arange(start, min(start + batch_size, n), device="cpu")  # rows of the task (on the CPU)
            clean, corrupt = task.clean[idx].to(dev), task.corrupt[idx].to(dev)
            end = task.end_pos[idx].to(dev)
            if replaced is None:
                p0 = first_differing_position(clean, corrupt)
                p0 = clean.shape[1] - 1 if p0 is None else p0  # identical prompts: every circuit is the clean run
                c_out = _corrupt_outputs(model, graph, corrupt, p0)
            else:  # an ablation replaces every position
                p0, c_out = 0, replaced[idx.to(dev)]
            prefix = _shared_prefix(model, clean, p0)  # the same for every chunk of circuits
            step = chunk or _chunk_size(model, graph, clean.shape[0], clean.shape[1] - p0)
            for c0 in tqdm(range(0, N, step), desc="circuits", disable=not progress or N <= step):
                cut = (edge & ~circuits[c0:c0 + step].to(dev)).to(c_out.dtype)
                final = _final_resid_with_edges_cut(model, graph, clean, c_out, cut, end, p0, prefix)
                logits = apply_ln_final_and_unembed(model, final)[:, None]  # [k*b, 1, vocab]
                k = cut.shape[0]
                vals = torch.stack([fn(logits[i * len(idx):(i + 1) * len(idx)], idx) for i in range(k)])
                check_finite(vals.flatten(), metric, "a circuit's patched run")
                total[c0:c0 + k] += vals.double().sum(1).cpu()
                if each is not None:
                    each[c0:c0 + k, idx] = vals.float().cpu()
    return each if each is not None else (total / n).float()


def _as_circuits(circuits, graph: EAPGraph) -> Tensor:
    c = torch.as_tensor(circuits, device="cpu")
    if c.ndim == 2:
        c = c[None]
    S, R = len(graph.senders), len(graph.receivers)
    if c.ndim != 3 or tuple(c.shape[1:]) != (S, R):
        raise ValueError(f"circuits must be [n_circuits, {S} senders, {R} receivers] (or one [{S}, {R}]) for this "
                         f"model's graph; got shape {tuple(c.shape)}")
    return c.bool()
