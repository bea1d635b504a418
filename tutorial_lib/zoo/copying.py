"""Copying on chosen tokens: a measurement of induction that a narrow training vocabulary cannot fool (issue 30).

Induction heads copy *any* sequence: in GPT-2, Pythia or the course's induction models, a random token sequence
repeated once is predicted on its second pass, whatever tokens it holds. A model trained to copy only some tokens
can look the same on those tokens and do nothing on the others. :func:`copying_on_tokens` repeats random sequences
drawn from a token set you choose -- ``BOS, x1 .. xL, x1 .. xL`` with ``L`` distinct tokens -- and reads:

* ``first_loss`` / ``second_loss``: mean loss (nats) predicting ``x2 .. xL`` on the first and on the second pass
  (``x1`` is left out of both: nothing announces it); ``drop`` = first - second;
* ``top1``: how often the second pass's ``x2 .. xL`` is the top prediction;
* every head's *induction score*: the mean attention from each second-pass token to the token after its earlier
  occurrence (key ``q - L + 1``); ``heads`` are those with score >= 0.3 (:data:`INDUCTION_SCORE`).

:func:`copy_token_sets` names the two sets worth comparing for a model: the tokens its copying was trained on
and the ordinary tokens it was never trained to copy. :func:`copying_contrast` measures both::

    >>> from tutorial_lib.zoo.copying import copying_contrast          # doctest: +SKIP
    >>> copying_contrast(model).table()                                # doctest: +SKIP

``zoo-multitask-medium`` is trained to copy a seeded half of its ordinary tokens and copies the other half too
(``docs/zoo.md`` and the manifest's ``copying`` entry hold the figures); the medium model it replaced copied its 241 filler
words (7 heads, a 6.4-nat drop) and nothing else (no head, 0.4 nats, top-1 0%). On GPT-2 both sets should copy.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Sequence, Union

import torch
import torch.nn.functional as F
from torch import Tensor

from ..core.minority import MINORITY_FRACTION, is_minority
from ..tasks.tokenizers import pieces_for
from ..tasks.vocab import FILLER
from .split_induction import ordinary_ids

INDUCTION_SCORE = 0.3  # a head is counted when it puts this much attention on the induction target
# issue 30's targets for general induction, on tokens never repeated in training (with a minority of heads)
GENERAL_DROP, GENERAL_TOP1 = 2.0, 0.5


@dataclass
class Copying:
    """What :func:`copying_on_tokens` measured on one token set."""

    first_loss: float
    second_loss: float
    top1: float
    scores: Tensor = field(repr=False)  # [n_layers, n_heads] induction scores
    n_tokens: int = 0  # size of the token set the sequences were drawn from
    label: str = ""

    @property
    def drop(self) -> float:
        return self.first_loss - self.second_loss

    @property
    def heads(self) -> list[str]:
        """Heads with induction score >= :data:`INDUCTION_SCORE`, best first."""
        flat = self.scores.flatten()
        H = self.scores.shape[1]
        order = [int(i) for i in flat.argsort(descending=True) if flat[i] >= INDUCTION_SCORE]
        return [f"a{i // H}.h{i % H}" for i in order]

    @property
    def best_head(self) -> str:
        i, H = int(self.scores.flatten().argmax()), self.scores.shape[1]
        return f"a{i // H}.h{i % H}"

    @property
    def best_score(self) -> float:
        return float(self.scores.max())

    def as_dict(self) -> dict:
        """The figures the zoo manifest records (rounded)."""
        return {"first_loss": round(self.first_loss, 3), "second_loss": round(self.second_loss, 3),
                "drop": round(self.drop, 3), "top1": round(self.top1, 3), "n_heads": len(self.heads),
                "heads": self.heads, "best_head": self.best_head, "best_score": round(self.best_score, 3),
                "n_tokens": self.n_tokens}

    def row(self) -> str:
        return (f"{self.label or 'tokens'} ({self.n_tokens}): loss {self.first_loss:.2f} -> {self.second_loss:.2f} "
                f"nats, {len(self.heads)} head(s) >= {INDUCTION_SCORE} (best {self.best_head} {self.best_score:.2f}), "
                f"top-1 {100 * self.top1:.0f}%")


def repeated_sequences(token_ids: Union[Sequence[int], Tensor], bos: int, n_seqs: int = 32, length: int = 24,
                       seed: int = 0) -> Tensor:
    """``[n_seqs, 2 * length + 1]``: BOS, ``length`` distinct tokens drawn from ``token_ids``, the same again."""
    ids = torch.unique(torch.as_tensor(list(token_ids) if not isinstance(token_ids, Tensor) else token_ids,
                                       dtype=torch.long))
    if len(ids) < length:
        raise ValueError(f"need at least length={length} distinct tokens to draw from, got {len(ids)}")
    if length < 2 or n_seqs < 1:
        raise ValueError(f"need length >= 2 and n_seqs >= 1, got length={length}, n_seqs={n_seqs}")
    g = torch.Generator().manual_seed(int(seed))
    seq = ids[torch.rand(n_seqs, len(ids), generator=g).argsort(1)[:, :length]]
    return torch.cat([torch.full((n_seqs, 1), bos, dtype=torch.long), seq, seq], 1)


@torch.no_grad()
def copying_on_tokens(model, token_ids: Union[Sequence[int], Tensor], n_seqs: int = 32, length: int = 24,
                      seed: int = 0, label: str = "", bos: Optional[int] = None) -> Copying:
    """Loss on the first and second pass of repeated random sequences of ``token_ids``, every head's induction
    score, and top-1 on the second pass (see the module docstring). ``model``: a HookedTransformer with a context of
    at least ``2 * length + 1`` positions; ``bos`` starts each sequence (default: its tokenizer's BOS)."""
    if 2 * length + 1 > model.cfg.n_ctx:
        raise ValueError(f"2 * length + 1 = {2 * length + 1} positions exceed the model's context of {model.cfg.n_ctx}")
    if bos is None:
        tok = model.tokenizer
        bos = tok.bos_token_id if tok.bos_token_id is not None else tok.all_special_ids[0]
    toks = repeated_sequences(token_ids, bos, n_seqs, length, seed).to(next(model.parameters()).device)
    names = {f"blocks.{l}.attn.hook_pattern" for l in range(model.cfg.n_layers)}
    logits, cache = model.run_with_cache(toks, names_filter=lambda n: n in names)
    L = length
    logp = logits.float().log_softmax(-1)
    first = torch.arange(1, L)  # positions predicting x2 .. xL on the first pass
    second = torch.arange(L + 1, 2 * L)  # ... on the second pass
    nll = lambda pos: -logp[:, pos].gather(-1, toks[:, pos + 1, None])[..., 0]
    top1 = (logits[:, second].argmax(-1) == toks[:, second + 1]).float().mean().item()
    q = torch.arange(L + 1, 2 * L + 1)  # every second-pass token; its earlier occurrence is at q - L
    scores = torch.stack([cache[f"blocks.{l}.attn.hook_pattern"][:, :, q, q - L + 1].float().mean((0, 2))
                          for l in range(model.cfg.n_layers)])
    return Copying(nll(first).mean().item(), nll(second).mean().item(), top1, scores.cpu(),
                   n_tokens=int(torch.unique(torch.as_tensor(token_ids)).numel()), label=label)


@dataclass
class TokenSets:
    """The token set a model's copying was trained on (``trained``) and the ordinary tokens it was not (``held_out``)."""

    trained: list
    held_out: list
    trained_label: str
    held_out_label: str


def trained_copy_vocab(mix: dict) -> Optional[str]:
    """How a zoo model's training repeated tokens, read from its mix (``asdict(MixSpec)``): ``"filler"``, ``"split"``
    or ``"all"`` when it has induction rows, ``None`` when it has none."""
    return mix.get("induction_vocab") if mix.get("rows", {}).get("induction") else None


def copy_token_sets(model, held_out_cap: Optional[int] = None, seed: int = 0, mix: Optional[dict] = None) -> TokenSets:
    """The two token sets :func:`copying_contrast` compares, read from a zoo model's training mix (its manifest):

    * ``induction_vocab="filler"`` (the medium model before issue 30): the 241 filler words its induction rows
      repeat, and every other ordinary token;
    * ``induction_vocab="split"``: the trained part of its seeded split and the held-out part
      (:mod:`tutorial_lib.zoo.split_induction`);
    * any other model (GPT-2, Pythia, a zoo model not trained to copy): the filler words that are single tokens of
      its tokenizer, and the other ordinary tokens -- neither set was singled out in its training.

    ``held_out_cap``: keep a seeded sample of at most this many held-out ids (a 50k vocabulary needs no more).
    ``mix``: the training mix (``asdict(MixSpec)``) when the model has no manifest entry yet (the build).
    """
    tok = model.tokenizer
    if mix is None:
        mix = (getattr(model, "zoo_entry", None) or {}).get("mix", {})
    vocab = trained_copy_vocab(mix)
    if vocab == "split":
        from .split_induction import split_ids

        held, trained = split_ids(tok, mix.get("induction_held_out_seed", 0), mix.get("induction_held_out_fraction", 0.5))
        sets = TokenSets(sorted(trained.tolist()), held.tolist(), "trained tokens (repeated in training)",
                         "held-out tokens (never repeated in training)")
    else:
        pieces = pieces_for(tok)
        filler = sorted({i for i in (pieces.single(" " + w) for w in FILLER) if i is not None})
        rest = sorted(set(ordinary_ids(tok).tolist()) - set(filler))
        if vocab == "filler":
            sets = TokenSets(filler, rest, f"the {len(filler)} filler words (repeated in training)",
                             "every other ordinary token (never repeated in training)")
        else:
            sets = TokenSets(filler, rest, f"{len(filler)} filler words (single tokens here)", "every other ordinary token")
    if held_out_cap is not None and len(sets.held_out) > held_out_cap:
        g = torch.Generator().manual_seed(int(seed))
        keep = torch.randperm(len(sets.held_out), generator=g)[:held_out_cap]
        sets.held_out = sorted(sets.held_out[i] for i in keep.tolist())
    return sets


@dataclass
class Contrast:
    """Copying on the trained and on the held-out tokens of one model (:func:`copying_contrast`)."""

    trained: Copying
    held_out: Copying

    @property
    def general(self) -> bool:
        """Copying that holds on held-out tokens: a 2-nat drop and at least one head >= 0.3 there."""
        return self.held_out.drop >= GENERAL_DROP and len(self.held_out.heads) >= 1

    def missed(self) -> dict:
        """Issue 30's targets for general induction, read on the held-out tokens, that this contrast misses
        (``{name: (value, target)}``): a drop of >= 2 nats, a minority of heads >= 0.3
        (:func:`tutorial_lib.core.minority.is_minority`), top-1 >= 50% on the second pass."""
        h, out = self.held_out, {}
        if h.drop < GENERAL_DROP:
            out["copying_held_out_drop"] = (round(h.drop, 3), GENERAL_DROP)
        if not is_minority(len(h.heads), h.scores.numel()):
            out["copying_held_out_heads"] = (len(h.heads), f"1 to {MINORITY_FRACTION:.0%} of {h.scores.numel()}")
        if h.top1 < GENERAL_TOP1:
            out["copying_held_out_top1"] = (round(h.top1, 3), GENERAL_TOP1)
        return out

    def record(self, n_seqs: int, length: int, seed: int) -> dict:
        """The zoo manifest's ``copying`` entry: both sets' figures, their labels and the protocol."""
        return {"measured_by": ("tutorial_lib.zoo.copying.copying_contrast (BOS, L distinct tokens, the same L again; "
                                "loss on x2..xL of each pass; induction score = attention from each second-pass token "
                                f"to the token after its earlier occurrence, heads >= {INDUCTION_SCORE})"),
                "protocol": {"n_seqs": n_seqs, "length": length, "seed": seed},
                "trained": {**self.trained.as_dict(), "tokens": self.trained.label},
                "held_out": {**self.held_out.as_dict(), "tokens": self.held_out.label}}

    def table(self):
        import pandas as pd

        rows = {c.label: {"tokens": c.n_tokens, "loss, first pass": round(c.first_loss, 2),
                          "loss, second pass": round(c.second_loss, 2), "drop (nats)": round(c.drop, 2),
                          f"heads >= {INDUCTION_SCORE}": len(c.heads), "best head": f"{c.best_head} ({c.best_score:.2f})",
                          "top-1, second pass": f"{100 * c.top1:.0f}%"} for c in (self.trained, self.held_out)}
        return pd.DataFrame(rows).T

    def reading(self) -> str:
        t, h = self.trained, self.held_out
        verdict = ("Copying holds on the held-out tokens too: the heads are induction heads in the general sense."
                   if self.general else
                   "On the held-out tokens it does not copy: these heads copy the trained tokens, which is not induction "
                   "in the sense of GPT-2's heads, which copy any token.")
        return (f"On {t.label}: loss {t.first_loss:.2f} → {t.second_loss:.2f} nats, {len(t.heads)} head(s) with induction "
                f"score ≥ {INDUCTION_SCORE} (best {t.best_head}, {t.best_score:.2f}), top-1 {100 * t.top1:.0f}%. On "
                f"{h.label}: {h.first_loss:.2f} → {h.second_loss:.2f} nats, {len(h.heads)} head(s) (best {h.best_head}, "
                f"{h.best_score:.2f}), top-1 {100 * h.top1:.0f}%. " + verdict)


def copying_contrast(model, n_seqs: int = 32, length: int = 24, seed: int = 0, mix: Optional[dict] = None) -> Contrast:
    """:func:`copying_on_tokens` on both of :func:`copy_token_sets`' sets (the same seed for both)."""
    sets = copy_token_sets(model, held_out_cap=5000, seed=seed, mix=mix)
    length = min(length, (model.cfg.n_ctx - 1) // 2)
    return Contrast(copying_on_tokens(model, sets.trained, n_seqs, length, seed, label=sets.trained_label),
                    copying_on_tokens(model, sets.held_out, n_seqs, length, seed, label=sets.held_out_label))
