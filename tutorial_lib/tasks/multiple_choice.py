"""Copy-colours multiple choice (as in Li & Subramani 2026)::

    Question: An owl is cyan. What color is an owl?
    A. orange
    B. white
    C. tan
    D. cyan
    Answer:                                   -> " D"

The colour is stated in the question; the model has to find it among four options and say its letter.

* Animals and colours (:data:`tutorial_lib.tasks.vocab.ANIMALS`, ``COLORS``) must be single tokens with a
  leading space; others are dropped and counted. The article follows the animal (``An owl`` /
  ``A dog``), so every prompt has the same token length.
* The correct letter is balanced: example ``i`` has its answer at letter ``i % 4`` (before shuffling);
  the three other options are distinct random colours.
* Corruption: the *same* four options, permuted so the correct colour sits under another letter (it
  swaps places with a random other option). Same tokens, same length; only the right letter moves.
* Metric: logit difference, the correct letter minus the mean of the other three (``answers`` = the
  letter, ``wrong`` = the other three letters, all with a leading space). Accuracy: the correct letter
  has the top logit among " A".." D".
* ``positions``: ``"COLOR"`` (the colour in the question), ``"OPT_A"``..``"OPT_D"`` (each option's
  colour), ``"ANSWER_OPT"`` (the correct option's colour) and ``"END"``.
* Train/test split by the (animal, colour) pair: ``split_of("owl|cyan")``.

>>> task = make_multiple_choice("gpt2", 4, seed=0)
>>> print(task.prompts[0])
<|endoftext|> Question: A seal is red. What color is a seal?
A. lime
B. white
C. cyan
D. red
Answer:
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import torch

from .vocab import ANIMALS, COLORS
from .base import TaskData, TaskNotBuildable
from .tokenizers import (Example, TrainBatch, assemble, check_n, check_split, get_tokenizer, pieces_for,
                         split_of, train_batch)

LETTERS = ("A", "B", "C", "D")


@dataclass(repr=False)
class MultipleChoiceData(TaskData):
    """Multiple-choice examples; ``metric`` = correct letter - mean of the other three letters."""

    metric_name: str = "logit difference (correct letter - mean of others)"


def _pieces(animal: str, color: str, options: list[str]) -> list[str]:
    art = "An" if animal[0] in "aeiou" else "A"
    # "?\n" is one piece: Llama 3's and Qwen3's pre-tokenizers keep a newline with the punctuation before it
    out = [" Question", ":", f" {art}", f" {animal}", " is", f" {color}", ".", " What", " color", " is",
           f" {art.lower()}", f" {animal}", "?\n"]
    for k, (letter, opt) in enumerate(zip(LETTERS, options)):
        out += ([] if k == 0 else ["\n"]) + [letter, ".", f" {opt}"]
    return out + ["\n", "Answer", ":"]


#: piece indices of the question's colour and of option k's colour in :func:`_pieces`
_COLOR_PIECE, _OPTION_PIECE = 5, [15 + 4 * k for k in range(4)]


@functools.lru_cache(maxsize=16)
def _pool(tokenizer, split: str):
    p = pieces_for(tokenizer)
    animals = [a for a in ANIMALS if p.single(" " + a) is not None]
    colors = [c for c in COLORS if p.single(" " + c) is not None]
    dropped = {}
    if len(animals) < len(ANIMALS):
        dropped["animal not a single token"] = len(ANIMALS) - len(animals)
    if len(colors) < len(COLORS):
        dropped["colour not a single token"] = len(COLORS) - len(colors)
    if len(colors) < 4:
        raise TaskNotBuildable("multiple choice: the tokenizer has fewer than 4 single-token colours")
    pairs = [(a, c) for a in animals for c in colors if split_of(f"{a}|{c}") == split]
    return pairs, colors, dropped


def _sample(tokenizer, n: int, seed: int, split: str, corrupt: bool = True):
    pairs, colors, dropped = _pool(tokenizer, check_split(split))
    rng = np.random.default_rng(seed)
    n = check_n(n)
    picks = rng.integers(len(pairs), size=n).tolist()
    letters = (rng.permutation(n) % 4).tolist()
    moves = rng.integers(1, 4, size=n).tolist()
    draws = rng.integers(len(colors), size=(n, 12)).tolist()
    out = []
    for i in range(n):
        animal, color = pairs[picks[i]]
        others = list(dict.fromkeys(colors[j] for j in draws[i] if colors[j] != color))[:3]
        while len(others) < 3:  # (rare) fewer than 3 distinct other colours among the 12 draws
            c = colors[int(rng.integers(len(colors)))]
            others += [c] if c != color and c not in others else []
        k = letters[i]
        options = others[:k] + [color] + others[k:]
        k2 = (k + moves[i]) % 4
        swapped = list(options)
        swapped[k], swapped[k2] = swapped[k2], swapped[k]
        out.append(Example(
            _pieces(animal, color, options), _pieces(animal, color, swapped) if corrupt else [],
            " " + LETTERS[k], [" " + LETTERS[j] for j in range(4) if j != k],
            marks={"COLOR": _COLOR_PIECE, "ANSWER_OPT": _OPTION_PIECE[k],
                   **{f"OPT_{L}": _OPTION_PIECE[j] for j, L in enumerate(LETTERS)}},
            info={"animal": animal, "color": color, "options": options, "letter": LETTERS[k],
                  "corrupt_letter": LETTERS[k2]}))
    return out, dropped


def make_multiple_choice(tokenizer="zoo", n: int = 100, seed: int = 0, split: str = "test") -> MultipleChoiceData:
    """Build ``n`` copy-colours questions with moved-answer corruptions (see the module docstring)."""
    tokenizer = get_tokenizer(tokenizer)
    examples, dropped = _sample(tokenizer, n, seed, split)
    return assemble(MultipleChoiceData, "multiple choice", tokenizer, examples, dropped)


def letter_ids(tokenizer) -> torch.Tensor:
    """Ids of " A", " B", " C", " D" in ``tokenizer``."""
    p = pieces_for(get_tokenizer(tokenizer))
    return torch.tensor([p.ids(" " + L)[0] for L in LETTERS])


def sample_multiple_choice_ids(n: int, seed: int = 0, split: str = "train", tokenizer="zoo") -> TrainBatch:
    """Fast training pairs: prompt ids (with BOS) and the correct letter token."""
    tokenizer = get_tokenizer(tokenizer)
    return train_batch(tokenizer, _sample(tokenizer, n, seed, split, corrupt=False)[0])
