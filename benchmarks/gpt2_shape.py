"""The benchmarks' GPT-2-small-shaped model: GPT-2's configuration and real tokenizer, random weights."""
from __future__ import annotations

import os
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
for path in (ROOT, os.path.join(ROOT, "tests")):  # the package, and the tests' independent references
    if path not in sys.path:
        sys.path.insert(0, path)


def gpt2_shaped_model(seed: int = 0):
    """12 layers, d_model 768, 12 heads, d_mlp 3072, GPT-2's vocabulary and tokenizer, random weights, eval mode;
    ``W_U`` stored as ``load_model`` stores it (:func:`tutorial_lib.core.view.unembedding_stored_transposed`)."""
    from transformer_lens import HookedTransformer, HookedTransformerConfig

    from tutorial_lib.tasks.tokenizers import gpt2_tokenizer

    cfg = HookedTransformerConfig(n_layers=12, d_model=768, n_heads=12, d_head=64, d_mlp=3072, d_vocab=50257,
                                  n_ctx=1024, act_fn="gelu_new", normalization_type="LN", seed=seed, device="cpu")
    from tutorial_lib.core.view import unembedding_stored_transposed

    model = HookedTransformer(cfg, tokenizer=gpt2_tokenizer()).eval()
    unembedding_stored_transposed(model)
    return model
