"""Two-digit addition (as in Li & Subramani 2026): "Compute: 23 + 45 =" -> " 68".

* Operands are drawn uniformly from ``low``..``high`` (default 10..99). The answer ``" {a+b}"`` must be
  one token; pairs whose sum is not (or whose operands are not) are dropped from the pool and counted
  in ``dropped`` (GPT-2 and the zoo tokenizer have every sum 20..198 as one token, so none are).
* Tokenizers that write a number apart from the space before it (Llama 3: ``' 68'`` -> ``'Ġ', '68'``; numbers
  up to three digits are one token) or digit by digit (Qwen3 ``'Ġ', '6', '8'``; Gemma ``'▁', '6', '8'``) get the
  paper's own layout, ``"Compute: 23 + 45 = "``: the prompt ends with the space token and the answer is
  ``"68"``. Where the sum is several tokens (Qwen3, Gemma), the task reads its *first* token, as the paper's
  accuracy does ("compare only to the first continuation token"), and each corrupted prompt's sum starts with
  another token (a donor with the same first digit is skipped), so the metric still separates the two
  answers; ``info["answer_tokens"]`` / ``info["answer_ids"]`` list the whole answer, and
  :meth:`AdditionData.whole_answer_accuracy` asks for every token of it (teacher forced), the stricter reading
  beside the paper's. ``layout`` (``"word"`` / ``"spaced"``) says which.
* Corruption "re-pairing": the corrupted prompt takes both operands from *another* example of the same
  dataset whose sum differs (the next example in a shuffled cycle that qualifies). Both prompts have
  the same tokens except the two operands.
* Metric: logit difference, logit(clean sum) - logit(corrupted sum) at the last position
  (``answers`` = clean sum, ``wrong`` = [corrupted sum]). Accuracy: the answer is the argmax over the
  *whole vocabulary* at ``end_pos``. ``positions``: ``"A"``, ``"B"`` (the operands) and ``"END"``.
* Train/test split by the unordered operand pair: ``split_of("23+45")`` with the smaller operand
  first, so 23 + 45 and 45 + 23 are both test or both train.
* Training helpers: :func:`sample_addition_ids` (two-digit train pairs) and
  :func:`sample_small_addition_ids` (one operand 0..9, the other 0..99: "Compute: 47 + 6 ="). The
  second kind is never a test prompt (test operands are 10..99), and it is what lets a small model
  learn the number line exactly: on two-digit pairs alone a 2-layer model memorises the training pairs
  and misses held-out sums by +-1 (measured in ``tutorial_lib.zoo.multitask``'s docstring).

>>> task = make_addition("gpt2", 4, seed=0)
>>> task.prompts[0]
'<|endoftext|> Compute: 86 + 60 ='
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import torch
from jaxtyping import Float
from torch import Tensor

from .base import TaskData, TaskNotBuildable
from .tokenizers import (Example, TrainBatch, assemble, check_n, check_split, get_tokenizer, pieces_for,
                         split_of, train_batch)


@dataclass(repr=False)
class AdditionData(TaskData):
    """Addition examples; ``metric`` = logit(sum) - logit(corrupted sum); ``accuracy`` = top-1."""

    metric_name: str = "logit difference (sum - corrupted sum)"
    layout: str = "word"  #: "word" (" 68" one token) or "spaced" ("= " then the sum; its first token is read)

    def accuracy(self, logits: Float[Tensor, "batch pos d_vocab"]) -> Float[Tensor, "batch"]:
        """1.0 where the answer is the most likely token of the whole vocabulary."""
        final = self.final_logits(logits)
        return (final.argmax(-1) == self.answers.to(final.device)).float()

    def whole_answer_accuracy(self, model, batch_size: int = 64) -> Float[Tensor, "batch"]:
        """1.0 where the model writes the *whole* sum greedily, token after token (teacher forced: each later token
        is read after the right earlier ones). On a tokenizer that writes numbers digit by digit (Qwen3, Gemma:
        ``"68"`` -> ``'6', '8'``) :meth:`accuracy` reads the first digit only, as the paper does; this is the
        stricter reading beside it. Where the sum is one token the two are the same."""
        ids = [info.get("answer_ids", [int(a)]) if isinstance(info, dict) else [int(a)]
               for info, a in zip(self.info or [{}] * len(self), self.answers.tolist())]
        out = []
        dev = self.clean.device
        for start in range(0, len(self), batch_size):
            rows = range(start, min(start + batch_size, len(self)))
            seqs = [self.clean[i, : int(self.end_pos[i]) + 1].tolist() + ids[i][:-1] for i in rows]
            width = max(len(q) for q in seqs)
            tokens = torch.tensor([q + [q[-1]] * (width - len(q)) for q in seqs], device=dev)  # right-padded
            with torch.no_grad():
                pred = model(tokens).argmax(-1)
            for j, i in enumerate(rows):
                end = int(self.end_pos[i])
                got = pred[j, end: end + len(ids[i])].tolist()
                out.append(float(got == ids[i]))
        return torch.tensor(out)


def _pieces(a: int, b: int, layout: str = "word") -> list[str]:
    if layout == "spaced":  # the paper's "Compute: {a} + {b} = ", the number apart from its space
        return [" Compute", ":", " ", f"{a}", " +", " ", f"{b}", " =", " "]
    return [" Compute", ":", f" {a}", " +", f" {b}", " ="]


def _answer(a: int, b: int, layout: str) -> str:
    return f"{a + b}" if layout == "spaced" else f" {a + b}"


#: piece index of each operand per layout (its first token)
_MARKS = {"word": {"A": 2, "B": 4}, "spaced": {"A": 3, "B": 6}}


def layout_of(tokenizer, low: int = 10, high: int = 99) -> str:
    """``"word"`` where the operands and at least two sums are single tokens with their leading space (GPT-2,
    the zoo), else ``"spaced"`` (Llama 3, Qwen3, Gemma; see the module docstring)."""
    return _pool(get_tokenizer(tokenizer), "test", low, high)[2]


@functools.lru_cache(maxsize=16)
def _pool(tokenizer, split: str, low: int, high: int):
    p = pieces_for(tokenizer)
    dropped: dict[str, int] = {}
    pairs = []
    for a in range(low, high + 1):
        for b in range(low, high + 1):
            if split_of(f"{min(a, b)}+{max(a, b)}") != split:
                continue
            if p.single(f" {a}") is None or p.single(f" {b}") is None or p.single(f" {a + b}") is None:
                key = "operand or sum not a single token"
                dropped[key] = dropped.get(key, 0) + 1
                continue
            pairs.append((a, b))
    if len({a + b for a, b in pairs}) >= 2:
        return pairs, dropped, "word"
    # the paper's layout: no pair is dropped; the sum is read by its first token
    if p.single(" ") is None or any(p.has_unk(f"{k}") for k in range(10)):
        raise TaskNotBuildable(f"addition: this tokenizer has neither single-token numbers with a leading space "
                               f"(' 68' -> {p.ids(' 68')}) nor a lone space token and digits")
    pairs = [(a, b) for a in range(low, high + 1) for b in range(low, high + 1)
             if split_of(f"{min(a, b)}+{max(a, b)}") == split]
    if len({p.ids(f"{a + b}")[0] for a, b in pairs}) < 2:
        raise TaskNotBuildable(f"addition: every sum of operands {low}..{high} starts with the same token, so no "
                               "corrupted sum can be told apart from the clean one")
    return pairs, {}, "spaced"


def _check_range(low: int, high: int) -> None:
    if not (isinstance(low, int) and isinstance(high, int) and 0 <= low < high):
        raise ValueError(f"operand range must satisfy 0 <= low < high (integers), got low={low!r}, high={high!r}")


def _sample(tokenizer, n, seed, split, low, high, corrupt: bool = True):
    _check_range(low, high)
    pairs, dropped, layout = _pool(tokenizer, check_split(split), low, high)
    rng = np.random.default_rng(seed)
    picks = [pairs[i] for i in rng.integers(len(pairs), size=check_n(n)).tolist()]
    if not corrupt:
        return [Example(_pieces(a, b, layout), [], _answer(a, b, layout), []) for a, b in picks], dropped, layout
    p = pieces_for(tokenizer)
    head = lambda pair: p.ids(_answer(*pair, layout))[0]  # noqa: E731  (the token the task reads)
    # donors: the examples in a shuffled cycle; fall back to fresh pool draws (e.g. when n == 1)
    order = rng.permutation(n).tolist()
    nxt = {order[i]: order[(i + 1) % n] for i in range(n)}
    out = []
    for i, (a, b) in enumerate(picks):
        j, donor = nxt[i], None
        for _ in range(n):
            if head(picks[j]) != head((a, b)):
                donor = picks[j]
                break
            j = nxt[j]
        while donor is None or head(donor) == head((a, b)):
            donor = pairs[int(rng.integers(len(pairs)))]
        c, d = donor
        out.append(Example(_pieces(a, b, layout), _pieces(c, d, layout), _answer(a, b, layout), [_answer(c, d, layout)],
                           marks=dict(_MARKS[layout]), info={"a": a, "b": b, "corrupt_a": c, "corrupt_b": d}))
    return out, dropped, layout


def make_addition(tokenizer="zoo", n: int = 100, seed: int = 0, split: str = "test", low: int = 10,
                  high: int = 99) -> AdditionData:
    """Build ``n`` addition examples with re-paired corruptions (see the module docstring)."""
    tokenizer = get_tokenizer(tokenizer)
    examples, dropped, layout = _sample(tokenizer, n, seed, split, low, high)
    task = assemble(AdditionData, "addition", tokenizer, examples, dropped, first_token=layout == "spaced")
    task.layout = layout
    return task


def sample_addition_ids(n: int, seed: int = 0, split: str = "train", tokenizer="zoo", low: int = 10,
                        high: int = 99) -> TrainBatch:
    """Fast training pairs: prompt ids (with BOS) and the sum token."""
    tokenizer = get_tokenizer(tokenizer)
    return train_batch(tokenizer, _sample(tokenizer, n, seed, split, low, high, corrupt=False)[0])


def sample_small_addition_ids(n: int, seed: int = 0, tokenizer="zoo", high: int = 99) -> TrainBatch:
    """Training rows with one one-digit operand: "Compute: a + d =" / "Compute: d + a =", d in 0..9, a in 0..high.

    Never test prompts of :func:`make_addition` (whose operands are 10..99 by default).
    """
    _check_range(0, high)
    tokenizer = get_tokenizer(tokenizer)
    p = pieces_for(tokenizer)
    rng = np.random.default_rng([seed, 7])
    a = rng.integers(0, high + 1, size=check_n(n)).tolist()
    d = rng.integers(0, 10, size=n).tolist()
    swap = rng.random(n) < 0.5
    pairs = [(y, x) if s else (x, y) for x, y, s in zip(a, d, swap)]
    missing = sorted({t for x, y in pairs for t in (f" {x}", f" {y}", f" {x + y}") if p.single(t) is None})
    if missing:
        raise ValueError(f"small addition: {missing[:5]} are not single tokens of this tokenizer "
                         "(the answer must be one token)")
    return train_batch(tokenizer, [Example(_pieces(x, y), [], f" {x + y}", []) for x, y in pairs])
