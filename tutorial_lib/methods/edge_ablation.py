"""Cut one edge at a time, with any ablation: what each edge of the EAP graph does to a metric.

To ask whether an edge matters at all -- the answer key's check that every ground-truth edge changes the metric
when cut alone -- the cut edge may carry its sender's *corrupted* value (path patching of that one edge), zero, the
mean over the examples, or another example's value (:data:`EDGE_ABLATIONS`). Cutting ``s -> r`` alone::

    input of r  =  clean input of r  -  (out_s(clean) - replacement of out_s)

and nothing else changes upstream of ``r``. This is the faithfulness engine's circuit "every edge but ``s -> r``"
(:func:`~tutorial_lib.methods.faithfulness.patched_metric`, which runs every family of the course exactly: each
query head's own k and v inputs under grouped-query attention, the output norm recomputed per receiver under
sandwich and post norms, the shared QK-norm of the OLMo family as :func:`tutorial_lib.core.arch.shares_qk_norm`
defines it), so all the cuts of a call run as one batch of circuits.
"""
from __future__ import annotations

from typing import Optional, Sequence

import torch
from torch import Tensor

from ._edge_engine import EDGE_ABLATIONS, patched_metric
from .attribution import MetricArg
from .eap_graph import EAPGraph

__all__ = ["EDGE_ABLATIONS", "edge_cut_effects"]


def edge_cut_effects(model, task, mode: str = "corrupt", metric: Optional[MetricArg] = None,
                     edges: Optional[Sequence[tuple[str, str]]] = None, seed: int = 0,
                     progress: bool = False) -> tuple[Tensor, float]:
    """``metric(every edge but s -> r, which is cut with `mode`) - metric(clean)``, mean over the examples, for
    every edge of :class:`EAPGraph` (or only ``edges``): ``([n_senders, n_receivers] effects, clean metric)``;
    entries that are not edges (or not listed) are 0. ``metric``: ``None`` (the task's own), a name
    (``"metric"``, ``"logit_diff"``, ``"answer_logprob"``) or ``f(logits, sub_task)``, as the faithfulness engine
    takes it; ``mode`` is one of :data:`EDGE_ABLATIONS`; ``seed`` draws the resample sources."""
    if mode not in EDGE_ABLATIONS:
        raise ValueError(f"unknown edge ablation {mode!r}; accepted: {EDGE_ABLATIONS}")
    graph = EAPGraph.from_model(model)
    mask = graph.edge_mask()
    if edges is None:
        edges = [(graph.senders[i], graph.receivers[j]) for i, j in mask.nonzero().tolist()]
    cells = []
    for s, r in edges:
        if s not in graph.senders or r not in graph.receivers or not mask[graph.senders.index(s), graph.receivers.index(r)]:
            raise ValueError(f"{s} -> {r} is not an edge of this model's graph (senders such as {graph.senders[:3]}, "
                             f"receivers such as {graph.receivers[:3]}; a sender must lie upstream of its receiver)")
        cells.append((graph.senders.index(s), graph.receivers.index(r)))
    circuits = mask[None].repeat(len(cells) + 1, 1, 1)  # the first: every edge kept (the clean run)
    for k, (i, j) in enumerate(cells, start=1):
        circuits[k, i, j] = False
    vals = patched_metric(model, task, circuits, metric or "metric", ablation=mode, seed=seed, progress=progress)
    base = float(vals[0])
    out = torch.zeros(mask.shape)
    for k, (i, j) in enumerate(cells, start=1):
        out[i, j] = float(vals[k]) - base
    return out, base
