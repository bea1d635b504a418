"""How one head's output can feed a later head, read from the weights: Q-, K- and V-composition scores.

A head reads the residual stream in three places: its **query** (at the position that attends), its **key** (at the
positions attended to) and its **value** (what it copies from there). An earlier head that writes into the stream
can feed any of the three (Elhage et al. 2021, "A mathematical framework for transformer circuits"):

* **K-composition**: the earlier head's output changes the later head's *keys*, so it changes *where* the later head
  looks. An induction head K-composes with a previous-token head: its key at position ``i`` carries "the token
  before ``i`` was A", which its query (the current ``A``) matches;
* **Q-composition**: the earlier head's output changes the later head's *queries* (what it looks for);
* **V-composition**: the earlier head's output changes the later head's *values* (what it moves).

In TransformerLens's row-vector convention a head writes ``x @ W_OV`` (``W_OV = W_V @ W_O``, ``[d_model,
d_model]``) and scores ``q @ W_QK @ k.T`` (``W_QK = W_Q @ W_K.T``). The composition score of a sender ``A`` and a
receiver ``B`` is the share of the product's size that survives the composition::

    score(W_A, W_B) = ||W_A @ W_B||_F / (||W_A||_F ||W_B||_F)

with ``W_A = W_OV`` of the sender and ``W_B = W_QK.T`` (K), ``W_QK`` (Q) or ``W_OV`` (V) of the receiver, as
TransformerLens's ``HookedTransformer.all_composition_scores`` computes them (``tests/test_composition.py`` checks
:func:`composition_scores` against it). The score is in ``[0, 1]`` and is not zero for unrelated random matrices,
so it only means something against :func:`random_baseline`: the same score for random matrices of the same shapes
and ranks. The weights leave out the layer norms, the biases and rotary position embeddings (a rotary model's
``W_QK`` mixes with position at run time), so a score is a reading of the weights, not of a forward pass.

>>> s = composition_scores(model, ["a0.h2"], ["a1.h0", "a1.h1"], "K")       # doctest: +SKIP
>>> s["a0.h2", "a1.h0"], random_baseline(model, "K")                        # doctest: +SKIP
"""
from __future__ import annotations

from typing import Sequence

import torch
from jaxtyping import Float
from torch import Tensor

from ..core.components import parse_many

MODES = ("Q", "K", "V")


def composition_score(W_A: Float[Tensor, "d_model d_mid"], W_B: Float[Tensor, "d_mid d_model"]) -> float:
    """``||W_A @ W_B||_F / (||W_A||_F ||W_B||_F)`` (float64)."""
    if W_A.ndim != 2 or W_B.ndim != 2 or W_A.shape[1] != W_B.shape[0]:
        raise ValueError(f"need matrices [a, m] and [m, b], got {tuple(W_A.shape)} and {tuple(W_B.shape)}")
    A, B = W_A.double(), W_B.double()
    return float((A @ B).norm() / (A.norm() * B.norm()))


def head_ov(model, layer: int, head: int) -> Float[Tensor, "d_model d_model"]:
    """``W_V @ W_O`` of one head: what it writes, as a map of the residual stream it reads (row vectors)."""
    return model.W_V[layer, head].detach().double() @ model.W_O[layer, head].detach().double()


def head_qk(model, layer: int, head: int) -> Float[Tensor, "d_model d_model"]:
    """``W_Q @ W_K.T`` of one head: its attention score is ``x_query @ W_QK @ x_key.T`` (before scaling)."""
    return model.W_Q[layer, head].detach().double() @ model.W_K[layer, head].detach().double().T


def _receiver(model, layer: int, head: int, mode: str) -> Tensor:
    if mode == "K":
        return head_qk(model, layer, head).T
    if mode == "Q":
        return head_qk(model, layer, head)
    return head_ov(model, layer, head)


def composition_scores(model, senders: Sequence[str], receivers: Sequence[str], mode: str = "K") -> dict:
    """``{(sender, receiver): score}`` for every sender in an earlier layer than the receiver.

    ``mode``: ``"K"`` (the sender's output feeds the receiver's keys), ``"Q"`` (its queries) or ``"V"`` (its
    values). Pairs where the sender is not in an earlier layer are left out (no composition is possible).
    """
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; accepted: {MODES}")
    out = {}
    for s in parse_many(list(senders), model):
        if s.kind != "head":
            raise ValueError(f"senders must be heads like 'a0.h2', got {s}")
        ov = head_ov(model, s.layer, s.head)
        for r in parse_many(list(receivers), model):
            if r.kind != "head":
                raise ValueError(f"receivers must be heads like 'a1.h0', got {r}")
            if s.layer < r.layer:
                out[str(s), str(r)] = composition_score(ov, _receiver(model, r.layer, r.head, mode))
    return out


def random_baseline(model, mode: str = "K", n: int = 200, seed: int = 0) -> tuple[float, float]:
    """Mean and standard deviation of the composition score of ``n`` random pairs of matrices shaped like
    ``model``'s (each a product of two Gaussian factors ``[d_model, d_head] @ [d_head, d_model]``, the rank of a
    head's ``W_OV`` and ``W_QK``); seeded."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; accepted: {MODES}")
    d, k = model.cfg.d_model, model.cfg.d_head
    g = torch.Generator().manual_seed(int(seed))
    low_rank = lambda: torch.randn(d, k, generator=g, dtype=torch.float64) @ torch.randn(k, d, generator=g, dtype=torch.float64)  # noqa: E731
    vals = torch.tensor([composition_score(low_rank(), low_rank()) for _ in range(n)])
    return float(vals.mean()), float(vals.std())
