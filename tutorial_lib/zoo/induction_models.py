"""Small attention-only transformers that learn the textbook induction circuit in about two minutes on a CPU.

The spectral notebook (Xu 2026) trains models *in the notebook*, records checkpoints, and needs them to
form the textbook pair: a **previous-token head** in layer 0 (attends from ``q`` to ``q - 1``) whose
output the **induction head** in layer 1 reads through its keys (K-composition), so that at the second
``A`` of ``... A B ... A`` it attends to ``B`` and predicts it. This module holds a recipe that does
that, measured on one CPU thread (numbers below):

* 2 attention-only layers with LayerNorm and **rotary** positions;
* a vocabulary of 128 random symbols (token 0 is BOS), sequences of 48 tokens, batch 64;
* each sequence holds 3 segments of 2-8 random tokens, each repeated at a random later offset
  (:func:`tutorial_lib.tasks.induction.induction_batch`); the loss counts only the tokens an induction
  head can predict;
* AdamW, peak lr 5e-3 (``SIZE_LR``), cosine decay after a 5% warmup, 1000 steps.

What goes wrong nearby (measured; see the course notes): with a constant or higher learning rate
(1e-2), or shorter sequences over a smaller vocabulary (32 tokens over 64 symbols), the model often
learns a *displaced* copy circuit instead — layer-0 heads that attend 3-4 tokens back and a layer-1
head that attends 3-4 tokens past the earlier occurrence — which predicts just as well but is not the
textbook pair. Always check the attention scores (:func:`check_induction_pair`), not only the loss.
The pair forms abruptly (a phase change) after a plateau of roughly 400-500 steps; when the learning
rate decays too early (600-step cosine) some seeds never leave the plateau.

Sizes (all ``d_head`` 16): ``"small"`` (2 layers, d_model 64, 4 heads), ``"deep"`` (3 layers, d_model
64, 4 heads; the pair forms in layers 0-1 and layer 2 stays idle) and ``"large"`` (2 layers, d_model
128, 8 heads, lr 2.5e-3; slower and less reliable: its previous-token work is spread over several heads
at 1000 steps, and in one of four runs the pair had not formed).

Example (about two minutes of CPU on one thread)::

    model, result = train_induction_model("small", seed=0, checkpoints="log")
    report = check_induction_pair(model)
    report["prev_heads"], report["prev_score"]            # e.g. (['a0.h3', 'a0.h0'], 0.81)
    report["induction_heads"], report["induction_score"]  # e.g. (['a1.h0', ..., 'a1.h3'], 0.97)
    report["loss"], report["loss_prev_ablated"]           # 0.0 -> 9.4 nats on the repeated tokens
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Optional, Union

import torch
from transformer_lens import HookedTransformer, HookedTransformerConfig

from ..core.circuits import ablation_hooks
from ..core.device import get_device
from ..tasks import induction as ind
from . import store
from .train import TrainResult, train


@dataclass(frozen=True)
class InductionRecipe:
    """Data and optimiser settings of the induction recipe (all measured choices; see the module docstring)."""

    vocab_size: int = 128
    seq_len: int = 48
    batch_size: int = 64
    min_len: int = 2
    max_len: int = 8
    n_segments: int = 3
    steps: int = 1000
    warmup: float = 0.05
    weight_decay: float = 0.01
    positional: str = "rotary"
    normalization: Optional[str] = "LN"


RECIPE = InductionRecipe()

SIZES = {
    "small": dict(n_layers=2, d_model=64, n_heads=4, d_head=16),
    "deep": dict(n_layers=3, d_model=64, n_heads=4, d_head=16),
    "large": dict(n_layers=2, d_model=128, n_heads=8, d_head=16),
}
# Peak learning rate per size (with 5e-3 the large model learned a displaced circuit in our runs).
SIZE_LR = {"small": 5e-3, "deep": 5e-3, "large": 2.5e-3}


def _vocab(vocab) -> tuple[int, object]:
    """``(d_vocab, tokenizer_or_size)`` from an int vocabulary size or a tokenizer."""
    if vocab is None:
        vocab = RECIPE.vocab_size
    if isinstance(vocab, int):
        return vocab, vocab
    if hasattr(vocab, "all_special_ids"):
        return len(vocab), vocab
    raise ValueError(f"vocab must be an int vocabulary size or a tokenizer, got {vocab!r}")


def config(
    size: str = "small",
    vocab=None,
    n_ctx: Optional[int] = None,
    positional: Optional[str] = None,
    normalization: Union[str, None] = "default",
    seed: int = 0,
    **overrides,
) -> HookedTransformerConfig:
    """The ``HookedTransformerConfig`` of an induction model of ``size`` (``"small"`` or ``"large"``).

    ``vocab``: int size or tokenizer (default 128). ``positional``: ``"rotary"`` (default) or
    ``"standard"`` (learned absolute). ``overrides`` go straight into the config (e.g. ``n_layers=3``).

    >>> config("large").d_model, config("large").n_heads, config().positional_embedding_type
    (128, 8, 'rotary')
    """
    if size not in SIZES:
        raise ValueError(f"unknown size {size!r}; accepted: {sorted(SIZES)}")
    d_vocab, _ = _vocab(vocab)
    positional = positional or RECIPE.positional
    if positional not in ("rotary", "standard", "shortformer"):
        raise ValueError(f"positional must be 'rotary', 'standard' or 'shortformer', got {positional!r}")
    kw = dict(SIZES[size])
    kw.update(
        n_ctx=n_ctx or RECIPE.seq_len, d_vocab=d_vocab, attn_only=True, act_fn=None,
        normalization_type=RECIPE.normalization if normalization == "default" else normalization,
        positional_embedding_type=positional, seed=seed, device=str(get_device()),
    )
    if positional == "rotary":
        kw["rotary_dim"] = kw["d_head"]
    kw.update(overrides)
    return HookedTransformerConfig(**kw)


def make_model(size: str = "small", seed: int = 0, vocab=None, **config_kwargs) -> HookedTransformer:
    """A freshly initialised induction model (same ``seed`` → same initial weights)."""
    torch.manual_seed(seed)
    return HookedTransformer(config(size, vocab, seed=seed, **config_kwargs))


def train_induction_model(
    size: str = "small",
    seed: int = 0,
    steps: Optional[int] = None,
    checkpoints: Union[None, str, int, list] = "log",
    callbacks: Iterable = (),
    progress: bool = True,
    vocab=None,
    recipe: InductionRecipe = RECIPE,
    lr: Optional[float] = None,
    **config_kwargs,
) -> tuple[HookedTransformer, TrainResult]:
    """Build and train an induction model with ``recipe``; return ``(model, TrainResult)``.

    ``checkpoints``/``callbacks`` are passed to :func:`tutorial_lib.zoo.train.train` (``"log"``: 20
    log-spaced checkpoints; callbacks run as ``cb(step, model, tokens_seen)`` at each). ``vocab``: an
    int size or a tokenizer (random tokens then avoid its special tokens); default ``recipe.vocab_size``.
    ``lr``: peak learning rate (default ``SIZE_LR[size]``).
    """
    if size not in SIZES:
        raise ValueError(f"unknown size {size!r}; accepted: {sorted(SIZES)}")
    _, tok_or_size = _vocab(vocab if vocab is not None else recipe.vocab_size)
    model = make_model(size, seed, tok_or_size, n_ctx=recipe.seq_len, positional=recipe.positional,
                       normalization=recipe.normalization, **config_kwargs)
    batch_fn = ind.induction_batch_fn(
        tok_or_size, recipe.batch_size, recipe.seq_len, recipe.min_len, recipe.max_len, recipe.n_segments
    )
    result = train(
        model, batch_fn, steps or recipe.steps, lr=lr or SIZE_LR[size], seed=seed, checkpoint_steps=checkpoints,
        callbacks=callbacks, progress=progress, weight_decay=recipe.weight_decay, warmup=recipe.warmup,
        desc=f"induction {size} seed {seed}",
    )
    return model, result


def check_induction_pair(
    model: HookedTransformer,
    data: Optional[ind.InductionData] = None,
    n: int = 256,
    seed: int = 123,
    threshold: float = 0.5,
) -> dict:
    """Find the previous-token and induction heads and test the pair by ablation.

    On held-out ``data`` (default: ``n`` sequences like the training data, test split) it measures
    every head's previous-token score (mean attention to ``q - 1``) and induction score (mean attention
    to the token after the earlier occurrence). The induction head is the best-scoring head in layers
    ``>= 1``; the *previous-token heads* are the heads in the layers below it scoring ``>= threshold``
    (at least the best one). They are zero-ablated together and, as a control, the same number of
    other heads from the same layers (those with the lowest previous-token scores). Returns a dict::

        prev_heads, prev_score (best), induction_heads (all >= threshold in layers >= 1),
        induction_head (best), induction_score (best),
        loss, accuracy                         -- on the induction-predictable tokens, intact model
        loss_prev_ablated, induction_score_prev_ablated, accuracy_prev_ablated
        control_heads, loss_control_ablated, induction_score_control_ablated, accuracy_control_ablated
                                               -- None where no other head is left for a control
        prev_scores, induction_scores          -- [n_layers, n_heads] tensors
        formed   -- prev_score >= threshold and induction_score >= threshold and loss <= 1.0
    """
    if model.cfg.n_layers < 2:
        raise ValueError(f"an induction pair needs >= 2 layers; this model has {model.cfg.n_layers}")
    if data is None:
        data = ind.make_induction(
            model.cfg.d_vocab, n, model.cfg.n_ctx, seed=seed, split="test",
            min_len=RECIPE.min_len, max_len=RECIPE.max_len, n_segments=RECIPE.n_segments,
        )
    H = model.cfg.n_heads
    prev = ind.previous_token_attention(model, data)
    indu = ind.induction_attention(model, data)
    flat = int(indu[1:].flatten().argmax())
    il, ih = 1 + flat // H, flat % H
    below = prev[:il].flatten()  # candidate previous-token heads: every head below the induction head
    order = below.argsort(descending=True).tolist()
    chosen = [i for i in order if below[i] >= threshold] or order[:1]
    others = [i for i in reversed(order) if i not in chosen][: len(chosen)]
    name = lambda i: f"a{i // H}.h{i % H}"  # noqa: E731
    base = ind.induction_metrics(model, data)
    out = dict(
        prev_heads=[name(i) for i in chosen], prev_score=float(below[order[0]]),
        induction_heads=[f"a{l}.h{h}" for l in range(1, model.cfg.n_layers) for h in range(H)
                         if indu[l, h] >= threshold],
        induction_head=f"a{il}.h{ih}", induction_score=float(indu[il, ih]),
        loss=float(base["loss"].mean()), accuracy=float(base["accuracy"].mean()),
        prev_scores=prev, induction_scores=indu,
        control_heads=[name(i) for i in others] if len(others) == len(chosen) else None,
    )
    for tag, heads in (("prev", out["prev_heads"]), ("control", out["control_heads"])):
        if heads is None:
            for k in ("loss", "induction_score", "accuracy"):
                out[f"{k}_{tag}_ablated"] = None
            continue
        hooks = ablation_hooks(model, heads)
        m = ind.induction_metrics(model, data, hooks)
        out[f"loss_{tag}_ablated"] = float(m["loss"].mean())
        out[f"accuracy_{tag}_ablated"] = float(m["accuracy"].mean())
        out[f"induction_score_{tag}_ablated"] = float(ind.induction_attention(model, data, hooks)[il, ih])
    out["formed"] = out["prev_score"] >= threshold and out["induction_score"] >= threshold and out["loss"] <= 1.0
    return out


# ------------------------------------------------------------------------------------ shipped models
# Two induction models ship in data/zoo so that ``load_model("zoo-induction-small")`` works offline
# without training; notebook 03 still trains its own (that is the point of the notebook).
SHIPPED = {"zoo-induction-small": ("small", 1), "zoo-induction-deep": ("deep", 1)}


def pair_metrics(model: HookedTransformer) -> dict:
    """:func:`check_induction_pair` without its tensors: the JSON-safe figures a manifest records."""
    report = check_induction_pair(model)
    out = {}
    for k, v in report.items():
        if isinstance(v, torch.Tensor):
            continue
        out[k] = round(v, 6) if isinstance(v, float) else v
    return out


def build_induction_zoo(only: Optional[str] = None, progress: bool = True) -> dict:
    """Train the shipped induction models with the recipe, check the pair, save them with their figures.

    Returns ``{name: metrics}``. About 1-2 minutes of CPU per model on one thread.
    """
    import time
    from dataclasses import asdict


    if only is not None and only not in SHIPPED:
        raise ValueError(f"unknown induction model {only!r}; the shipped ones are {sorted(SHIPPED)}")
    out = {}
    for name, (size, seed) in SHIPPED.items():
        if only not in (None, name):
            continue
        t0 = time.time()
        model, _ = train_induction_model(size, seed, checkpoints=None, progress=progress)
        seconds = round(time.time() - t0, 1)
        model.eval()
        metrics = pair_metrics(model)
        if not metrics["formed"]:
            print(f"[zoo] {name}: the induction pair did NOT form ({metrics}); saved anyway, marked in the manifest")
        cfg = model.cfg
        store.save_model(model, name, {
            "description": (f"{cfg.n_layers}-layer attention-only transformer ({cfg.n_heads} heads/layer, "
                            f"d_model {cfg.d_model}, rotary) trained on induction over {cfg.d_vocab} bare token ids"),
            "size": size, "seed": seed, "steps": RECIPE.steps, "lr": SIZE_LR[size], "recipe": asdict(RECIPE),
            "train_seconds": seconds, "torch_threads": torch.get_num_threads(), "metrics": metrics,
        }, tokenizer_dir=None)
        print(f"[zoo] {name}: trained in {seconds}s; {metrics}")
        out[name] = metrics
    return out
