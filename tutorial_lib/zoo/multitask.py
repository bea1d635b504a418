"""The multi-task training corpus: rows drawn from every task generator's *train* split (and, optionally, induction).

Each training row is one prompt followed by its answer token (loss on the answer only), exactly the
layout the evaluation reads: BOS at position 0, the prediction at ``end_pos``. Held-out test examples
never appear: every generator's ``split="train"`` excludes the identities its ``split="test"`` uses
(see :func:`tutorial_lib.tasks.tokenizers.split_of`). Induction rows are random word tokens with
repeated segments at random offsets and of random lengths (loss on the repeated tokens), so the model
must build an induction mechanism instead of a positional shortcut.

What the mix needs, measured on this machine (2-layer, d_model 128 model; held-out accuracy):

* **Addition** needs the small-operand rows (``"addition_small"``: "Compute: 47 + 6 =", one operand
  0..9, never a test prompt). On two-digit pairs alone the model memorises: 69% on training pairs, 4.5%
  on held-out pairs after 3,600 multi-task steps, errors mostly +-1. Addition-only pilots (128 rows per
  step, 1,800 steps): no small rows 9%; a quarter small rows 31%; half small rows 78%; half small rows
  and weight decay 0.5 (3,000 steps) 99.8%, with held-out accuracy tracking training accuracy all along
  (a number line learned, not a table). In the multi-task mix: 99.3-99.5% held-out.
* **Greater-than sharpness**: end years uniform over the ``greater_than_window`` = 10 years after YY
  (the best possible p(YY+1) - p(YY-1) is then 0.1; with 15 years it is 0.067 and the model reached
  0.044).
* **Multiple choice** is learned late and suddenly: with 12-16 rows per step it was at 49-74% after
  3,600 steps (lr 2e-3 or 3e-3), with 28 rows at 99.8% (lr 3e-3; 74% at lr 2e-3).
* **Weight decay** 0.1: 0.3-0.5 also made addition generalise but cost IOI or multiple choice.
* **Boolean logic** stays at 68-79% held-out on 2-4 operators in every mix tried with learned positions
  (32-48 rows, weight decay 0.1-0.5, lr 2e-3-3e-3), 68-72% at each depth from 2 to 5 operators in the
  shipped model: more than reading the last literal (60%), less than evaluating the expression with its
  parentheses removed (82%). Boolean-only pilots (1,500 steps) reach about the same on their *training*
  expressions (74% with 2 layers, 78% with 3; 4 layers, 2,000 steps: 84% on training expressions, 74%
  held-out): the model underfits the task rather than memorising it.
* **Rotary positions** (``positional_embedding_type="rotary"``, ``rotary_dim=32``; the patching engines
  support them) help boolean logic most: with the shipped mix 84.5% held-out (2 / 3 / 4 operators: 89 /
  88 / 78%), and with 48 boolean rows of 2-5 operators 86.8% (92 / 87 / 79%), every other target still
  met; 64 such rows gave 85.3% and cost addition 21 points (76%). They are not the default because
  notebook 02's consistency claim fails on them: at K = 30%, reuse@50 of the multiple-choice circuits is
  only 0.22-0.23 above the random baseline (the notebook asserts >= 0.3; 0.66 on the shipped model).
  Notebook 01's claims hold on the 48-row model (sufficiency 99.9%, necessity -0.256); on the
  shipped-mix one the corrupted "01" prompts themselves score +0.094, so corrupting the circuit cannot
  go below zero.
* **Induction** rows (``rows["induction"]``) are supported but not in the default mix, and no mix here
  formed an induction head. 16 induction rows (3 repeated segments of 2-8 of the 241 filler words) in the
  shipped mix, after 3,600 steps: loss 4.25 nats on the repeated tokens (ln 241 = 5.48), best head
  attention 0.08 to the induction target, multiple choice down to 77%; the same with rotary positions:
  4.40 nats, 0.07. Induction-only pilots (64 rows per step, 1,000 steps, rotary; measured on held-out
  34-token rows) leave this architecture at 4.06 nats on the filler words (4.49 at lr 5e-3 with 48-token
  rows; 3.61 after 900 steps on 128 of them) and at 3.54 nats even on the induction recipe's data (128 bare
  symbols). A model close to the recipe (attention-only, d_model 64, lr 5e-3, 48-token rows) stays at 4.60
  nats on the filler words; on the bare symbols it drives the loss to 0.009 by step 700 (0.002 at 1,000),
  but with a *displaced* copy circuit (previous-token score 0.77, yet no head puts more than 0.04 of its
  attention on the induction target): both the data and the architecture stand between this mix and an
  induction head.
  Induction is taught on the attention-only, rotary induction models of
  :mod:`tutorial_lib.zoo.induction_models`, whose exact recipe forms the textbook pair.
* **The vocabulary size** is one cause, measured on that recipe's own model (2 layers, attention only, 64
  rows of 48 tokens, 800 steps): with 3,172 outputs in the softmax no induction head formed, whether the
  repeated tokens were the 241 filler words or 127 or 241 plain ids (loss 4.1-5.0 nats, best attention to the
  induction target <= 0.045); 241 ids in a 256-token vocabulary formed one (0.66, 0.98 nats), and so did the
  3,172-token model trained with the softmax over the 241 words only (0.74, 1.56 nats on the full softmax).
  Hence ``induction_closed_vocab``. In the medium model (4 layers x 8 heads, rotary, the medium mix of
  :mod:`tutorial_lib.zoo.build`) it was not enough: 32 closed-softmax rows per step, 4,000 steps, copy gain
  1.66 nats and no induction head; 12 and 40 full-softmax rows and 64 rows for the first 1,000 steps formed
  none either (previous-token heads did, up to 0.6 of their attention on q - 1).
* **The number of heads** sets *when* induction heads form. Induction-only pilots (64 closed-softmax rows of 48
  filler words per step, 3 segments of 2-8; best head's attention to the induction target on 200 held-out rows,
  every 100 steps): the recipe's small model (2 layers, d_model 64, 4 heads of 16, lr 5e-3) formed them
  between steps 500 and 700 (0.07 -> 0.45, 4 heads >= 0.3); 2 layers, d_model 128, 8 heads of 16, lr 2.5e-3
  had none at step 800 (0.05) and all 8 layer-1 heads at step 900 (0.88). In 800-1,000 steps none formed for 8
  heads of 8 at d_model 64 or 128 (lr 5e-3), for the medium shape with or without MLPs, with 2 or 4 layers,
  at lr 2.5e-3, 3e-3 or 5e-3 (best 0.04-0.06). Hence ``induction_warmup_steps``: an induction-only phase
  long enough for the transition before the tasks join.
* **A shifted copy mechanism.** The medium shape with a 2,500-step warm-up (random copy distances) learned to
  copy between steps 1,800 and 2,100 (loss on the repeated words 7.0 -> 1.1 nats) without an induction head:
  no head put more than 0.06 of its attention on the token after the earlier occurrence. Instead layer 0 had
  fixed-offset heads (all their attention 5 and 6 tokens back) and all 8 layer-1 heads attended to the token
  *five after* the target (85% of queries), whose residual holds "5 back: B, 6 back: A"; the previous-token
  heads were in layers 2-3, too late to feed an induction head. The same happened with longer segments (2 of
  6-14; loss 2.2 nats at step 1,500, best attention 0.06). A shifted mechanism only works when the copy lies
  far enough from its source; ``induction_near`` puts a fraction of the copies within 0-2 tokens of their
  source, where only an induction head (previous-token head, then match) predicts them. With every copy near
  (``induction_near=1.0``; the medium recipe's warm-up) previous-token heads formed in layer 1 by step 500 and 7
  induction heads in layers 2-3 at step ~1,700 (attention 0.69-0.73 on held-out rows whose copies sit at random
  distances); with half the copies near none had formed by step 1,700 (stopped).
* **Near copies make short-range heads.** Trained on near copies in the mixed phase too, those heads copied
  only over short distances: on 512 planted-pair probes (48 filler words, the earlier ``A`` 7-46 tokens back)
  the 6,500-step model's top-1 on ``B`` was 1.00 at 7-12 tokens back, 0.34 at 12-20 and 0.00-0.01 beyond 20,
  so its selectivity swung with how many short distances a probe drew (a3.h5 55-142x over 12 probe draws of 128-512 sequences).
  ``induction_near_mixed=0.5`` (half the mixed phase's copies anywhere later, once the heads exist) made the
  same 7 heads copy at every distance: top-1 1.00 in every distance bin at step 5,000, the heads' attention on
  the target 0.84-0.97 in every bin, selectivity 300-1,000x.

* **General induction (issue 30).** The pilots and the candidate build for copying that generalises to tokens
  no induction row repeats are condensed, with their figures, in ``docs/zoo.md`` (the recipe's
  parts: :mod:`tutorial_lib.zoo.split_induction`).

The pools are generated once (a few seconds), then every step samples rows from them with the
trainer's seeded generator.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

import torch
from torch import Tensor

from ..tasks.addition import sample_addition_ids, sample_small_addition_ids
from ..tasks.boolean import sample_boolean_ids
from ..tasks.greater_than import sample_greater_than_01_ids, sample_greater_than_ids
from ..tasks.induction import induction_batch_fn
from ..tasks.ioi import sample_ioi_ids
from ..tasks.multiple_choice import sample_multiple_choice_ids
from ..tasks.tokenizers import TrainBatch, pieces_for, single_ids
from ..tasks.vocab import FILLER


@dataclass
class MixSpec:
    """How many rows of each task go into one training batch, and the generators' options."""

    rows: dict = field(default_factory=lambda: {
        "greater_than": 16, "ioi": 12, "addition": 32, "addition_small": 32, "boolean": 40, "multiple_choice": 28})
    pool_size: int = 40_000  # prompts pre-generated per task (the train split is sampled from it)
    greater_than_window: int = 10
    boolean_ops: tuple = (1, 5)  # operator counts of the training expressions
    boolean_eval_ops: tuple = (2, 4)  # ... and of the held-out ones the manifest's accuracy uses
    induction_seq_len: int = 34
    induction_len: tuple = (4, 12)
    induction_segments: int = 1
    induction_vocab: str = "all"  # "all": every ordinary token; "filler": the 241 filler words of tasks.vocab
    # weight in the loss of the induction rows' other positions (the first copy and the text around it): 0 trains
    # only the repeated tokens; > 0 makes the rows ordinary language modelling, so that the loss on the
    # first copy (unpredictable) is a trained baseline for the loss on the second (copyable)
    induction_filler_weight: float = 0.0
    # train the induction rows with the softmax over their own vocabulary only (the words they draw from): with
    # all 3,172 outputs in the softmax, no induction head formed in 800 steps of the induction models' recipe,
    # with it one did (see the module docstring)
    induction_closed_vocab: bool = False
    # the first ``induction_warmup_steps`` steps train on induction rows only (``induction_warmup_rows`` per step),
    # before the tasks join: with 8 heads per layer induction heads form late (see the module docstring)
    induction_warmup_steps: int = 0
    induction_warmup_rows: int = 64
    # the fraction of repeated segments copied within 0-2 tokens of their source (the warm-up, and the mixed phase
    # unless ``induction_near_mixed`` is set); see the docstring
    induction_near: float = 0.0
    # the same fraction in the mixed phase only (None: ``induction_near``). Copies that are always near teach
    # induction heads that work only over short distances (see the module docstring)
    induction_near_mixed: Optional[float] = None
    # the softmax of the induction rows in the mixed phase only (None: ``induction_closed_vocab``). Closed lets the heads
    # form; full (False) then makes a copy beat every output, the task words the closed softmax never held included
    induction_closed_vocab_mixed: Optional[bool] = None
    # induction_vocab="split" (issue 30; tutorial_lib.zoo.split_induction): the repeats use the trained part of the
    # ordinary tokens, never the seeded held-out part (this fraction of them), which fills this fraction of the rows'
    # plain positions as unrepeated text; the curriculum ((step, k), ...) widens the rows' vocabulary (k trained
    # tokens from ``step`` on; None: all). On in the shipped medium recipe.
    induction_held_out_seed: int = 0
    induction_held_out_fraction: float = 0.5
    induction_held_out_text: float = 0.0
    induction_vocab_curriculum: tuple = ()
    # echo rows (issue 30; tutorial_lib.zoo.split_induction.EchoRows): this many rows per step, in both phases, copy a
    # token of the row (the one before a marker, or the first) drawn from every ordinary token, never repeating one
    echo_rows: int = 0
    echo_len: tuple = (6, 30)
    # plain rows (issue 30; tutorial_lib.zoo.split_induction.PlainRows): this many rows per step, in the mixed phase
    # only, of ``plain_len`` distinct tokens drawn from every ordinary token, each next token a target (``plain_weight``)
    plain_rows: int = 0
    plain_len: int = 24
    plain_weight: float = 1.0
    plain_from: int = 0  # the first step with plain rows (never before the mixed phase)


