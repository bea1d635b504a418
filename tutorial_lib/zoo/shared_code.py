"""A frozen random code shared by the embedding and the unembedding (issue 30's pilots G and H).

During training ``W_E = A + C`` and ``W_U = B + C^T``: ``A`` and ``B`` are the model's trained parameters, ``C`` is a
seeded random matrix (one row per token, each of norm ``scale``) that is never trained. Every token -- one repeated in
an induction row or one never repeated -- then has an input direction and a matching output direction from the start,
so a copy (an OV map) fitted on the repeated tokens' codes, which span the residual stream, can act on any token's
code. With ``scale`` 1 the trained rows drowned the code and nothing carried over to held-out tokens; with ``scale`` 4
it did (figures in :mod:`tutorial_lib.zoo.split_induction`).

After training, :func:`bake_shared_code` folds ``C`` into the weights: the model that is saved is a plain
``HookedTransformer`` whose ``W_E`` and ``W_U`` are the sums, and nothing downstream knows the code was there.

    >>> from transformer_lens import HookedTransformer, HookedTransformerConfig
    >>> m = HookedTransformer(HookedTransformerConfig(n_layers=1, d_model=8, n_ctx=4, d_head=4, d_vocab=10, attn_only=True))
    >>> attach_shared_code(m, scale=4.0, seed=1)
    >>> round(float((m.W_E - m.embed.parametrizations.W_E.original).detach().norm(dim=1).mean()), 3)
    4.0
    >>> bake_shared_code(m); has_shared_code(m)
    False
"""
from __future__ import annotations

import torch
from torch import Tensor
from torch.nn.utils import parametrize

# the parametrized weights and the module attribute that holds each one in a HookedTransformer
_SITES = (("embed", "W_E", False), ("unembed", "W_U", True))


def shared_code(d_vocab: int, d_model: int, scale: float, seed: int) -> Tensor:
    """``[d_vocab, d_model]``: seeded Gaussian rows, each scaled to norm ``scale``."""
    if not scale > 0:
        raise ValueError(f"the shared code's scale must be positive, got {scale!r}")
    code = torch.randn(int(d_vocab), int(d_model), generator=torch.Generator().manual_seed(int(seed)))
    return float(scale) * code / code.norm(dim=1, keepdim=True)


class _AddFrozen(torch.nn.Module):
    """A parametrization ``W -> W + code`` whose ``code`` is a buffer (saved, never trained)."""

    def __init__(self, code: Tensor):
        super().__init__()
        self.register_buffer("code", code)

    def forward(self, weight: Tensor) -> Tensor:
        return weight + self.code


def has_shared_code(model) -> bool:
    return any(parametrize.is_parametrized(getattr(model, mod), attr) for mod, attr, _ in _SITES)


def attach_shared_code(model, scale: float, seed: int) -> None:
    """Add the frozen code to ``model``'s embedding and (transposed) unembedding, in place."""
    if has_shared_code(model):
        raise ValueError("the model already carries a shared code")
    W_E = model.embed.W_E
    code = shared_code(W_E.shape[0], W_E.shape[1], scale, seed).to(W_E.device, W_E.dtype)
    for mod, attr, transpose in _SITES:
        parametrize.register_parametrization(getattr(model, mod), attr,
                                             _AddFrozen(code.T.contiguous() if transpose else code))


def bake_shared_code(model) -> None:
    """Fold the code into the weights and drop the parametrizations: a plain model with the same outputs."""
    for mod, attr, _ in _SITES:
        module = getattr(model, mod)
        if parametrize.is_parametrized(module, attr):
            parametrize.remove_parametrizations(module, attr, leave_parametrized=True)


def baked_state_dict(state: dict) -> dict:
    """A state dict saved with the code attached, as the baked model's: ``W = original + code`` under the plain key."""
    out = {}
    for key, value in state.items():
        if ".parametrizations." not in key:
            out[key] = value
            continue
        prefix, rest = key.split(".parametrizations.", 1)
        attr, part = rest.split(".", 1)
        if part == "original":
            code = state[f"{prefix}.parametrizations.{attr}.0.code"]
            out[f"{prefix}.{attr}"] = (value.float() + code.float()).to(value.dtype)
        elif part != "0.code":
            raise ValueError(f"unexpected parametrized key {key!r}")
    return out
