"""The object every task generator returns: clean and corrupted tokens, positions, answers, metrics.

All tasks share one shape of data so that patching, EAP and ablation code never special-cases a task:

* ``clean`` and ``corrupt`` are token tensors of the *same* shape ``[batch, pos]`` (right-padded with
  the tokenizer's pad token when prompts differ in length; causal attention makes right padding
  harmless). A clean/corrupt pair of different lengths is an error, never a silent misalignment.
* ``end_pos[b]`` is the position whose next-token prediction the task reads.
* ``answers[b]`` is the correct next token, ``wrong[b]`` the token(s) it is compared against.
* ``positions`` names other positions that matter (``{"YY": ...}`` for greater-than).
* :meth:`TaskData.metric` computes the task's main metric per example from logits
  ``[batch, pos, d_vocab]``; :meth:`TaskData.accuracy` is 1.0 where the answer is the top choice.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import torch
from jaxtyping import Float, Int
from torch import Tensor


class TaskNotBuildable(ValueError):
    """A task that cannot be built on this tokenizer (or here, e.g. ARC offline); the message says why.

    A ``ValueError``, so code that catches bad input still catches it; :func:`tutorial_lib.studies.consistency.study_tasks`
    catches exactly this one to skip a task and say why.
    """


@dataclass
class TaskData:
    """A batch of one task. Subclasses override :meth:`metric` (and maybe :meth:`accuracy`)."""

    name: str
    prompts: list[str]
    corrupt_prompts: list[str]
    clean: Int[Tensor, "batch pos"]
    corrupt: Int[Tensor, "batch pos"]
    end_pos: Int[Tensor, "batch"]
    answers: Int[Tensor, "batch"]
    wrong: Int[Tensor, "batch n_wrong"]
    positions: dict = field(default_factory=dict)
    info: list = field(default_factory=list)
    dropped: dict = field(default_factory=dict)  # reason -> count of candidate prompts dropped
    metric_name: str = "logit difference"

    def __post_init__(self):
        if self.clean.shape != self.corrupt.shape:
            raise ValueError(
                f"{self.name}: clean tokens {tuple(self.clean.shape)} and corrupt tokens "
                f"{tuple(self.corrupt.shape)} differ in shape; every clean prompt must have a corrupted "
                "prompt of the same token length"
            )

    def __len__(self) -> int:
        return self.clean.shape[0]

    def __repr__(self) -> str:
        drop = f", dropped={self.dropped}" if self.dropped else ""
        return f"{type(self).__name__}({self.name!r}, n={len(self)}, seq_len={self.clean.shape[1]}{drop})"

    # ------------------------------------------------------------------ reading logits
    def final_logits(self, logits: Float[Tensor, "batch pos d_vocab"]) -> Float[Tensor, "batch d_vocab"]:
        """Logits at each example's ``end_pos``."""
        if logits.shape[0] != len(self):
            raise ValueError(f"logits have batch {logits.shape[0]} but the task has {len(self)} examples")
        return logits[torch.arange(logits.shape[0], device=logits.device), self.end_pos.to(logits.device)]

    def logit_diff(self, logits: Float[Tensor, "batch pos d_vocab"]) -> Float[Tensor, "batch"]:
        """Logit of the answer minus the mean logit of the wrong answers."""
        final = self.final_logits(logits)
        dev = final.device
        right = final.gather(1, self.answers.to(dev)[:, None])[:, 0]
        wrong = final.gather(1, self.wrong.to(dev)).mean(1)
        return right - wrong

    def metric(self, logits: Float[Tensor, "batch pos d_vocab"]) -> Float[Tensor, "batch"]:
        """The task's main metric, per example (default: logit difference)."""
        return self.logit_diff(logits)

    def accuracy(self, logits: Float[Tensor, "batch pos d_vocab"]) -> Float[Tensor, "batch"]:
        """1.0 where the answer's logit beats every wrong answer's (per example)."""
        final = self.final_logits(logits)
        dev = final.device
        right = final.gather(1, self.answers.to(dev)[:, None])[:, 0]
        wrong = final.gather(1, self.wrong.to(dev)).max(1).values
        return (right > wrong).float()

    def answer_logprob(self, logits: Float[Tensor, "batch pos d_vocab"]) -> Float[Tensor, "batch"]:
        """log p(answer) at ``end_pos`` -- the metric Li & Subramani's EAP differentiates."""
        final = self.final_logits(logits).log_softmax(-1)
        return final.gather(1, self.answers.to(final.device)[:, None])[:, 0]

    def subset(self, idx) -> "TaskData":
        """A new task object holding only the examples ``idx`` (a slice, list or bool/long tensor)."""
        import copy

        if isinstance(idx, slice):
            idx = torch.arange(len(self), device="cpu")[idx]
        idx = torch.as_tensor(idx, device="cpu")  # the task's tensors live on the CPU
        if idx.dtype == torch.bool:
            idx = idx.nonzero()[:, 0]
        new = copy.copy(self)
        new.prompts = [self.prompts[i] for i in idx.tolist()]
        new.corrupt_prompts = [self.corrupt_prompts[i] for i in idx.tolist()]
        new.clean, new.corrupt = self.clean[idx], self.corrupt[idx]
        new.end_pos, new.answers, new.wrong = self.end_pos[idx], self.answers[idx], self.wrong[idx]
        new.positions = {k: v[idx] for k, v in self.positions.items()}
        new.info = [self.info[i] for i in idx.tolist()] if self.info else []
        return new


def task_positions(task, where) -> Optional[Tensor]:
    """``"END"`` / ``"YY"`` / any key of ``task.positions`` / a tensor / None -> positions [batch].

    How methods name positions (``sender_position="YY"``, ``position="END"``) for a :class:`TaskData`.
    """
    if where is None or isinstance(where, Tensor):
        return where
    if isinstance(where, str):
        if where in task.positions:
            return task.positions[where]
        if where.upper() == "END":
            return task.end_pos
        raise ValueError(f"unknown position {where!r}; this task has {['END'] + sorted(task.positions)}")
    raise ValueError(f"position must be None, a name like 'END' or 'YY', or a [batch] tensor; got {where!r}")