def _samplers(spec: MixSpec) -> dict[str, Callable[[int, int], TrainBatch]]:
    lo, hi = spec.boolean_ops
    return {
        "greater_than": lambda n, s: sample_greater_than_ids(n, seed=s, split="train", window=spec.greater_than_window),
        "ioi": lambda n, s: sample_ioi_ids(n, seed=s, split="train"),
        "addition": lambda n, s: sample_addition_ids(n, seed=s, split="train"),
        "boolean": lambda n, s: sample_boolean_ids(n, seed=s, split="train", min_ops=lo, max_ops=hi),
        "multiple_choice": lambda n, s: sample_multiple_choice_ids(n, seed=s, split="train"),
        # last, so that adding them left the other pools' seeds unchanged
        "addition_small": lambda n, s: sample_small_addition_ids(n, seed=s),
        "greater_than_01": lambda n, s: sample_greater_than_01_ids(n, seed=s, window=spec.greater_than_window),
    }


def induction_ids(tokenizer, vocab: str = "all", held_out_seed: int = 0, held_out_fraction: float = 0.5):
    """The token ids induction rows draw from: ``None`` (every ordinary token), the filler words' ids, or (``"split"``)
    the trained part of the seeded split of :func:`tutorial_lib.zoo.split_induction.split_ids`."""
    if vocab == "all":
        return None
    if vocab == "split":
        from .split_induction import split_ids

        return split_ids(tokenizer, held_out_seed, held_out_fraction)[1].tolist()
    if vocab != "filler":
        raise ValueError(f"induction_vocab must be 'all', 'filler' or 'split', got {vocab!r}")

    return single_ids(pieces_for(tokenizer), [" " + w for w in FILLER], "filler word")


