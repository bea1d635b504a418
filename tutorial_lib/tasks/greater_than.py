"""Greater-than (Hanna, Liu & Variengien 2023): "The war lasted from the year 1732 to the year 17" -> "33".."99".

The model must put its probability on two-digit end years *greater* than the start year's ``YY``.
This module rebuilds the paper's dataset for any tokenizer, token for token:

* prompt ``<|endoftext|> The {noun} lasted from the year {XXYY} to the year {XX}`` over the paper's
  120 nouns (:data:`tutorial_lib.tasks.vocab.NOUNS`); a noun that is not a single token is dropped;
* years: those of ``centuries`` (default 10..18, i.e. 1000-1899) whose ``" XXYY"`` tokenizes as exactly
  ``[" XX", "YY"]``, minus each century's first and last such year (:func:`valid_years`; 768 years with
  GPT-2's tokenizer). YY is balanced: example ``i`` has ``YY = 2 + i % 97`` (02..98), then the examples
  are shuffled;
* corruption "01": the same noun and century with ``YY`` -> ``01``. A century whose ``" XX01"`` is not
  ``[" XX", "01"]`` (GPT-2: 1001 -> " 100" + "1") cannot be corrupted cleanly, so its years are dropped
  (counted in ``dropped``) rather than misaligned;
* answers: the 100 tokens ``"00"``..``"99"`` (no leading space).

Variants (``variant=``), each with the same metrics:

========== ====================================================================== ==========
variant    prompt (after BOS)                                                     direction
========== ====================================================================== ==========
lasted     ``The {noun} lasted from the year 1732 to the year 17``                ``>``
started    ``The {noun} started in the year 1732 and ended in the year 17``       ``>``
sequence   ``1730, 1731, 1732, 17`` (three consecutive years; no noun)            ``>``
reversed   ``The {noun} ended in the year 1732 and started in the year 17``       ``<``
========== ====================================================================== ==========

For ``sequence`` every year of the run must tokenize as ``[" XX", "YY"]`` and its "01" corruption
replaces all three ``YY`` with ``01``. For ``reversed`` the correct years are those *less* than YY, so
the metric mirrors: ``p(y < YY) - p(y >= YY)`` (``direction == "<"``).

Train/test split: by the identity ``"{noun}|{year}"`` (``"{year}"`` for ``sequence``) through
:func:`~tutorial_lib.tasks.tokenizers.split_of` -- 20% of (noun, year) pairs are test, whatever the
variant, so a held-out pair stays held out in every variant.

>>> task = make_greater_than("gpt2", 200, seed=0)
>>> task.prompts[0], task.clean.shape, task.direction
('<|endoftext|> The case lasted from the year 1610 to the year 16', torch.Size([200, 13]), '>')
>>> task.corrupt_prompts[0]
'<|endoftext|> The case lasted from the year 1601 to the year 16'
>>> task.metric(logits)            # probability difference per example   # doctest: +SKIP
>>> task.cutoff_sharpness(logits)  # p(YY+1) - p(YY-1)                    # doctest: +SKIP
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Optional

import numpy as np
import torch
from jaxtyping import Float, Int
from torch import Tensor

from .vocab import NOUNS
from .base import TaskData, TaskNotBuildable
from .tokenizers import (TrainBatch, bos_text, check_n, check_split, get_tokenizer, index_list, pieces_for,
                         split_of)

VARIANTS = {
    "lasted": ([" The", "{noun}", " lasted", " from", " the", " year", "{year}", " to", " the", " year"], ">"),
    "started": ([" The", "{noun}", " started", " in", " the", " year", "{year}", " and", " ended", " in",
                 " the", " year"], ">"),
    "reversed": ([" The", "{noun}", " ended", " in", " the", " year", "{year}", " and", " started", " in",
                  " the", " year"], "<"),
    "sequence": (["{year-2}", ",", "{year-1}", ",", "{year}", ","], ">"),
}
DEFAULT_CENTURIES = tuple(range(10, 19))


@dataclass(repr=False)
class GreaterThanData(TaskData):
    """Greater-than examples; ``metric`` is the probability difference.

    Extra fields: ``yy[b]`` (the start year's last two digits), ``year_ids`` (ids of "00".."99"),
    ``direction`` (``">"``, or ``"<"`` for the reversed variant). ``answers``/``wrong`` hold the
    tokens YY+1 / YY-1 (swapped for ``"<"``), so :meth:`logit_diff` is the logit version of the
    cutoff sharpness.
    """

    yy: Optional[Tensor] = None
    year_ids: Optional[Tensor] = None
    direction: str = ">"
    variant: str = "lasted"
    metric_name: str = "probability difference"

    def year_probs(self, logits: Float[Tensor, "batch pos d_vocab"]) -> Float[Tensor, "batch 100"]:
        """p("00")..p("99") at ``end_pos``, softmax over the *full* vocabulary."""
        probs = self.final_logits(logits).float().softmax(-1)
        return probs[:, self.year_ids.to(probs.device)]

    def _correct(self, device) -> Tensor:
        yy = self.yy.to(device)[:, None]
        years = torch.arange(100, device=device)[None]
        return years > yy if self.direction == ">" else years < yy

    def prob_diff(self, logits: Float[Tensor, "batch pos d_vocab"]) -> Float[Tensor, "batch"]:
        """Sum of p over the correct years minus the sum over the others (of the 100 year tokens)."""
        p = self.year_probs(logits)
        good = self._correct(p.device)
        return (p * good).sum(1) - (p * ~good).sum(1)

    def cutoff_sharpness(self, logits: Float[Tensor, "batch pos d_vocab"]) -> Float[Tensor, "batch"]:
        """p(YY+1) - p(YY-1) (mirrored, p(YY-1) - p(YY+1), for direction ``"<"``)."""
        p = self.year_probs(logits)
        rows = torch.arange(len(self), device=p.device)
        yy = self.yy.to(p.device)
        sign = 1.0 if self.direction == ">" else -1.0
        return sign * (p[rows, yy + 1] - p[rows, yy - 1])

    def metric(self, logits: Float[Tensor, "batch pos d_vocab"]) -> Float[Tensor, "batch"]:
        return self.prob_diff(logits)

    def accuracy(self, logits: Float[Tensor, "batch pos d_vocab"]) -> Float[Tensor, "batch"]:
        """1.0 where the most likely of the 100 year tokens is a correct year."""
        p = self.year_probs(logits)
        best = p.argmax(1)
        yy = self.yy.to(p.device)
        return (best > yy).float() if self.direction == ">" else (best < yy).float()

    def subset(self, idx) -> "GreaterThanData":
        new = super().subset(idx)
        new.yy = self.yy[index_list(idx, len(self))]
        return new


# ------------------------------------------------------------------------------ years and nouns
def _check_centuries(centuries) -> tuple[int, ...]:
    cents = tuple(int(c) for c in centuries)
    bad = [c for c in cents if not 10 <= c <= 99]
    if not cents or bad:
        raise ValueError(f"centuries must be two-digit numbers 10..99 (e.g. range(11, 18)), got {centuries!r}")
    return cents


def _splits_cleanly(pieces, year: int) -> bool:
    xx, yy = pieces.single(f" {year // 100}"), pieces.single(f"{year % 100:02d}")
    return xx is not None and yy is not None and pieces.ids(f" {year}") == (xx, yy)


def valid_years(tokenizer, centuries=DEFAULT_CENTURIES) -> list[int]:
    """Years of ``centuries`` whose ``" XXYY"`` is ``[" XX", "YY"]``, minus each century's first and
    last such year (the paper's rule; 768 years for GPT-2 over 1000-1899)."""
    pieces = pieces_for(get_tokenizer(tokenizer))
    out = []
    for c in _check_centuries(centuries):
        ok = [y for y in range(100 * c, 100 * c + 100) if _splits_cleanly(pieces, y)]
        out += ok[1:-1]
    return out


def check_year_tokens(tokenizer) -> None:
    """Raise :class:`~tutorial_lib.tasks.base.TaskNotBuildable` unless ``tokenizer`` writes years as GPT-2 does.

    The task reads the two digits after ``" 17"`` as *one* token ("32"), so it needs ``" 1732"`` = ``" 17"`` +
    ``"32"`` and single tokens "00".."99". Llama 3 (``' 1732'`` -> ``'Ġ', '173', '2'``), Qwen3 and Gemma (one digit
    per token) write years otherwise: there the task does not exist in this form.
    """
    pieces = pieces_for(tokenizer)
    if any(_splits_cleanly(pieces, y) for y in (1732, 1645, 1288)):
        return
    got = tokenizer.convert_ids_to_tokens(list(pieces.ids(" 1732")))
    raise TaskNotBuildable(
        f"greater-than needs GPT-2's year tokens: ' 1732' written as [' 17', '32'], the answer YY one token of "
        f"'00'..'99'. This tokenizer writes ' 1732' as {got}, so the end year's two digits are not one token "
        "and the paper's task (and its probability difference over 100 year tokens) does not exist here. "
        "Use GPT-2 (MODEL_NAME = 'gpt2') or a zoo model, whose tokenizer splits years as GPT-2's does")


@functools.lru_cache(maxsize=32)
def _pool(tokenizer, centuries: tuple, variant: str, split: str):
    """Per YY (index 0..99): arrays of eligible (noun index, year) pairs, plus drop counts."""
    check_year_tokens(tokenizer)
    pieces = pieces_for(tokenizer)
    dropped: dict[str, int] = {}
    nouns = [n for n in NOUNS if pieces.single(f" {n}") is not None]
    if len(nouns) < len(NOUNS):
        dropped["noun not a single token"] = len(NOUNS) - len(nouns)
    years = valid_years(tokenizer, centuries)
    n_all = 100 * len(centuries)
    n_clean = sum(_splits_cleanly(pieces, y) for c in centuries for y in range(100 * c, 100 * c + 100))
    if n_all - n_clean:
        dropped["year not [' XX', 'YY']"] = n_all - n_clean
    dropped["first/last valid year of a century"] = n_clean - len(years)
    bad_cent = {c for c in centuries if not _splits_cleanly(pieces, 100 * c + 1)}
    lost = [y for y in years if y // 100 in bad_cent]
    if lost:
        dropped["century whose ' XX01' is not [' XX', '01']"] = len(lost)
    years = [y for y in years if y // 100 not in bad_cent]
    if variant == "sequence":
        keep = [y for y in years if y % 100 >= 4 and _splits_cleanly(pieces, y - 1) and _splits_cleanly(pieces, y - 2)]
        if len(keep) < len(years):
            dropped["sequence: YY < 04, or YY-1 / YY-2 not [' XX', 'YY']"] = len(years) - len(keep)
        years = keep
    pool: dict[int, list] = {}
    for yy in range(2, 99):
        pairs = []
        for y in (y for y in years if y % 100 == yy):
            if variant == "sequence":
                pairs += [(-1, y)] if split_of(f"{y}") == split else []
            else:
                pairs += [(i, y) for i, n in enumerate(nouns) if split_of(f"{n}|{y}") == split]
        if pairs:
            pool[yy] = pairs
    if not pool:
        raise ValueError(f"greater-than: no usable years for centuries {centuries} with this tokenizer")
    return nouns, pool, dropped


def _pieces_of(variant: str, noun: str, year: int) -> list[str]:
    template, _ = VARIANTS[variant]
    sub = {"{noun}": f" {noun}", "{year}": f" {year}", "{year-1}": f" {year - 1}", "{year-2}": f" {year - 2}"}
    return [sub.get(p, p) for p in template] + [f" {year // 100}"]


def _corrupt_pieces(variant: str, noun: str, year: int) -> list[str]:
    c01 = 100 * (year // 100) + 1
    sub = {"{noun}": f" {noun}", "{year}": f" {c01}", "{year-1}": f" {c01}", "{year-2}": f" {c01}"}
    return [sub.get(p, p) for p in VARIANTS[variant][0]] + [f" {year // 100}"]


def _sample(tokenizer, n, seed, split, variant, centuries):
    if variant not in VARIANTS:
        raise ValueError(f"unknown greater-than variant {variant!r}; use one of {sorted(VARIANTS)}")
    nouns, pool, dropped = _pool(tokenizer, _check_centuries(centuries), variant, check_split(split))
    rng = np.random.default_rng(seed)
    cycle = sorted(pool)
    order = rng.permutation(check_n(n)).tolist()
    pick = rng.random(n).tolist()
    out = []
    for i, u in zip(order, pick):
        rows = pool[cycle[i % len(cycle)]]
        ni, year = rows[int(u * len(rows))]
        out.append((nouns[ni] if ni >= 0 else "", year))
    return out, dropped


def make_greater_than(tokenizer="zoo", n: int = 100, seed: int = 0, split: str = "test",
                      variant: str = "lasted", centuries=DEFAULT_CENTURIES) -> GreaterThanData:
    """Build ``n`` greater-than examples (see the module docstring for the rules).

    ``positions`` has ``"XX"`` (the start year's " XX" token; the last year's for ``sequence``),
    ``"YY"`` (its "YY" token) and ``"END"`` (the final " XX", where the answer is read).
    """
    tokenizer = get_tokenizer(tokenizer)
    pieces = pieces_for(tokenizer)
    examples, dropped = _sample(tokenizer, n, seed, split, variant, centuries)
    year_ids = [pieces.single(f"{y:02d}") for y in range(100)]
    if None in year_ids:
        raise ValueError(f"greater-than: the tokenizer lacks a single token for '{year_ids.index(None):02d}'")
    year_ids = torch.tensor(year_ids)
    clean, corrupt, yy_pos, prompts, cprompts = [], [], [], [], []
    for noun, year in examples:
        ps, cs = _pieces_of(variant, noun, year), _corrupt_pieces(variant, noun, year)
        clean.append(pieces.encode(ps))
        corrupt.append(pieces.encode(cs))
        k = max(i for i, p in enumerate(ps) if p == f" {year}")  # the (last) full start year
        yy_pos.append(len(pieces.encode(ps[:k])) + 1)
        prompts.append(bos_text(tokenizer) + "".join(ps))
        cprompts.append(bos_text(tokenizer) + "".join(cs))
    unknown = sorted({pc for noun, year in examples[:1] for pc in _pieces_of(variant, noun, year)
                      + _corrupt_pieces(variant, noun, year) if pieces.has_unk(pc)})
    if unknown:  # nouns and years are checked in _pool; this catches template words
        raise ValueError(f"greater-than: words this tokenizer does not know: {unknown}")
    lengths = {len(r) for r in clean + corrupt}
    if len(lengths) != 1:
        raise ValueError(f"greater-than: prompts of different token lengths {sorted(lengths)}")
    clean_t, corrupt_t = torch.tensor(clean), torch.tensor(corrupt)
    yy = torch.tensor([y % 100 for _, y in examples])
    direction = VARIANTS[variant][1]
    step = 1 if direction == ">" else -1
    end = torch.full((len(examples),), clean_t.shape[1] - 1)
    yy_pos_t = torch.tensor(yy_pos)
    return GreaterThanData(
        name=f"greater-than ({variant})", prompts=prompts, corrupt_prompts=cprompts,
        clean=clean_t, corrupt=corrupt_t, end_pos=end,
        answers=year_ids[yy + step], wrong=year_ids[yy - step][:, None],
        positions={"XX": yy_pos_t - 1, "YY": yy_pos_t, "END": end.clone()},
        info=[{"noun": nn, "year": y} for nn, y in examples], dropped=dict(dropped),
        yy=yy, year_ids=year_ids, direction=direction, variant=variant,
    )


def sample_greater_than_ids(n: int, seed: int = 0, split: str = "train", tokenizer="zoo",
                            variant: str = "lasted", centuries=DEFAULT_CENTURIES, window: int = 15) -> TrainBatch:
    """Fast training pairs: prompt ids (with BOS) and one correct end-year token.

    The answer is drawn uniformly from the ``window`` years after YY (before YY for ``reversed``),
    clipped to 00..99; for ``sequence`` it is always the next year, YY+1. The prompts are those of
    ``make_greater_than(tokenizer, n, seed, split, variant, centuries)`` (same examples, same order),
    written straight into a token array (much faster than building the TaskData).
    """
    if not isinstance(window, int) or window < 1:
        raise ValueError(f"window must be a positive integer, got {window!r}")
    tokenizer = get_tokenizer(tokenizer)
    p = pieces_for(tokenizer)
    examples, _ = _sample(tokenizer, n, seed, split, variant, centuries)
    template = _pieces_of(variant, examples[0][0], examples[0][1])
    starts = np.cumsum([1] + [len(p.ids(pc)) for pc in template])[:-1].tolist()
    tokens = torch.tensor(p.encode(template)).repeat(len(examples), 1)
    for k, slot in enumerate(VARIANTS[variant][0] + ["{XX}"]):
        col = starts[k]
        if slot == "{noun}":
            tokens[:, col] = torch.tensor([p.ids(f" {noun}")[0] for noun, _ in examples])
        elif slot.startswith("{year") or slot == "{XX}":
            shift = {"{year}": 0, "{year-1}": 1, "{year-2}": 2, "{XX}": 0}[slot]
            ids = torch.tensor([p.ids(f" {year - shift}") for _, year in examples])
            tokens[:, col: col + ids.shape[1]] = ids if slot != "{XX}" else ids[:, :1]
    yy = torch.tensor([year % 100 for _, year in examples])
    year_ids = torch.tensor([p.ids(f"{y:02d}")[0] for y in range(100)])
    rng = np.random.default_rng([seed, 1])
    k = torch.from_numpy(rng.integers(1, window + 1, size=len(examples))) if variant != "sequence" else 1
    target = (yy + k).clamp(max=99) if VARIANTS[variant][1] == ">" else (yy - k).clamp(min=0)
    end = torch.full((len(examples),), tokens.shape[1] - 1)
    return TrainBatch(tokens, end, year_ids[target])


def sample_greater_than_01_ids(n: int, seed: int = 0, tokenizer="zoo", centuries=DEFAULT_CENTURIES,
                               window: int = 10) -> TrainBatch:
    """Training rows whose start year is the century's ``01`` -- the year the corrupted prompts use
    ("... from the year 1701 to the year 17") -- with an answer drawn from the ``window`` years after it.

    The task's own prompts never start at ``01`` (YY runs from 02 to 98), so a model trained on them alone has
    never seen what ``01`` means, and its corrupted run is undefined rather than "a year just after 01". GPT-2 has
    read such years in its training text; these rows give a zoo model the same. Only (noun, year) pairs of the
    training split are used, and no held-out prompt starts at 01, so nothing held out is trained on.
    """
    if not isinstance(window, int) or window < 1:
        raise ValueError(f"window must be a positive integer, got {window!r}")
    tokenizer = get_tokenizer(tokenizer)
    p = pieces_for(tokenizer)
    nouns = [x for x in NOUNS if p.single(f" {x}") is not None]
    pairs = [(noun, 100 * c + 1) for c in _check_centuries(centuries) for noun in nouns
             if _splits_cleanly(p, 100 * c + 1) and split_of(f"{noun}|{100 * c + 1}") == "train"]
    if not pairs:
        raise ValueError(f"greater-than: no training pair starts at a century's 01 for centuries {centuries}")
    rng = np.random.default_rng([seed, 2])
    pick = rng.integers(0, len(pairs), size=check_n(n))
    rows = [p.encode(_pieces_of("lasted", *pairs[i])) for i in pick.tolist()]
    tokens = torch.tensor(rows)
    year_ids = torch.tensor([p.ids(f"{y:02d}")[0] for y in range(100)])
    target = torch.from_numpy(1 + rng.integers(1, window + 1, size=len(rows)))
    return TrainBatch(tokens, torch.full((len(rows),), tokens.shape[1] - 1), year_ids[target])
