"""The papers' model families as TransformerLens builds them, at any size, without the network.

Study 2 ran on Gemma 2, Llama 3.2, Qwen3 and OLMo-2; study 3 on Pythia (GPT-NeoX), Llama-style models and OLMoE
(mixture of experts); study 1 on GPT-2. :func:`family_config` returns TransformerLens 3.9's *own* conversion of a
family's real configuration (``loading_from_pretrained.convert_hf_model_config``: every architecture flag --
grouped-query attention, RMSNorm, gated MLPs, rotary (partial for NeoX), QK-norm, sandwich and post norms, soft
caps, local/global windows, parallel attention + MLP, experts -- as TransformerLens sets it), with the
dimensions shrunk or kept. Llama 3.2, Gemma 2 and OLMo-2 carry their dimensions inside TransformerLens; for the
others the hub's ``config.json`` is replaced by a ``transformers`` config of that family built here, so nothing
is downloaded. :func:`tiny_family_model` builds a random ``HookedTransformer`` from it: the engines' tests run
every method on every family with these.

>>> cfg = family_config("llama")                     # doctest: +SKIP
>>> cfg["n_heads"], cfg["n_key_value_heads"], cfg["gated_mlp"], cfg["normalization_type"]   # doctest: +SKIP
(4, 2, True, 'RMS')
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Optional

#: family -> (the official name whose configuration is converted, what it is)
FAMILIES = {
    "gpt2": ("gpt2", "GPT-2: LayerNorm, learned positions (study 1)"),
    "llama": ("meta-llama/Llama-3.2-1B", "Llama 3.2: grouped-query attention, RMSNorm, gated SiLU MLP, rotary"),
    "gemma2": ("google/gemma-2-2b", "Gemma 2: GQA, sandwich norms, soft caps, local/global windows, gated GELU"),
    "qwen3": ("Qwen/Qwen3-0.6B", "Qwen3: GQA, RMSNorm, QK-norm, gated SiLU MLP, rotary"),
    "olmo2": ("allenai/OLMo-2-0425-1B", "OLMo-2: post-norm (norms on the attention and MLP outputs), QK-norm"),
    "pythia": ("EleutherAI/pythia-70m", "Pythia (GPT-NeoX): parallel attention + MLP, partial rotary"),
    "olmoe": ("allenai/OLMoE-1B-7B-0924", "OLMoE: mixture-of-experts MLPs (router + experts), GQA-style attention"),
}

#: the tiny shape every family is shrunk to by default (the window is made short so that it matters)
TINY = dict(n_layers=2, d_model=32, n_heads=4, n_key_value_heads=2, d_head=8, d_mlp=48, d_vocab=61, n_ctx=24,
            window_size=4, num_experts=4, experts_per_token=2)


def _hf_config(family: str, size: dict):
    """A small ``transformers`` config of ``family`` standing in for the hub's ``config.json``."""
    import transformers as tf

    common = dict(hidden_size=size["d_model"], num_attention_heads=size["n_heads"],
                  num_hidden_layers=size["n_layers"], intermediate_size=size["d_mlp"], vocab_size=size["d_vocab"],
                  max_position_embeddings=size["n_ctx"])
    if family == "qwen3":
        return tf.Qwen3Config(**common, num_key_value_heads=size["n_key_value_heads"], head_dim=size["d_head"],
                              architectures=["Qwen3ForCausalLM"], tie_word_embeddings=False)
    if family == "olmo2":
        return tf.Olmo2Config(**common, num_key_value_heads=size["n_key_value_heads"],
                              architectures=["Olmo2ForCausalLM"])
    if family == "olmoe":
        # OLMoE-1B-7B has as many key/value heads as query heads (16 and 16): TransformerLens writes it the GQA way
        return tf.OlmoeConfig(**common, num_key_value_heads=size["n_heads"], num_experts=size["num_experts"],
                              num_experts_per_tok=size["experts_per_token"], architectures=["OlmoeForCausalLM"])
    if family == "pythia":
        return tf.GPTNeoXConfig(**common, rotary_pct=0.25, use_parallel_residual=True,
                                architectures=["GPTNeoXForCausalLM"])
    if family == "gpt2":
        hf = tf.GPT2Config(n_embd=size["d_model"], n_head=size["n_heads"], n_layer=size["n_layers"],
                           n_inner=size["d_mlp"], vocab_size=size["d_vocab"], n_positions=size["n_ctx"],
                           architectures=["GPT2LMHeadModel"])
        hf.n_ctx = size["n_ctx"]  # TransformerLens reads n_ctx, which transformers 5 no longer sets
        return hf
    return None  # llama, gemma2: TransformerLens holds their configs


