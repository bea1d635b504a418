"""Indirect object identification (IOI; Wang et al. 2022): "When Mary and John went to the store, John
gave a drink to" -> " Mary".

Two people are introduced; one of them (the subject, S) is mentioned again and gives something to...
the other one, the indirect object (IO). The model should say the IO's name.

* Templates (:data:`TEMPLATES`) all have the same 14 tokens after BOS with both tokenizers, and put the
  names at the same positions, so one dataset needs no padding and positions line up across examples.
* ``order="ABBA"`` writes ``{IO} and {S}`` ("When Mary and John ..., John ..."), ``"BABA"`` writes
  ``{S} and {IO}``; the default ``"mixed"`` alternates the two (even examples ABBA, odd BABA, before
  shuffling), so that "the first name" is not a shortcut.
* Names (:data:`tutorial_lib.tasks.vocab.NAMES`) must be single tokens with a leading space; names that
  are not are dropped and counted in ``dropped``.
* Corruption "ABC": the three name slots get three fresh names A, B, C, all different from each
  other and from IO and S; place, object and template stay. Nothing in it says who the IO is.
* Metric: logit difference, logit(IO) - logit(S) at the last position (``answers`` = IO,
  ``wrong`` = [S]). ``positions``: ``"IO"``, ``"S1"``, ``"S2"``, ``"END"``.
* Train/test split by the unordered name pair {IO, S}: 20% of pairs are test
  (:func:`~tutorial_lib.tasks.tokenizers.split_of` on ``"Mary|John"`` sorted).

>>> task = make_ioi("gpt2", 8, seed=0)
>>> task.prompts[0]
'<|endoftext|> When William and Lisa went to the park, Lisa gave a basketball to'
>>> task.clean.shape, task.positions["IO"][0].item(), task.positions["S2"][0].item()
(torch.Size([8, 15]), 2, 10)
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from .vocab import NAMES, OBJECTS, PLACES
from .base import TaskData, TaskNotBuildable
from .tokenizers import (Example, TrainBatch, assemble, check_n, check_split, get_tokenizer, pieces_for,
                         split_of, train_batch)

#: Each template is a piece list; "{A}" / "{B}" are the two introduced names, "{C}" the repeated one.
TEMPLATES = [
    " When {A} and {B} went to the {PLACE}, {C} gave a {OBJECT} to",
    " After {A} and {B} went to the {PLACE}, {C} gave a {OBJECT} to",
    " When {A} and {B} arrived at the {PLACE}, {C} gave a {OBJECT} to",
    " After {A} and {B} met at the {PLACE}, {C} gave a {OBJECT} to",
    " While {A} and {B} were at the {PLACE}, {C} handed a {OBJECT} to",
]
ORDERS = ("ABBA", "BABA", "mixed")


@dataclass(repr=False)
class IOIData(TaskData):
    """IOI examples; ``metric`` = logit(IO) - logit(S) at ``end_pos``."""

    metric_name: str = "logit difference (IO - S)"


@functools.lru_cache(maxsize=64)
def _compile(template: str) -> tuple:
    """' When {A} and {B} ..., {C}' -> ((' When', None), (' ', 'A'), (' and', None), ...).

    Each entry is one word-boundary piece: literal text, or a leading space plus a slot's value.
    """
    out = []
    for word in template.replace(",", " ,").split():
        if word.startswith("{") and word.endswith("}"):
            out.append((" ", word[1:-1]))
        else:
            out.append(("," if word == "," else " " + word, None))
    return tuple(out)


def _fill(compiled: tuple, slots: dict) -> list[str]:
    return [text + slots[key] if key else text for text, key in compiled]


@functools.lru_cache(maxsize=16)
def _usable(tokenizer, split: str):
    p = pieces_for(tokenizer)
    names = [n for n in NAMES if p.single(" " + n) is not None]
    dropped = {"name not a single token": len(NAMES) - len(names)} if len(names) < len(NAMES) else {}
    pairs = [(i, j) for i in range(len(names)) for j in range(len(names))
             if i != j and split_of("|".join(sorted((names[i], names[j])))) == split]
    places = [w for w in PLACES if p.single(" " + w) is not None]
    objects = [w for w in OBJECTS if p.single(" " + w) is not None]
    if len(names) < 5 or not pairs or not places or not objects:
        raise TaskNotBuildable("IOI: this tokenizer lacks enough single-token names (with a leading space), places "
                               f"or objects: {len(names)} names, {len(places)} places, {len(objects)} objects")
    return names, np.array(pairs), places, objects, dropped


def _sample(tokenizer, n: int, seed: int, split: str, order: str, templates) -> tuple[list, dict]:
    if order not in ORDERS:
        raise ValueError(f"unknown IOI order {order!r}; use one of {ORDERS}")
    templates = list(TEMPLATES if templates is None else templates)
    bad = [t for t in templates if t.count("{A}") != 1 or t.count("{B}") != 1 or t.count("{C}") != 1]
    if not templates or bad:
        raise ValueError(f"IOI templates need one {{A}}, {{B}} and {{C}} each; bad: {bad or templates}")
    names, pairs, places, objects, dropped = _usable(tokenizer, check_split(split))
    rng = np.random.default_rng(seed)
    n = check_n(n)
    pair = pairs[rng.integers(len(pairs), size=n)].tolist()
    tpl_i, place_i, obj_i = (rng.integers(m, size=n).tolist() for m in (len(templates), len(places), len(objects)))
    fresh = rng.integers(len(names), size=(n, 12)).tolist()
    compiled = [_compile(t) for t in templates]
    slots = [[[key for _, key in c].index(x) for x in "ABC"] for c in compiled]
    out = []
    for row, k in enumerate(rng.permutation(n).tolist()):
        i_io, i_s = pair[row]
        io, s = names[i_io], names[i_s]
        abc = list(dict.fromkeys(x for x in fresh[row] if x not in (i_io, i_s)))[:3]
        while len(abc) < 3:  # (rare) fewer than 3 fresh names among the 12 draws
            x = int(rng.integers(len(names)))
            abc += [x] if x not in abc and x not in (i_io, i_s) else []
        a, b, c = (names[x] for x in abc)
        tpl = compiled[tpl_i[row]]
        abba = order == "ABBA" or (order == "mixed" and k % 2 == 0)
        first, second = (io, s) if abba else (s, io)
        common = {"PLACE": places[place_i[row]], "OBJECT": objects[obj_i[row]]}
        clean = _fill(tpl, {"A": first, "B": second, "C": s, **common})
        corrupt = _fill(tpl, {"A": a, "B": b, "C": c, **common})
        ia, ib, ic = slots[tpl_i[row]]
        out.append(Example(clean, corrupt, " " + io, [" " + s],
                           marks={"IO": ia if abba else ib, "S1": ib if abba else ia, "S2": ic},
                           info={"IO": io, "S": s, "order": "ABBA" if abba else "BABA", "template": templates[tpl_i[row]],
                                 "corrupt_names": (a, b, c)}))
    return out, dropped


def make_ioi(tokenizer="zoo", n: int = 100, seed: int = 0, split: str = "test", order: str = "mixed",
             templates=None) -> IOIData:
    """Build ``n`` IOI examples with their ABC corruptions (see the module docstring).

    ``templates`` (default :data:`TEMPLATES`) are strings with ``{A}``, ``{B}`` (introduced names),
    ``{C}`` (the repeated subject), ``{PLACE}`` and ``{OBJECT}``, starting with a space.
    """
    tokenizer = get_tokenizer(tokenizer)
    examples, dropped = _sample(tokenizer, n, seed, split, order, templates)
    return assemble(IOIData, "IOI", tokenizer, examples, dropped)


def sample_ioi_ids(n: int, seed: int = 0, split: str = "train", tokenizer="zoo", order: str = "mixed",
                   templates=None) -> TrainBatch:
    """Fast training pairs: prompt ids (with BOS) and the IO name token."""
    tokenizer = get_tokenizer(tokenizer)
    return train_batch(tokenizer, _sample(tokenizer, n, seed, split, order, templates)[0])
