"""The one list of model architectures each engine handles: the patching engine, EAP, the zoo trainer's fused
forward. A model that one of them cannot run gets a ``ValueError`` naming what it has and what is accepted; a feature
is refused only where the engine's result would be undefined, and the list says why.
"""
from __future__ import annotations

from . import arch

ENGINES = ("patching", "eap", "fast_forward")
ENGINE_NAMES = {"patching": "the patching engine", "eap": "this EAP implementation",
                "fast_forward": "the trainer's fused forward"}


def architecture_problems(model, engine: str = "patching") -> list[str]:
    """What in ``model``'s architecture ``engine`` cannot run (empty if it can run it).

    One list for every engine; a feature one engine does handle says so (``handled_by``):

    * ``parallel_attn_mlp`` (attention and MLP read the same residual stream, Pythia): EAP and the patching
      engine (an MLP reads the layer's input: its own layer's heads have no path to it);
    * grouped-query attention (Llama 3.2, Gemma 2, Qwen3; OLMoE writes plain attention the GQA way): EAP and the
      patching engine (a head is a query head with its own k and v inputs: :mod:`tutorial_lib.core.arch`);
    * post-norm (OLMo-2) or sandwich norm (Gemma 2), where a head's result is not its additive share of the
      residual stream: EAP (a head's change ``N(A + Δ_h) - N(A)``; node scores at the head's own output) and
      the patching engine (the norm recomputed on the patched sum, exact);
    * logit or attention-score soft caps (Gemma 2): EAP and the patching engine (the model's own attention
      module and :func:`apply_ln_final_and_unembed`);
    * bidirectional attention and a left-padding tokenizer (the model would build an attention mask): EAP
      only (it runs the model's own forward);
    * positional embeddings other than learned (``"standard"``) or ``"rotary"``: none.

    What the trainer's fused forward (``"fast_forward"``) refuses is said by the same list.
    """
    if engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r}; accepted: {ENGINES}")
    cfg = model.cfg
    problems = []

    def reject(problem: str, handled_by: tuple = ()) -> None:
        if engine not in handled_by:
            problems.append(problem)

    if cfg.positional_embedding_type not in ("standard", "rotary"):
        reject(f"positional_embedding_type={cfg.positional_embedding_type!r} (accepted: 'standard', 'rotary')")
    if getattr(cfg, "parallel_attn_mlp", False):
        reject("parallel_attn_mlp=True", handled_by=("eap", "patching", "fast_forward"))
    n_kv = getattr(cfg, "n_key_value_heads", None)
    if n_kv is not None:  # EAP and path patching run ungrouped: one k and v receiver per query head (core.arch)
        reject(f"grouped-query attention (n_key_value_heads={n_kv}; accepted: one key/value head per query head)",
               handled_by=("eap", "patching", "fast_forward"))
    if getattr(cfg, "use_normalization_before_and_after", False) or arch.is_post_norm(cfg):  # core.arch knows the norms
        reject("post-norm / sandwich-norm (accepted: pre-norm models such as GPT-2, Pythia, the zoo)",
               handled_by=("eap", "patching", "fast_forward"))
    for attr in ("attn_scores_soft_cap", "output_logits_soft_cap"):
        if (getattr(cfg, attr, -1.0) or -1.0) > 0:
            reject(f"{attr}={getattr(cfg, attr)}", handled_by=("eap", "patching", "fast_forward"))
    if getattr(cfg, "attention_dir", "causal") != "causal":
        reject("bidirectional attention", handled_by=("eap",))
    if getattr(model, "tokenizer", None) is not None and getattr(model.tokenizer, "padding_side", "right") == "left":
        reject("a left-padding tokenizer (the model would build an attention mask)", handled_by=("eap",))
    # --- the fused forward (zoo.fast) only: flags it does not implement (no family of the course sets them)
    for attr in ("use_attention_sinks", "use_logn_attn", "use_dynamic_ntk_rope", "load_in_4bit"):
        if getattr(cfg, attr, False):
            reject(f"{attr}=True (the fused forward does not implement it)", handled_by=("patching", "eap"))
    return problems


def check_supported(model, engine: str = "patching") -> None:
    """Raise ``ValueError`` if ``engine`` (see :data:`ENGINES`) does not handle this architecture."""
    problems = architecture_problems(model, engine)
    if problems:
        raise ValueError(f"{ENGINE_NAMES[engine]} cannot run this model: it has " + "; ".join(problems)
                         + " (what each engine runs: tutorial_lib.core.supported.architecture_problems)")
