"""Induction rows that can be checked for generality: a seeded held-out half of the vocabulary is never repeated.

The medium recipe before issue 30 repeated only the 241 filler words, and its heads copied only those (see
:mod:`tutorial_lib.zoo.copying`). ``MixSpec(induction_vocab="split")`` draws the repeated segments from the
*trained* part of the ordinary tokens instead, and never repeats the seeded *held-out* part
(:func:`split_ids`; half of the ordinary tokens by default). Held-out tokens may still appear in the rows as
plain, unrepeated text (``MixSpec.induction_held_out_text``: the fraction of the plain positions they fill),
so that their embeddings and unembeddings are trained as inputs and as (unpredictable) targets, and the
softmax covers them. A test of copying on the held-out tokens is then a test of induction, not of memory.

The vocabulary can widen step by step (``MixSpec.induction_vocab_curriculum``: ``((step, k), ...)``, from
``step`` on the rows draw from the first ``k`` trained tokens, ``None`` for all of them): a closed softmax
over a few hundred tokens is what let induction heads form at all in this architecture (see
:mod:`tutorial_lib.zoo.multitask`). With ``induction_closed_vocab`` the softmax covers exactly the tokens the
rows can hold at that step; held-out text joins only once the trained vocabulary is at full width.

    >>> from tutorial_lib.tasks.tokenizers import zoo_tokenizer
    >>> tok = zoo_tokenizer()
    >>> held, trained = split_ids(tok, seed=0, fraction=0.5)
    >>> len(held) + len(trained) == len(tok) - len(tok.all_special_ids), set(held.tolist()) & set(trained.tolist())
    (True, set())

The pilots (issue 30)
---------------------

The recipes tried, with their figures, are condensed in ``docs/zoo.md``.
"""
from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor

from ..tasks.induction import induction_batch


def ordinary_ids(tokenizer, exclude=()) -> Tensor:
    """Every non-special token id of ``tokenizer`` (less ``exclude``), in id order."""
    skip = set(tokenizer.all_special_ids) | set(exclude)
    return torch.tensor([i for i in range(len(tokenizer)) if i not in skip], dtype=torch.long)


def split_ids(tokenizer, seed: int = 0, fraction: float = 0.5) -> tuple[Tensor, Tensor]:
    """``(held_out, trained)``: a seeded split of the ordinary (non-special) token ids. ``held_out`` is
    sorted; ``trained`` keeps the seeded order, so that its first ``k`` ids are a random ``k`` of them
    (the curriculum's narrow vocabularies)."""
    if not 0.0 < fraction < 1.0:
        raise ValueError(f"the held-out fraction must lie strictly between 0 and 1, got {fraction!r}")
    ordinary = ordinary_ids(tokenizer)
    perm = ordinary[torch.randperm(len(ordinary), generator=torch.Generator().manual_seed(int(seed)))]
    k = int(round(fraction * len(ordinary)))
    return perm[:k].sort().values, perm[k:]


class SplitInductionRows:
    """``rows(step, g) -> (tokens, loss_mask, vocab)``: ``n`` induction rows whose repeats use trained tokens only.

    ``vocab`` is the closed softmax's token set (``None`` when ``spec.induction_closed_vocab`` is off).
    """

    def __init__(self, tokenizer, spec, n: int, near: float):
        self.spec, self.n, self.near = spec, n, near
        self.held, self.trained = split_ids(tokenizer, spec.induction_held_out_seed, spec.induction_held_out_fraction)
        self.bos = tokenizer.bos_token_id
        stages = sorted(spec.induction_vocab_curriculum or [(0, None)])
        if stages[0][0] != 0:
            raise ValueError(f"induction_vocab_curriculum must start at step 0, got {stages}")
        for _, k in stages:
            if k is not None and not spec.induction_seq_len <= k:
                raise ValueError(f"a curriculum width of {k} tokens is below the row length {spec.induction_seq_len}")
        self.stages = stages

    def width(self, step: int) -> int:
        """How many trained tokens the rows draw from at ``step``."""
        k = [k for s, k in self.stages if s <= step][-1]
        return len(self.trained) if k is None else min(int(k), len(self.trained))

    def __call__(self, step: int, g: torch.Generator) -> tuple[Tensor, Tensor, Optional[Tensor]]:
        spec = self.spec
        k = self.width(step)
        allowed = self.trained[:k]
        lo, hi = spec.induction_len
        d = induction_batch(allowed, self.bos, self.n, spec.induction_seq_len, g, lo, hi, spec.induction_segments,
                            near=self.near)
        tokens, vocab = d.tokens, allowed
        if k == len(self.trained) and spec.induction_held_out_text:
            tokens = self._held_out_text(d.tokens, d.repeat_mask, g)
            vocab = torch.cat([allowed, self.held])
        return tokens, d.loss_mask, (vocab if spec.induction_closed_vocab else None)

    def _held_out_text(self, tokens: Tensor, repeat: Tensor, g: torch.Generator) -> Tensor:
        """Put distinct held-out tokens on a fraction of the plain positions (neither a copy nor its source)."""
        n, T = tokens.shape
        copied = torch.where(repeat, tokens, -1)
        source = (tokens[:, :, None] == copied[:, None, :]).any(-1) & ~repeat
        plain = ~repeat & ~source
        plain[:, 0] = False  # BOS
        pick = plain & (torch.rand(n, T, generator=g) < self.spec.induction_held_out_text)
        fresh = self.held[torch.rand(n, len(self.held), generator=g).argsort(1)[:, :T]]
        return torch.where(pick, fresh, tokens)


