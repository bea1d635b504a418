"""The graph EAP scores and the per-example scores it returns (:mod:`tutorial_lib.methods.attribution` computes them).

* :class:`EAPGraph` -- senders (``embed``, every head, every MLP) and receivers (every head's q, k and v input,
  one per *query* head also under grouped-query attention, every MLP's input, ``logits``), in residual order;
  a sender feeds every receiver later in the residual stream (not its own layer's MLP when attention and MLP
  run in parallel).
* :class:`EAPScores` -- per-example edge and node scores, top-K circuits.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Optional

import torch
from jaxtyping import Bool, Float
from torch import Tensor

from ..core.circuits import Circuit
from ..core.supported import check_supported


# ----------------------------------------------------------------------------------- the graph
@dataclass(frozen=True)
class EAPGraph:
    """Names and index layout of the EAP graph of one model.

    ``senders``: ``['embed', 'a0.h0', ..., 'a0.h{H-1}', 'm0', 'a1.h0', ...]``.
    ``receivers``: per layer the ``q`` inputs of every head, then ``k``, then ``v``, then the MLP;
    ``'logits'`` last. ``n_upstream[r]`` senders (a prefix of ``senders``) feed receiver ``r``.
    """

    senders: list
    receivers: list
    n_upstream: list
    n_layers: int
    n_heads: int
    has_mlp: bool
    parallel: bool

    @classmethod
    def from_model(cls, model) -> "EAPGraph":
        check_supported(model, "eap")  # the same architecture list as every engine (core.forward)
        cfg = model.cfg
        L, H = cfg.n_layers, cfg.n_heads
        has_mlp = not getattr(cfg, "attn_only", False)
        parallel = bool(getattr(cfg, "parallel_attn_mlp", False))
        per_layer = H + int(has_mlp)
        senders, receivers, n_up = ["embed"], [], []
        for l in range(L):
            senders += [f"a{l}.h{h}" for h in range(H)] + ([f"m{l}"] if has_mlp else [])
            before = 1 + l * per_layer
            for letter in "qkv":
                receivers += [f"a{l}.h{h}.{letter}" for h in range(H)]
                n_up += [before] * H
            if has_mlp:
                receivers.append(f"m{l}")
                n_up.append(before + (0 if parallel else H))
        receivers.append("logits")
        n_up.append(len(senders))
        return cls(senders, receivers, n_up, L, H, has_mlp, parallel)

    @property
    def components(self) -> list:
        """Heads and MLPs (every sender but ``embed``), in residual order."""
        return self.senders[1:]

    def head_columns(self) -> list:
        """Indices in :attr:`components` of every head, layer by layer (``a0.h0``, ``a0.h1``, ...)."""
        return [i for i, c in enumerate(self.components) if c.startswith("a")]

    def sender_base(self, layer: int) -> int:
        """Index of ``a{layer}.h0`` in ``senders``; the layer's MLP follows its heads."""
        return 1 + layer * (self.n_heads + int(self.has_mlp))

    def receiver_base(self, layer: int) -> int:
        """Index of ``a{layer}.h0.q`` in ``receivers``."""
        return layer * (3 * self.n_heads + int(self.has_mlp))

    def edge_mask(self) -> Bool[Tensor, "n_senders n_receivers"]:
        """True where ``sender -> receiver`` is an edge of the graph."""
        up = torch.tensor(self.n_upstream, device="cpu")
        return torch.arange(len(self.senders), device="cpu")[:, None] < up[None, :]


# ----------------------------------------------------------------------------------- results
@dataclass
class EAPScores:
    """Per-example EAP scores.

    Attributes:
        nodes: ``[batch, n_components]`` -- component score = sum of |edge scores| out of it.
        components: names for the columns of ``nodes`` (heads and MLPs, residual order).
        edges: ``[batch, n_senders, n_receivers]`` signed edge scores (``None`` if not kept); entries
            that are not edges of the graph are 0.
        graph: the :class:`EAPGraph` (sender and receiver names, edge mask).
        metric: ``[batch]`` the clean metric per example.
        signed_nodes: ``[batch, n_components]`` -- the *signed* sum of edge scores out of each
            component, i.e. the attribution-patching estimate of patching that node alone.
        signed_embed: ``[batch]`` -- the same for ``embed`` (a node of a node circuit, not a component).
    """

    nodes: Float[Tensor, "batch n_components"]
    components: list
    edges: Optional[Float[Tensor, "batch n_senders n_receivers"]]
    graph: EAPGraph
    metric: Float[Tensor, "batch"]
    signed_nodes: Float[Tensor, "batch n_components"]
    signed_embed: Optional[Float[Tensor, "batch"]] = None
    meta: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return self.nodes.shape[0]

    def node_vector(self) -> Float[Tensor, "n_nodes"]:
        """The mean signed node score of every node a node circuit is chosen from -- ``embed``, then every head
        and MLP -- the vector :func:`~tutorial_lib.methods.faithfulness.node_curve` ranks."""
        if self.signed_embed is None:
            raise ValueError("these scores have no embed score (signed_embed); compute them with eap_scores")
        return torch.cat([self.signed_embed.mean()[None], self.signed_nodes.mean(0)]).float()

    def k_for(self, frac: float) -> int:
        """Number of components in a top-``frac`` circuit: ``ceil(frac * n_components)``, at least 1."""
        if not 0 < frac <= 1:
            raise ValueError(f"frac must be in (0, 1] (e.g. 0.10 for K=10%), got {frac!r}")
        return max(1, math.ceil(frac * len(self.components) - 1e-9))

    def top_k(self, frac: float) -> Bool[Tensor, "batch n_components"]:
        """Membership matrix of the per-example top-``frac`` circuits (ties broken by index)."""
        k = self.k_for(frac)
        idx = self.nodes.topk(k, dim=1).indices
        out = torch.zeros_like(self.nodes, dtype=torch.bool)
        return out.scatter_(1, idx, True)

    def circuits(self, frac: float) -> list:
        """One :class:`~tutorial_lib.core.circuits.Circuit` per example (top-``frac`` components)."""
        member = self.top_k(frac)
        return [
            Circuit([c for c, m in zip(self.components, row) if m], name=f"example {i} top {frac:.0%}")
            for i, row in enumerate(member.tolist())
        ]

    def plot(self, example: Optional[int] = None, title: Optional[str] = None):
        """Heatmap (layer x head, plus an MLP column) of the mean node score, or of one example's."""
        from ..viz.consistency import plot_node_scores

        return plot_node_scores(self, example=example, title=title)