@contextmanager
def _offline_hub_config(hf_config):
    """Make TransformerLens' conversion read ``hf_config`` instead of fetching ``config.json``."""
    from transformer_lens import loading_from_pretrained as lp

    original = lp.AutoConfig.from_pretrained
    if hf_config is not None:
        lp.AutoConfig.from_pretrained = lambda *a, **k: hf_config
    try:
        yield
    finally:
        lp.AutoConfig.from_pretrained = original


def family_config(family: str, shrink: bool = True, **size) -> dict:
    """TransformerLens' conversion of ``family``'s real configuration, as a ``HookedTransformerConfig`` dict.

    ``shrink=True`` (default) sets the dimensions to :data:`TINY` (each overridable: ``n_layers=3``, ...);
    ``shrink=False`` keeps the real dimensions (only ``n_layers`` and ``d_vocab`` may then be given, to fit a
    slice of a large model in memory). Architecture flags are never changed.
    """
    if family not in FAMILIES:
        raise ValueError(f"unknown family {family!r}; accepted: {sorted(FAMILIES)}")
    unknown = set(size) - set(TINY)
    if unknown:
        raise ValueError(f"unknown size field(s) {sorted(unknown)}; accepted: {sorted(TINY)}")
    from transformer_lens import loading_from_pretrained as lp

    want = {**TINY, **size}
    if not shrink:
        extra = set(size) - {"n_layers", "d_vocab"}
        if extra:
            raise ValueError(f"with shrink=False only n_layers and d_vocab can be set; got {sorted(extra)}")
    name = FAMILIES[family][0]
    with _offline_hub_config(_hf_config(family, want)):
        d = dict(lp.convert_hf_model_config(name))
    d.pop("tokenizer_name", None)
    if shrink:
        d = _shrink(d, want)
    else:
        for key in ("n_layers", "d_vocab"):
            if key in size:
                d[key] = size[key]
        if "attn_types" in d:
            d["attn_types"] = d["attn_types"][: d["n_layers"]]
    return d


def _shrink(d: dict, want: dict) -> dict:
    d = dict(d, _n_heads_real=d["n_heads"])
    for key in ("n_layers", "d_model", "n_heads", "d_head", "d_mlp", "d_vocab", "n_ctx"):
        d[key] = want[key]
    if d.get("n_key_value_heads") is not None:  # grouped stays grouped, ungrouped (OLMoE: kv = heads) stays so
        grouped = d["n_key_value_heads"] != d.get("_n_heads_real", d["n_heads"])
        d["n_key_value_heads"] = want["n_key_value_heads"] if grouped else want["n_heads"]
    if d.get("positional_embedding_type") == "rotary":
        full = d.get("rotary_dim") in (None,) or d.get("original_architecture") != "GPTNeoXForCausalLM"
        d["rotary_dim"] = want["d_head"] if full else max(2, want["d_head"] // 4)
    if d.get("use_local_attn"):
        d["window_size"] = want["window_size"]
    if "attn_types" in d:
        pattern = d["attn_types"] or ["local", "global"]
        d["attn_types"] = [pattern[i % len(pattern)] for i in range(want["n_layers"])]
    if d.get("num_experts"):
        d["num_experts"], d["experts_per_token"] = want["num_experts"], want["experts_per_token"]
    if d.get("use_NTK_by_parts_rope"):
        d["NTK_original_ctx_len"] = max(want["n_ctx"] // 2, 2)
    d.pop("_n_heads_real")
    return d


def tiny_family_model(family: str, seed: int = 0, scale: Optional[float] = None, tokenizer=None, dtype=None,
                      **size):
    """A random ``HookedTransformer`` of ``family`` (:func:`family_config`, shrunk), in eval mode, on the CPU.

    ``scale`` multiplies every weight (random models at the default init have tiny effects; 2-4 makes the
    differences between engines' exact answers and a wrong one easy to see).
    """
    import torch
    from transformer_lens import HookedTransformer, HookedTransformerConfig

    d = family_config(family, **size)
    d["seed"] = seed
    d["device"] = "cpu"
    if dtype is not None:
        d["dtype"] = dtype
    model = HookedTransformer(HookedTransformerConfig(**d), tokenizer=tokenizer)
    if dtype is not None:
        model.to(dtype)  # every submodule (TransformerLens builds OLMoE's router in the default dtype)
    if scale is not None:
        with torch.no_grad():
            for name, p in model.named_parameters():
                if p.ndim >= 2:  # weight matrices only: norms' scales (and QK-norms') and biases stay as built
                    p.mul_(scale)
    return model.eval()
