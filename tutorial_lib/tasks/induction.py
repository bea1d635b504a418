"""Induction data: random tokens with a segment repeated at a random offset, its metrics, and a probe batch.

An *induction head* completes ``... A B ... A`` with ``B``: at the second ``A`` it attends to the token
*after* the earlier ``A`` and copies it. In the textbook circuit (Olsson et al. 2022) it needs a
*previous-token head* in an earlier layer, which writes "my previous token was A" into position ``B``;
the induction head's keys read that (K-composition).

Data that only ever repeats at one fixed offset can be solved by a positional shortcut ("copy the token
19 back") — no induction head needed. So :func:`make_induction` places a segment of random length at a
random position and repeats it at a random later position: the distance between the copies varies from
example to example, and only matching content finds the earlier occurrence.

Layout of one sequence (``BOS`` at 0, ``seq_len`` tokens in all)::

    BOS  r r r [s0 s1 s2 s3] r r r r r [s0 s1 s2 s3] r r
               ^src                    ^dst          (segment length L = 4)

* ``repeat_mask[b, p]``: ``p`` holds a token of the second copy (``dst .. dst+L-1``).
* ``loss_mask[b, p]``: the token at ``p + 1`` is predictable by induction, i.e. ``p`` in
  ``dst .. dst+L-2`` (the trainer's convention: mask marks positions whose NEXT token is predicted).
* ``target_pos[b, p]``: for those ``p``, the key position an induction head should attend to — the
  token after the earlier occurrence, ``src + (p - dst) + 1``; ``-1`` elsewhere.

The filler tokens are drawn *without* replacement within a sequence when the allowed vocabulary is
large enough, so the planted segment is the only repeat and "the earlier occurrence" is unambiguous.

Example::

    >>> d = make_induction(100, n=4, seq_len=32, seed=0)
    >>> d.tokens.shape, d.loss_mask.shape
    (torch.Size([4, 32]), torch.Size([4, 32]))
    >>> int(d.tokens[0, 0]) == d.bos
    True
    >>> b, p = d.loss_mask.nonzero()[0].tolist()
    >>> t = int(d.target_pos[b, p])
    >>> bool(d.tokens[b, t] == d.tokens[b, p + 1] and d.tokens[b, t - 1] == d.tokens[b, p])
    True

Metrics: :func:`induction_metrics` (loss and top-1 accuracy on the repeated tokens, per example),
:func:`induction_attention` (``[n_layers, n_heads]``: mean attention from each repeated token to the
token after its earlier occurrence), :func:`previous_token_attention` (``[n_layers, n_heads]``: mean
attention to ``q - 1``). For the spectral recipe, :func:`make_planted_pair_batch` builds Xu's probe
batch (random tokens, a planted pair ``A B``, final token ``A``, target ``B``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Sequence, Union

import torch
import torch.nn.functional as F
from jaxtyping import Float, Int
from torch import Tensor

from .base import TaskData

SPLITS = ("train", "test", "all")
_SPLIT_OFFSET = {"train": 0, "test": 1_000_003, "all": 2_000_029}


# ---------------------------------------------------------------------------------------------- vocab
def resolve_vocab(tokenizer_or_vocab_size, allowed=None) -> tuple[Tensor, int, int]:
    """Return ``(allowed_ids, bos_id, d_vocab)``.

    ``tokenizer_or_vocab_size`` is an int (a bare vocabulary: id 0 is BOS, ids 1.. are ordinary) or a
    Hugging Face tokenizer (its special tokens — BOS, pad, unk, eos — are never drawn). ``allowed``
    (a list, range or 1-D tensor of ids) restricts the random tokens further.
    """
    if isinstance(tokenizer_or_vocab_size, bool) or not (
        isinstance(tokenizer_or_vocab_size, int) or hasattr(tokenizer_or_vocab_size, "all_special_ids")
    ):
        raise ValueError(
            f"expected a vocabulary size (int) or a Hugging Face tokenizer, got {tokenizer_or_vocab_size!r}"
        )
    if isinstance(tokenizer_or_vocab_size, int):
        d_vocab = tokenizer_or_vocab_size
        if d_vocab < 3:
            raise ValueError(f"vocabulary size must be >= 3 (BOS plus two tokens), got {d_vocab}")
        bos, special = 0, {0}
    else:
        tok = tokenizer_or_vocab_size
        d_vocab = len(tok)
        bos = tok.bos_token_id if tok.bos_token_id is not None else tok.all_special_ids[0]
        special = set(tok.all_special_ids)
    if allowed is None:
        ids = torch.tensor([i for i in range(d_vocab) if i not in special], dtype=torch.long)
    else:
        ids = torch.as_tensor(list(allowed) if not isinstance(allowed, Tensor) else allowed, dtype=torch.long)
        ids = torch.unique(ids)
        bad = [int(i) for i in ids if int(i) in special or not 0 <= int(i) < d_vocab]
        if bad:
            raise ValueError(
                f"allowed token ids {bad[:10]} are special tokens or outside 0..{d_vocab - 1}; "
                "allowed ids must be ordinary tokens of the vocabulary"
            )
    if len(ids) < 2:
        raise ValueError(f"need at least 2 allowed token ids, got {len(ids)}")
    return ids, int(bos), int(d_vocab)


def _filler(allowed: Tensor, n: int, length: int, g: torch.Generator, distinct: bool) -> Tensor:
    """``[n, length]`` random allowed tokens; distinct within a row when ``distinct``."""
    if distinct:
        idx = torch.rand(n, len(allowed), generator=g).argsort(dim=1)[:, :length]
    else:
        idx = torch.randint(0, len(allowed), (n, length), generator=g)
    return allowed[idx]


# ---------------------------------------------------------------------------------------------- data
@dataclass
class InductionData:
    """Repeated-segment sequences; see the module docstring for the meaning of each mask."""

    tokens: Int[Tensor, "batch pos"]
    repeat_mask: Tensor  # bool [batch, pos]: tokens of the second copy
    loss_mask: Tensor  # bool [batch, pos]: positions whose next token is predictable by induction
    target_pos: Int[Tensor, "batch pos"]  # key to attend to from each loss_mask position, -1 elsewhere
    segments: list = field(default_factory=list)  # per row: list of (src, dst, length)
    bos: int = 0
    allowed: Optional[Tensor] = None

    def __len__(self) -> int:
        return self.tokens.shape[0]

    def __repr__(self) -> str:
        lens = [L for segs in self.segments for (_, _, L) in segs]
        return (f"InductionData(n={len(self)}, seq_len={self.tokens.shape[1]}, "
                f"segment lengths {min(lens)}..{max(lens)}, {int(self.loss_mask.sum())} induction targets)")

    def batch(self) -> tuple[Tensor, Tensor]:
        """``(tokens, loss_mask)`` in the form :func:`tutorial_lib.zoo.train.train` expects."""
        return self.tokens, self.loss_mask

    def offsets(self) -> Tensor:
        """Distance ``dst - src`` between the copies of every segment (1-D)."""
        return torch.tensor([d - s for segs in self.segments for (s, d, _) in segs])


def _place_segments(n: int, T: int, n_seg: int, lo: int, hi: int, g: torch.Generator,
                    tries: int = 6, cands: int = 8, near: float = 0.0, max_gap: int = 2):
    """Sample, per row, up to ``n_seg`` non-overlapping ``(src, dst, L)`` with ``src + L <= dst``.

    ``near``: the fraction of candidates whose copy follows its source closely (``dst - src - L`` uniform in
    ``0 .. max_gap``) instead of anywhere later; ``near=0`` (the default) draws exactly as before.

    Vectorised over rows: each round draws ``cands`` candidates for every row still missing a segment
    and keeps the first that overlaps nothing placed so far. Returns ``src, dst, L`` as ``[n, n_seg]``
    tensors, ``L = 0`` where a row found no room (rare; only when the row is nearly full).
    """
    pos = torch.arange(T)
    used = torch.zeros(n, T, dtype=torch.bool)
    used[:, 0] = True
    src = torch.zeros(n, n_seg, dtype=torch.long)
    dst = torch.zeros(n, n_seg, dtype=torch.long)
    length = torch.zeros(n, n_seg, dtype=torch.long)
    for s in range(n_seg):
        pending = torch.arange(n)
        for _ in range(tries):
            k = len(pending)
            if k == 0:
                break
            L = torch.randint(lo, hi + 1, (k, cands), generator=g)
            a = 1 + (torch.rand(k, cands, generator=g) * (T - 2 * L)).long()  # src uniform in 1..T-2L
            d = a + L + (torch.rand(k, cands, generator=g) * (T - 2 * L - a + 1)).long()  # dst in a+L..T-L
            if near:
                close = torch.rand(k, cands, generator=g) < near
                gap = torch.randint(0, max_gap + 1, (k, cands), generator=g)
                d = torch.where(close, torch.minimum(a + L + gap, T - L), d)
            p3 = pos[None, None, :]
            span = ((p3 >= a[..., None]) & (p3 < (a + L)[..., None])) | ((p3 >= d[..., None]) & (p3 < (d + L)[..., None]))
            ok = ~(used[pending][:, None, :] & span).any(-1)  # [k, cands]
            found = ok.any(1)
            pick = ok.float().argmax(1)  # first valid candidate
            r = torch.arange(k)[found]
            c = pick[found]
            rows = pending[found]
            used[rows] |= span[r, c]
            src[rows, s], dst[rows, s], length[rows, s] = a[r, c], d[r, c], L[r, c]
            pending = pending[~found]
    return src, dst, length


def induction_batch(
    allowed: Tensor,
    bos: int,
    n: int,
    seq_len: int,
    g: torch.Generator,
    min_len: int = 4,
    max_len: int = 20,
    n_segments: int = 1,
    distinct: Optional[bool] = None,
    near: float = 0.0,
) -> InductionData:
    """Generate ``n`` sequences from generator ``g`` (vectorised; the training batch function's fast path).

    ``near``: the fraction of segments copied within 0-2 tokens of their source (see :func:`_place_segments`)."""
    if seq_len < 2 * min_len + 2:
        raise ValueError(f"seq_len={seq_len} is too short for two copies of a {min_len}-token segment plus BOS")
    if not 1 <= min_len <= max_len:
        raise ValueError(f"need 1 <= min_len <= max_len, got min_len={min_len}, max_len={max_len}")
    if n_segments < 1:
        raise ValueError(f"n_segments must be >= 1, got {n_segments}")
    if distinct is None:
        distinct = len(allowed) >= seq_len
    elif distinct and len(allowed) < seq_len - 1:
        raise ValueError(f"distinct=True needs >= {seq_len - 1} allowed tokens, have {len(allowed)}")
    max_len = min(max_len, (seq_len - 1) // 2)
    tokens = torch.empty(n, seq_len, dtype=torch.long)
    tokens[:, 0] = bos
    tokens[:, 1:] = _filler(allowed, n, seq_len - 1, g, distinct)
    src, dst, length = _place_segments(n, seq_len, n_segments, min_len, max_len, g, near=near)
    # one gather copies every segment: position dst + j reads src + j (sources are never destinations)
    read = torch.arange(seq_len).repeat(n, 1)
    target = torch.full((n, seq_len), -1, dtype=torch.long)
    j = torch.arange(max_len)
    for s in range(n_segments):
        inside = j[None, :] < length[:, s, None]  # [n, max_len]
        rows = torch.arange(n)[:, None].expand_as(inside)[inside]
        d_pos = (dst[:, s, None] + j)[inside]
        s_pos = (src[:, s, None] + j)[inside]
        read[rows, d_pos] = s_pos
        last = (j[None, :] < (length[:, s, None] - 1))[inside]  # every copied token but the last
        target[rows[last], d_pos[last]] = s_pos[last] + 1
    tokens = tokens.gather(1, read)
    repeat = read != torch.arange(seq_len)
    segments = [[(a, d, L) for a, d, L in zip(*row) if L > 0]
                for row in zip(src.tolist(), dst.tolist(), length.tolist())]
    return InductionData(tokens, repeat, target >= 0, target, segments, bos, allowed)


def make_induction(
    tokenizer_or_vocab_size,
    n: int,
    seq_len: int = 64,
    seed: int = 0,
    split: str = "test",
    min_len: int = 4,
    max_len: int = 20,
    n_segments: int = 1,
    allowed: Union[None, Sequence[int], Tensor] = None,
    distinct: Optional[bool] = None,
) -> InductionData:
    """``n`` sequences of random tokens, each with a segment repeated at a random later offset.

    Args:
        tokenizer_or_vocab_size: an int vocabulary size (BOS = 0, all other ids drawn) or a tokenizer
            (its special tokens are never drawn).
        n: number of sequences. ``seq_len``: tokens per sequence, BOS included.
        seed, split: ``split`` (``"train"``, ``"test"`` or ``"all"``) shifts the seed so the same
            ``seed`` gives disjoint random streams for training and evaluation data.
        min_len, max_len: segment length range (inclusive; capped at ``(seq_len - 1) // 2``).
        n_segments: repeated segments per sequence (non-overlapping; fewer if they do not fit).
        allowed: ids the random tokens come from (default: every non-special id).
        distinct: filler tokens distinct within a sequence (default: when the vocabulary allows).

    >>> d = make_induction(500, n=200, seq_len=64, seed=1)
    >>> float(d.offsets().float().std()) > 5      # the repeat distance varies: no positional shortcut
    True
    """
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; accepted: {SPLITS}")
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    ids, bos, _ = resolve_vocab(tokenizer_or_vocab_size, allowed)
    g = torch.Generator().manual_seed(int(seed) + _SPLIT_OFFSET[split])
    return induction_batch(ids, bos, n, seq_len, g, min_len, max_len, n_segments, distinct)


def induction_batch_fn(
    tokenizer_or_vocab_size,
    batch_size: int = 64,
    seq_len: int = 64,
    min_len: int = 4,
    max_len: int = 20,
    n_segments: int = 1,
    allowed=None,
    distinct: Optional[bool] = None,
    train_on_all: bool = False,
    near: float = 0.0,
):
    """A ``batch_fn(step, generator) -> (tokens, loss_mask)`` for :func:`tutorial_lib.zoo.train.train`.

    ``train_on_all=True`` puts every position in the loss (the model must also learn the filler's
    unigram statistics); the default trains only on the induction-predictable tokens. ``near``: the fraction of
    segments copied within 0-2 tokens of their source (the rest anywhere later).
    """
    ids, bos, _ = resolve_vocab(tokenizer_or_vocab_size, allowed)

    def batch_fn(step: int, g: torch.Generator):
        d = induction_batch(ids, bos, batch_size, seq_len, g, min_len, max_len, n_segments, distinct, near=near)
        mask = torch.ones_like(d.loss_mask) if train_on_all else d.loss_mask
        return d.tokens, mask

    return batch_fn


# ---------------------------------------------------------------------------------------------- metrics
def _pattern_chunks(model, tokens: Tensor, fwd_hooks=(), batch_size: int = 128):
    """Yield ``(row_slice, patterns)`` with patterns ``[n_layers, chunk, n_heads, q, k]`` (no grad)."""
    names = {f"blocks.{l}.attn.hook_pattern" for l in range(model.cfg.n_layers)}
    dev = next(model.parameters()).device
    for i in range(0, tokens.shape[0], batch_size):
        with torch.no_grad(), model.hooks(fwd_hooks=list(fwd_hooks)):
            _, cache = model.run_with_cache(tokens[i:i + batch_size].to(dev), names_filter=lambda n: n in names)
        pats = torch.stack([cache[f"blocks.{l}.attn.hook_pattern"] for l in range(model.cfg.n_layers)])
        yield slice(i, i + batch_size), pats.cpu()


def induction_attention(model, data: InductionData, fwd_hooks=(), batch_size: int = 128) -> Float[Tensor, "n_layers n_heads"]:
    """Per head: mean attention from each induction-predictable position to the token after its earlier occurrence.

    Averaged over every ``(b, q)`` with ``data.loss_mask[b, q]``; the key is ``data.target_pos[b, q]``.
    ``fwd_hooks`` (e.g. :func:`tutorial_lib.core.circuits.ablation_hooks`) are active during the run, so
    ``induction_attention(model, d, ablation_hooks(model, ["a0.h1"]))`` shows what a layer-0 ablation
    does to the layer-1 heads' attention. Chance level is about ``1 / (q + 1)``.
    """
    total = torch.zeros(model.cfg.n_layers, model.cfg.n_heads)
    count = 0
    for rows, pats in _pattern_chunks(model, data.tokens, fwd_hooks, batch_size):
        b, q = data.loss_mask[rows].nonzero(as_tuple=True)
        k = data.target_pos[rows][b, q]
        total += pats[:, b, :, q, k].sum(0)  # advanced indices first: [N, n_layers, n_heads]
        count += len(b)
    if count == 0:
        raise ValueError("the data has no induction-predictable position (empty loss_mask)")
    return total / count


def previous_token_attention(model, tokens: Union[Tensor, InductionData], fwd_hooks=(), batch_size: int = 128) -> Float[Tensor, "n_layers n_heads"]:
    """Per head: mean attention from position ``q`` to ``q - 1`` over ``q >= 2`` (``q = 1``'s previous is BOS)."""
    if isinstance(tokens, InductionData):
        tokens = tokens.tokens
    if tokens.shape[1] < 3:
        raise ValueError(f"need sequences of >= 3 tokens, got {tokens.shape[1]}")
    total = torch.zeros(model.cfg.n_layers, model.cfg.n_heads)
    q = torch.arange(2, tokens.shape[1])
    for _, pats in _pattern_chunks(model, tokens, fwd_hooks, batch_size):
        total += pats[..., q, q - 1].mean(-1).sum(1)
    return total / tokens.shape[0]


def induction_metrics(model, data: InductionData, fwd_hooks=(), batch_size: int = 128) -> dict:
    """Per example: ``loss`` (mean nats) and ``accuracy`` (top-1) on the induction-predictable tokens.

    Returns ``{"loss": Tensor[n], "accuracy": Tensor[n]}``; rows without a repeat get NaN.
    """
    dev = next(model.parameters()).device
    losses, accs = [], []
    for i in range(0, len(data), batch_size):
        tok = data.tokens[i:i + batch_size].to(dev)
        m = data.loss_mask[i:i + batch_size, :-1].to(dev)
        with torch.no_grad(), model.hooks(fwd_hooks=list(fwd_hooks)):
            logits = model(tok)[:, :-1]
        ce = F.cross_entropy(logits.transpose(1, 2), tok[:, 1:], reduction="none")
        hit = (logits.argmax(-1) == tok[:, 1:]).float()
        cnt = m.sum(1).float()
        losses.append(((ce * m).sum(1) / cnt).cpu())
        accs.append(((hit * m).sum(1) / cnt).cpu())
    return {"loss": torch.cat(losses), "accuracy": torch.cat(accs)}


# ---------------------------------------------------------------------------------------------- probe
class PlantedPairData(TaskData):
    """Xu's probe batch: random tokens with a planted pair ``A B``; the final token is ``A``, the target ``B``.

    ``positions``: ``"A1"`` (earlier A), ``"B1"`` (= the induction target, A1 + 1), ``"end"`` (T - 1).
    Selectivity targets for the spectral recipe: induction → ``B1``, previous token → ``end - 1``,
    duplicate → ``A1``, BOS → 0, self → ``end``. ``corrupt`` replaces the earlier ``A`` with a fresh
    token, so no earlier occurrence of the final token remains. ``metric`` = log p(B) at the end.
    """

    def metric(self, logits: Float[Tensor, "batch pos d_vocab"]) -> Float[Tensor, "batch"]:
        return self.answer_logprob(logits)

    def accuracy(self, logits: Float[Tensor, "batch pos d_vocab"], k: int = 1) -> Float[Tensor, "batch"]:
        """1.0 where ``B`` is among the top-``k`` predictions at the final position."""
        top = self.final_logits(logits).topk(k, dim=-1).indices
        return (top == self.answers.to(top.device)[:, None]).any(-1).float()

    def target_logit(self, logits: Float[Tensor, "batch pos d_vocab"]) -> Float[Tensor, "batch"]:
        """The logit of ``B`` at the final position."""
        final = self.final_logits(logits)
        return final.gather(1, self.answers.to(final.device)[:, None])[:, 0]


def make_planted_pair_batch(
    tokenizer_or_vocab_size,
    n: int,
    seq_len: int = 32,
    seed: int = 0,
    allowed: Union[None, Sequence[int], Tensor] = None,
    split: str = "test",
) -> PlantedPairData:
    """``n`` probe sequences ``BOS r .. r A B r .. r A`` (length ``seq_len``), target ``B``.

    The earlier ``A`` sits uniformly in ``1 .. seq_len - 4``; all other tokens are distinct random
    allowed tokens (when the vocabulary allows), so ``A`` occurs exactly twice and ``B`` once.

    >>> p = make_planted_pair_batch(100, n=3, seq_len=16, seed=0)
    >>> a1 = p.positions["A1"]
    >>> bool((p.clean[:, -1] == p.clean[torch.arange(3), a1]).all()), bool((p.answers == p.clean[torch.arange(3), a1 + 1]).all())
    (True, True)
    """
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; accepted: {SPLITS}")
    if seq_len < 5:
        raise ValueError(f"seq_len must be >= 5 (BOS, A, B, a filler, A), got {seq_len}")
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    ids, bos, _ = resolve_vocab(tokenizer_or_vocab_size, allowed)
    if len(ids) < 4:
        raise ValueError(f"need >= 4 allowed token ids for a planted pair, got {len(ids)}")
    g = torch.Generator().manual_seed(int(seed) + _SPLIT_OFFSET[split] + 7)
    distinct = len(ids) >= seq_len
    fill = _filler(ids, n, seq_len, g, distinct)  # one spare column: the corruption token
    clean = torch.empty(n, seq_len, dtype=torch.long)
    clean[:, 0] = bos
    clean[:, 1:] = fill[:, : seq_len - 1]
    a1 = torch.randint(1, seq_len - 3, (n,), generator=g)
    rows = torch.arange(n)
    if not distinct:  # make B differ from A, and A absent elsewhere, by resampling the conflicts
        for b in range(n):
            a, bb = clean[b, a1[b]], clean[b, a1[b] + 1]
            while bb == a:
                bb = ids[torch.randint(0, len(ids), (1,), generator=g)][0]
            clean[b, a1[b] + 1] = bb
            others = [p for p in range(1, seq_len) if p != a1[b] and clean[b, p] == a]
            choices = ids[ids != a]
            for p in others:
                clean[b, p] = choices[torch.randint(0, len(choices), (1,), generator=g)][0]
    clean[:, -1] = clean[rows, a1]
    corrupt = clean.clone()
    spare = fill[:, seq_len - 1]
    if not distinct:
        spare = torch.where(spare == clean[:, -1], ids[(torch.searchsorted(ids, spare.contiguous()) + 1) % len(ids)], spare)
    corrupt[rows, a1] = spare
    answers = clean[rows, a1 + 1]
    wrong = clean[rows, a1 + 2][:, None]  # the token after B: in context, but not the answer
    if hasattr(tokenizer_or_vocab_size, "decode"):
        prompts = [tokenizer_or_vocab_size.decode(r) for r in clean.tolist()]
        cprompts = [tokenizer_or_vocab_size.decode(r) for r in corrupt.tolist()]
    else:
        prompts = [" ".join(map(str, r)) for r in clean.tolist()]
        cprompts = [" ".join(map(str, r)) for r in corrupt.tolist()]
    end = torch.full((n,), seq_len - 1, dtype=torch.long)
    return PlantedPairData(
        name="planted pair (induction probe)", prompts=prompts, corrupt_prompts=cprompts,
        clean=clean, corrupt=corrupt, end_pos=end, answers=answers, wrong=wrong,
        positions={"A1": a1, "B1": a1 + 1, "end": end}, metric_name="log p(B)",
    )
