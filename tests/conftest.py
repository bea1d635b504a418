"""Shared fixtures: tiny random models built offline, one thread, warnings quiet."""
import os
import warnings

warnings.filterwarnings("ignore", category=DeprecationWarning)

import pytest
import torch

torch.set_num_threads(int(os.environ.get("TEST_THREADS", "1")))


def make_tiny_model(n_layers=2, d_model=32, n_heads=4, d_mlp=64, d_vocab=50, n_ctx=32, attn_only=False,
                    normalization_type="LN", seed=0):
    from transformer_lens import HookedTransformer, HookedTransformerConfig

    cfg = HookedTransformerConfig(
        n_layers=n_layers, d_model=d_model, n_heads=n_heads, d_head=d_model // n_heads,
        d_mlp=None if attn_only else d_mlp, d_vocab=d_vocab, n_ctx=n_ctx, act_fn="gelu",
        attn_only=attn_only, normalization_type=normalization_type, seed=seed, device="cpu")
    model = HookedTransformer(cfg)
    model.eval()
    return model


@pytest.fixture
def tiny_model():
    return make_tiny_model()


@pytest.fixture
def tiny_attn_only():
    return make_tiny_model(attn_only=True)
