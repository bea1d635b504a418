"""The tasks of the answer-key models (:mod:`tutorial_lib.zoo.answer_key`): token ids in, :class:`TaskData` out.

They know no model: the answer-key model tells them which token ids play which part.

* :func:`make_repeat_task` -- induction on repeated random tokens: ``BOS A0 .. A5 A0 .. A4``, read at the last
  ``A4``, answer ``A5``. The corrupted prompt keeps the second half and draws a new first half in which ``A4`` sits
  elsewhere and is followed by another token, the *wrong* answer: an induction head that finds ``A4`` in the
  first half predicts ``A5`` on the clean prompt and the wrong token on the corrupted one.
* :func:`make_successor_task` -- a lookup: ``BOS f f n f f f =`` (fillers, one number ``n`` at a random place, a
  marker ``=`` last), answer ``succ(n)``; the corrupted prompt has another number ``n'`` at the same place,
  wrong answer ``succ(n')``.

Both are seeded; the same seed gives the same prompts. The metric is the logit difference (answer minus wrong).
"""
from __future__ import annotations

from typing import Mapping, Sequence

import torch

from .base import TaskData

REPEAT_HALF = 6  # tokens in the first half of an induction prompt


def _name(t: int) -> str:
    return f"t{t}"


def make_repeat_task(task_tokens: Sequence[int], bos: int, n: int = 32, seed: int = 0, half: int = REPEAT_HALF) -> TaskData:
    """``n`` induction prompts over ``task_tokens`` (distinct tokens within a half); see the module docstring.

    >>> t = make_repeat_task(range(1, 13), bos=0, n=4, seed=0)
    >>> t.clean.shape, int(t.end_pos[0]), bool((t.clean[:, half + 1:] == t.corrupt[:, half + 1:]).all())  # doctest: +SKIP
    """
    toks = torch.as_tensor(list(task_tokens))
    if len(toks) < half + 2:
        raise ValueError(f"need at least {half + 2} task tokens for halves of {half}, got {len(toks)}")
    if n < 2:
        raise ValueError(f"n must be at least 2, got {n}")
    g = torch.Generator().manual_seed(seed)
    clean, corrupt, answers, wrong = [], [], [], []
    for _ in range(n):
        a = toks[torch.randperm(len(toks), generator=g)[:half]]
        cue, ans = a[half - 2], a[half - 1]  # the prompt ends with the cue; the clean answer follows it
        while True:  # a new first half: the cue not last, followed by a token other than the answer
            b = toks[torch.randperm(len(toks), generator=g)[:half]]
            where = (b == cue).nonzero()
            if len(where) and int(where[0]) < half - 1 and b[int(where[0]) + 1] != ans:
                break
        second = a[:half - 1]
        clean.append(torch.cat([torch.tensor([bos]), a, second]))
        corrupt.append(torch.cat([torch.tensor([bos]), b, second]))
        answers.append(int(ans))
        wrong.append(int(b[int(where[0]) + 1]))
    clean, corrupt = torch.stack(clean), torch.stack(corrupt)
    end = torch.full((n,), clean.shape[1] - 1)
    return TaskData(
        name="answer key: induction", prompts=[" ".join(map(_name, r.tolist())) for r in clean],
        corrupt_prompts=[" ".join(map(_name, r.tolist())) for r in corrupt], clean=clean, corrupt=corrupt,
        end_pos=end, answers=torch.tensor(answers), wrong=torch.tensor(wrong)[:, None],
        positions={"ANSWER_SRC": torch.full((n,), half)}, metric_name="logit difference")


def make_successor_task(numbers: Sequence[int], fillers: Sequence[int], marker: int, bos: int,
                        successor: Mapping[int, int], n: int = 32, seed: int = 0, body: int = 6) -> TaskData:
    """``n`` lookup prompts ``BOS <body tokens, one of them a number> <marker>``, answer ``successor[number]``;
    the corrupted prompt has another number at the same place (see the module docstring)."""
    nums, fill = torch.as_tensor(list(numbers)), torch.as_tensor(list(fillers))
    if len(nums) < 2 or len(fill) < 1:
        raise ValueError(f"need at least 2 numbers and 1 filler, got {len(nums)} and {len(fill)}")
    if n < 2:
        raise ValueError(f"n must be at least 2, got {n}")
    g = torch.Generator().manual_seed(seed)
    clean, corrupt, answers, wrong, where = [], [], [], [], []
    for _ in range(n):
        row = fill[torch.randint(len(fill), (body,), generator=g)]
        i = int(torch.randint(body, (1,), generator=g))
        k, k2 = torch.randperm(len(nums), generator=g)[:2].tolist()
        a, b = row.clone(), row.clone()
        a[i], b[i] = nums[k], nums[k2]
        clean.append(torch.cat([torch.tensor([bos]), a, torch.tensor([marker])]))
        corrupt.append(torch.cat([torch.tensor([bos]), b, torch.tensor([marker])]))
        answers.append(successor[int(nums[k])])
        wrong.append(successor[int(nums[k2])])
        where.append(i + 1)
    clean, corrupt = torch.stack(clean), torch.stack(corrupt)
    return TaskData(
        name="answer key: successor", prompts=[" ".join(map(_name, r.tolist())) for r in clean],
        corrupt_prompts=[" ".join(map(_name, r.tolist())) for r in corrupt], clean=clean, corrupt=corrupt,
        end_pos=torch.full((n,), clean.shape[1] - 1), answers=torch.tensor(answers),
        wrong=torch.tensor(wrong)[:, None], positions={"NUMBER": torch.tensor(where)}, metric_name="logit difference")