def _append_answers(batch: TrainBatch, pad: int) -> tuple[Tensor, Tensor]:
    """Rows ``prompt + answer`` (padded) and the loss mask selecting the prediction at ``end_pos``."""
    n, T = batch.tokens.shape
    tokens = torch.full((n, T + 1), pad, dtype=torch.long)
    tokens[:, :T] = batch.tokens
    rows = torch.arange(n)
    tokens[rows, batch.end_pos + 1] = batch.answers
    mask = torch.zeros_like(tokens)
    mask[rows, batch.end_pos] = 1
    return tokens, mask


class Group(tuple):
    """A group of the batch, ``(tokens, loss_mask[, vocab])`` like any other, that names its rows: ``task`` is the
    task's name, or False for the induction, echo and plain rows (no task's). The trainer's head dropout can be kept
    to some of them (:func:`dropout_rows`)."""

    def __new__(cls, parts, task=False):
        group = super().__new__(cls, parts)
        group.task = task
        return group


def dropout_rows(rows, tasks) -> Optional[Callable]:
    """The groups that head dropout reaches (``train``'s ``head_dropout_rows``): ``"all"`` (every group: None),
    ``"tasks"`` (the task rows: not the induction, echo and plain rows) or a list of the names in ``tasks``."""
    if rows == "all":
        return None
    if rows == "tasks":
        return lambda group: getattr(group, "task", False) is not False
    if isinstance(rows, str) or not isinstance(rows, (list, tuple)) or not set(rows) <= set(tasks) or not rows:
        raise ValueError(f"head dropout's rows are 'all', 'tasks' or a list of task names out of {sorted(tasks)}; "
                         f"got {rows!r}")
    return lambda group: getattr(group, "task", False) in rows


