"""Cut one edge at a time, with any ablation: what each edge of the EAP graph does to a metric.

The faithfulness engine (:mod:`.faithfulness`) cuts edges one way only, by giving the receiver the sender's
*corrupted* value. To ask whether an edge matters at all -- the answer key's check that every ground-truth edge
changes the metric when cut alone -- the replacement must also be allowed to be zero, the mean over the batch, or
another prompt's value (:data:`EDGE_ABLATIONS`; the mean and the resample sources are
:func:`~tutorial_lib.core.circuits.valid_mean` and :func:`~tutorial_lib.core.circuits.resample_sources`, the course's
one definition of each). Cutting ``s -> r`` alone::

    input of r  =  clean input of r  -  (out_s(clean) - replacement of out_s)

and nothing else changes upstream of ``r``, so the clean ``out_s`` is the one to subtract. With the corrupted
value as replacement this is path patching from ``s`` into ``r`` (the tests check it against
:func:`~tutorial_lib.methods.path_patching.path_patch_sweep`). One forward pass per edge: for small models (the
answer keys, ~100 edges). Pre-norm models without a norm on the summed attention output only.
"""
from __future__ import annotations

from typing import Callable, Optional, Sequence

import torch
from torch import Tensor

from ..core.circuits import resample_sources, valid_mean
from ..core.hooks import hooked
from ..core.progress import tqdm
from .eap_graph import EAPGraph

EDGE_ABLATIONS = ("corrupt", "zero", "mean", "resample")


def _sender_hooks(graph: EAPGraph, sender: str) -> list[tuple[str, Optional[int]]]:
    if sender == "embed":
        return [("hook_embed", None), ("hook_pos_embed", None)]
    if sender.startswith("m"):
        return [(f"blocks.{sender[1:]}.hook_mlp_out", None)]
    layer, head = sender[1:].split(".h")
    return [(f"blocks.{layer}.attn.hook_result", int(head))]


def _receiver_hook(graph: EAPGraph, receiver: str) -> tuple[str, Optional[int]]:
    if receiver == "logits":
        return f"blocks.{graph.n_layers - 1}.hook_resid_post", None
    if receiver.startswith("m"):
        return f"blocks.{receiver[1:]}.hook_mlp_in", None
    node, letter = receiver.rsplit(".", 1)
    layer, head = node[1:].split(".h")
    return f"blocks.{layer}.hook_{letter}_input", int(head)


def edge_cut_effects(model, task, mode: str = "corrupt", metric: Optional[Callable] = None,
                     edges: Optional[Sequence[tuple[str, str]]] = None, seed: int = 0,
                     progress: bool = False) -> tuple[Tensor, float]:
    """``metric(every edge but s -> r, which is cut with `mode`) - metric(clean)``, mean over the examples, for
    every edge of :class:`EAPGraph` (or only ``edges``): ``([n_senders, n_receivers] effects, clean metric)``;
    entries that are not edges (or not listed) are 0. ``metric`` defaults to ``task.metric``; ``mode`` is one of
    :data:`EDGE_ABLATIONS`."""
    if mode not in EDGE_ABLATIONS:
        raise ValueError(f"unknown edge ablation {mode!r}; accepted: {EDGE_ABLATIONS}")
    graph = EAPGraph.from_model(model)
    metric = metric or task.metric
    mask = graph.edge_mask()
    if edges is None:
        edges = [(graph.senders[i], graph.receivers[j]) for i, j in mask.nonzero().tolist()]
    out = torch.zeros(mask.shape)
    cfg = model.cfg
    saved = (cfg.use_split_qkv_input, cfg.use_attn_result, cfg.use_hook_mlp_in)
    try:
        model.set_use_split_qkv_input(True)
        model.set_use_attn_result(True)
        model.set_use_hook_mlp_in(True)
        names = {n for s in graph.senders for n, _ in _sender_hooks(graph, s)}
        with torch.no_grad():
            clean_logits, clean = model.run_with_cache(task.clean, names_filter=lambda n: n in names)
            base = float(metric(clean_logits).mean())
            if mode == "corrupt":
                _, other = model.run_with_cache(task.corrupt, names_filter=lambda n: n in names)
            valid = torch.ones(task.clean.shape, dtype=torch.bool)
            src = resample_sources(len(task), seed) if mode == "resample" else None

            def replacement(name: str) -> Tensor:
                act = clean[name]
                if mode == "zero":
                    return torch.zeros_like(act)
                if mode == "mean":
                    return valid_mean(act, valid, per_position=True).expand_as(act)
                if mode == "resample":
                    return act[src]
                return other[name]

            for s, r in tqdm(list(edges), desc=f"edges ({mode})", disable=not progress):
                delta = 0
                for name, head in _sender_hooks(graph, s):
                    d = clean[name] - replacement(name)
                    delta = delta + (d if head is None else d[:, :, head])
                hook_name, rhead = _receiver_hook(graph, r)

                def hook(act, hook=None, delta=delta, rhead=rhead):
                    act = act.clone()
                    if rhead is None:
                        act -= delta
                    else:
                        act[:, :, rhead] -= delta
                    return act

                with hooked(model, fwd_hooks=[(hook_name, hook)]):
                    val = float(metric(model(task.clean)).mean())
                out[graph.senders.index(s), graph.receivers.index(r)] = val - base
    finally:
        model.set_use_split_qkv_input(saved[0])
        model.set_use_attn_result(saved[1])
        model.set_use_hook_mlp_in(saved[2])
    return out, base
