"""A tiny *untrained* zoo model, clearly named as a placeholder, for when no trained model is shipped.

It has the zoo tokenizer and the shape of a small zoo model but random weights: it lets the loading,
hooks and plumbing be exercised before ``python -m tutorial_lib.zoo build`` has produced real models.
Nothing it computes means anything.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

from ..core.paths import zoo_dir
from ..tasks.word_tokenizer import load as load_tokenizer
from . import store

PLACEHOLDER_NAME = "zoo-placeholder-untrained"


def build_placeholder(directory: Optional[Path] = None, seed: int = 0):
    """Create and save the placeholder (random weights, seeded)."""
    from transformer_lens import HookedTransformer, HookedTransformerConfig


    directory = Path(directory or zoo_dir())
    tok = load_tokenizer(directory / "tokenizer")
    cfg = HookedTransformerConfig(n_layers=2, d_model=64, n_heads=4, d_head=16, d_mlp=256, d_vocab=len(tok),
                                  n_ctx=128, act_fn="gelu", normalization_type="LN", seed=seed, device="cpu")
    model = HookedTransformer(cfg, tokenizer=tok)
    store.save_model(model, PLACEHOLDER_NAME, {
        "description": "PLACEHOLDER: untrained random weights, for plumbing only", "seed": seed, "steps": 0,
        "metrics": {}}, directory)
    return model