class MultiTaskCorpus:
    """Pools of training rows per task and a seeded ``batch_fn(step, generator)`` for the trainer."""

    def __init__(self, tokenizer, spec: MixSpec = MixSpec(), seed: int = 0):
        self.spec, self.pad = spec, tokenizer.pad_token_id
        self.pools: dict[str, tuple[Tensor, Tensor]] = {}
        for i, (name, sample) in enumerate(_samplers(spec).items()):
            if spec.rows.get(name, 0):
                self.pools[name] = _append_answers(sample(spec.pool_size, seed * 1000 + i), self.pad)
        # a row's length: up to and including its answer token (mask marks the position before it)
        self.lengths = {name: m.argmax(1) + 2 for name, (_, m) in self.pools.items()}
        lo, hi = spec.induction_len
        self.echo = None
        if spec.echo_rows:
            from .split_induction import EchoRows

            self.echo = EchoRows(tokenizer, spec.echo_rows, spec.echo_len)
        self.plain = None
        if spec.plain_rows:
            from .split_induction import PlainRows

            self.plain = PlainRows(tokenizer, spec.plain_rows, spec.plain_len, spec.plain_weight)
        if spec.induction_vocab == "split":  # repeats of trained tokens only; a curriculum; held-out text
            self._split_rows(tokenizer, spec)
            return
        allowed = induction_ids(tokenizer, spec.induction_vocab)
        special = set(tokenizer.all_special_ids)
        self.induction_vocab = torch.as_tensor(allowed if allowed is not None else
                                               [i for i in range(len(tokenizer)) if i not in special])
        self.induction = induction_batch_fn(tokenizer, batch_size=spec.rows.get("induction", 0) or 1,
                                            seq_len=spec.induction_seq_len, min_len=lo, max_len=hi,
                                            n_segments=spec.induction_segments,
                                            near=spec.induction_near if spec.induction_near_mixed is None
                                            else spec.induction_near_mixed,
                                            allowed=allowed)
        self.induction_warmup = induction_batch_fn(tokenizer, batch_size=spec.induction_warmup_rows,
                                                   seq_len=spec.induction_seq_len, min_len=lo, max_len=hi,
                                                   n_segments=spec.induction_segments, near=spec.induction_near, allowed=allowed) \
            if spec.induction_warmup_steps else None

    def _split_rows(self, tokenizer, spec: MixSpec) -> None:
        from .split_induction import SplitInductionRows

        self.induction_vocab = None
        near = spec.induction_near if spec.induction_near_mixed is None else spec.induction_near_mixed
        self.induction = SplitInductionRows(tokenizer, spec, spec.rows.get("induction", 0) or 1, near)
        self.induction_warmup = SplitInductionRows(tokenizer, spec, spec.induction_warmup_rows, spec.induction_near) \
            if spec.induction_warmup_steps else None

    def batch_fn(self, step: int, g: torch.Generator) -> list[tuple[Tensor, Tensor]]:
        """Groups ``(tokens, loss_mask)``, one per task (two for a task whose rows differ in length by more
        than 8 tokens: the shorter and the longer half), each cut to its longest row.

        The trainer's loss over the groups equals the loss over one padded batch of all rows, at about
        half the tokens: multiple-choice prompts are 34 tokens, addition prompts 8.
        """
        if step < self.spec.induction_warmup_steps:  # the induction phase: induction rows only
            return [self._induction_group(*self.induction_warmup(step, g))] + self._echo(g)
        groups = []
        for name, (tokens, mask) in self.pools.items():
            k = self.spec.rows[name]
            idx = torch.randint(0, tokens.shape[0], (k,), generator=g)
            lengths = self.lengths[name][idx]
            if int(lengths.max() - lengths.min()) > 8:  # boolean: split at the median length, pad less
                order = lengths.argsort()
                parts = [idx[order[: k // 2]], idx[order[k // 2:]]]
            else:
                parts = [idx]
            for part in parts:
                T = int(self.lengths[name][part].max())
                groups.append(Group((tokens[part, :T], mask[part, :T]), name))
        if self.spec.rows.get("induction", 0):
            groups.append(self._induction_group(*self.induction(step, g), mixed=True))
        plain = self.plain is not None and step >= self.spec.plain_from
        return groups + self._echo(g) + ([Group(self.plain(g))] if plain else [])

    def _echo(self, g: torch.Generator) -> list:
        return [Group(self.echo(g))] if self.echo is not None else []

    def _induction_group(self, tokens: Tensor, mask: Tensor, vocab: Optional[Tensor] = None, mixed: bool = False
                         ) -> tuple:
        w = self.spec.induction_filler_weight
        if w:
            mask = torch.where(mask.bool(), 1.0, float(w))
        if vocab is None and self.spec.induction_vocab != "split":
            vocab = self.induction_vocab
        closed = self.spec.induction_closed_vocab
        if mixed and self.spec.induction_closed_vocab_mixed is not None:
            closed = self.spec.induction_closed_vocab_mixed
        return Group((tokens, mask, vocab) if closed and vocab is not None else (tokens, mask))

    def padded_batch_fn(self, step: int, g: torch.Generator) -> tuple[Tensor, Tensor]:
        """The same rows as :meth:`batch_fn`, padded into one ``[rows, pos]`` batch (slower; for checks)."""
        parts = self.batch_fn(step, g)
        if any(len(p) == 3 for p in parts):
            raise ValueError("a closed-vocabulary group cannot be padded into one batch with the others")
        T = max(t.shape[1] for t, _ in parts)
        toks = torch.cat([torch.nn.functional.pad(t, (0, T - t.shape[1]), value=self.pad) for t, _ in parts])
        weighted = any(m.is_floating_point() for _, m in parts)
        masks = torch.cat([torch.nn.functional.pad(m.float() if weighted else m, (0, T - m.shape[1]), value=0)
                           for _, m in parts])
        return toks, masks