class EchoRows:
    """``rows(g) -> (tokens, loss_mask)``: copy rows over *every* ordinary token that never repeat one inside a row.

    A row is BOS, ``L`` distinct ordinary tokens (``lengths``: L drawn uniformly, both ends included), then a marker;
    the answer after the marker is a token of the row: the one just before it (marker ``" @"``, the first half of the
    rows) or the first one (marker ``" #"``, the second half). Every token, the held-out ones included, is thus an
    input and a copied output, so the path from a position's token to the output is trained for all of them, while no
    row holds a token twice: a held-out token is never the second occurrence an induction head could match
    (issue 30; figures in this module's docstring).
    """

    MARKERS = (" @", " #")

    def __init__(self, tokenizer, n: int, lengths: tuple = (6, 30)):
        lo, hi = (int(x) for x in lengths)
        if not 1 <= lo <= hi:
            raise ValueError(f"echo row lengths must satisfy 1 <= lo <= hi, got {lengths!r}")
        self.n, self.lo, self.hi = int(n), lo, hi
        self.markers = [tokenizer.convert_tokens_to_ids(m) for m in self.MARKERS]
        if any(m is None or m == tokenizer.unk_token_id for m in self.markers):
            raise ValueError(f"the tokenizer has no single token for the echo markers {self.MARKERS}")
        self.ordinary = ordinary_ids(tokenizer, exclude=self.markers)
        if len(self.ordinary) < hi:
            raise ValueError(f"echo rows of up to {hi} distinct tokens need that many ordinary tokens, "
                             f"the tokenizer has {len(self.ordinary)}")
        self.bos, self.pad = tokenizer.bos_token_id, tokenizer.pad_token_id

    def __call__(self, g: torch.Generator) -> tuple[Tensor, Tensor]:
        n, lo, hi = self.n, self.lo, self.hi
        L = torch.randint(lo, hi + 1, (n,), generator=g)
        T = int(L.max()) + 3
        pick = self.ordinary[torch.rand(n, len(self.ordinary), generator=g).argsort(1)[:, :hi]]
        rows = torch.arange(n)
        pos = torch.arange(T)[None, :]
        tokens = torch.full((n, T), self.pad, dtype=torch.long)
        tokens[:, 0] = self.bos
        inside = (pos >= 1) & (pos <= L[:, None])
        w = min(hi, T - 1)
        body = torch.full((n, T), self.pad, dtype=torch.long)
        body[:, 1: w + 1] = pick[:, :w]
        tokens = torch.where(inside, body, tokens)
        previous = rows < n // 2  # the first half copies the token before the marker, the rest the first token
        tokens[rows, L + 1] = torch.where(previous, self.markers[0], self.markers[1])
        tokens[rows, L + 2] = torch.where(previous, pick[rows, L - 1], pick[:, 0])
        mask = torch.zeros(n, T, dtype=torch.long)
        mask[rows, L + 1] = 1
        return tokens, mask


class PlainRows:
    """``rows(g) -> (tokens, loss_mask)``: rows of ``length`` distinct ordinary tokens after BOS, drawn uniformly
    from *every* ordinary token, every next token a target (weight ``weight``), under the full softmax.

    Nothing in a plain row repeats, for held-out and trained tokens alike, so the rows teach no rule about which
    tokens repeat; they make every held-out token what issue 30 asks it to be besides -- ordinary text and a
    prediction target -- so that the full-softmax task rows are not the only place its output is trained (there it
    is only ever pushed down). Pilot K2 (figures in the module docstring).
    """

    def __init__(self, tokenizer, n: int, length: int = 24, weight: float = 1.0):
        self.ordinary = ordinary_ids(tokenizer)
        if not 1 <= int(length) <= len(self.ordinary):
            raise ValueError(f"plain rows of {length!r} distinct tokens: need 1 to {len(self.ordinary)}")
        if not weight > 0:
            raise ValueError(f"plain row weight must be > 0, got {weight!r}")
        self.n, self.length, self.weight, self.bos = int(n), int(length), float(weight), tokenizer.bos_token_id

    def __call__(self, g: torch.Generator) -> tuple[Tensor, Tensor]:
        pick = self.ordinary[torch.rand(self.n, len(self.ordinary), generator=g).argsort(1)[:, :self.length]]
        tokens = torch.cat([torch.full((self.n, 1), self.bos, dtype=torch.long), pick], 1)
        mask = torch.full(tokens.shape, self.weight)
        mask[:, -1] = 0.0  # the last position has no next token
        return tokens, mask

