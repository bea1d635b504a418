"""Shared by the activation-patching and circuit-evaluation tests: a small random model whose effects are
O(1) and a toy task, as module-scoped fixtures ``model`` and ``task`` (import them into the test module).

:func:`make_model` also builds the path-patching tests' models (``path_reference.py``).
"""
import pytest
import torch
from transformer_lens import HookedTransformer, HookedTransformerConfig

from tutorial_lib.tasks.base import TaskData

N_LAYERS, N_HEADS = 3, 4
B, P, V = 5, 8, 53  # the toy task: examples, positions, vocabulary


def make_model(vocab, seed=0, normalization="LN", attn_only=False, scale=2.0, positional="standard"):
    cfg = HookedTransformerConfig(n_layers=N_LAYERS, d_model=48, n_heads=N_HEADS, d_head=12, d_mlp=96,
                                  d_vocab=vocab, n_ctx=16, act_fn="gelu_new", normalization_type=normalization,
                                  attn_only=attn_only, seed=seed, device="cpu", positional_embedding_type=positional,
                                  rotary_dim=8 if positional == "rotary" else None)
    model = HookedTransformer(cfg)
    with torch.no_grad():  # larger weights than the default init, so effects are O(1), not O(1e-4)
        for p in model.parameters():
            p.mul_(scale)
    model.eval()
    return model


def toy_tokens(batch, pos, vocab, corrupt_at, seed):
    """Random clean tokens ``[batch, pos]`` and a copy with new random tokens at the positions ``corrupt_at``."""
    g = torch.Generator().manual_seed(seed)
    clean = torch.randint(0, vocab, (batch, pos), generator=g)
    corrupt = clean.clone()
    for p in corrupt_at:
        corrupt[:, p] = torch.randint(0, vocab, (batch,), generator=g)
    return clean, corrupt


@pytest.fixture(scope="module")
def model():
    return make_model(V, seed=3)


@pytest.fixture(scope="module")
def task():
    """One corrupted position (2, also named YY); END differs per example; answer 3 against 9."""
    clean, corrupt = toy_tokens(B, P, V, [2], seed=1)
    end = torch.tensor([7, 6, 7, 7, 5])
    return TaskData("toy", [""] * B, [""] * B, clean, corrupt, end, torch.full((B,), 3),
                    torch.full((B, 1), 9), positions={"YY": torch.full((B,), 2)})
