"""Task generators: each returns a :class:`~tutorial_lib.tasks.base.TaskData`.

Every task has the same two entry points:

* ``make_<task>(tokenizer, n, seed=0, split="test", **options)`` -> a TaskData with clean and
  corrupted tokens (BOS first), answers, positions and the task's metric;
* ``sample_<task>_ids(n, seed=0, split="train", tokenizer="zoo", **options)`` -> a
  :class:`~tutorial_lib.tasks.tokenizers.TrainBatch` ``(tokens, end_pos, answers)``, the cheap path the
  zoo trainer uses.

``tokenizer`` is ``"zoo"``, ``"gpt2"`` or a tokenizer object: GPT-2's, the zoo's, or one of the papers' families
(Llama 3, Gemma 2, Qwen3: BOS by each family's rule, numbers split as each splits them; a task a tokenizer cannot
carry raises :class:`~tutorial_lib.tasks.base.TaskNotBuildable` saying why, e.g. greater-than without GPT-2's year
tokens). The same seed gives the same data; ``split="train"`` never produces a ``"test"`` example (see each module).

ARC Easy / Challenge (:mod:`~tutorial_lib.tasks.arc`, :data:`DATASET_MAKERS`) come from the Hugging Face hub
instead of a generator; :func:`make_task` builds them too.

The words the tasks write live here too (:mod:`~tutorial_lib.tasks.vocab`), with the zoo's word-level
tokenizer built from them (:mod:`~tutorial_lib.tasks.word_tokenizer`) and the shared tokenizer helpers
(:mod:`~tutorial_lib.tasks.tokenizers`). The tasks know no model and no zoo: the zoo imports its words,
tokenizer and training rows from here.

>>> from tutorial_lib.tasks import make_task
>>> make_task("ioi", "zoo", n=8, seed=0)
IOIData('IOI', n=8, seq_len=15)
"""
from .addition import make_addition, sample_addition_ids
from .arc import make_arc, make_arc_challenge, make_arc_easy
from .base import TaskData, TaskNotBuildable
from .boolean import make_boolean, sample_boolean_ids
from .greater_than import make_greater_than, sample_greater_than_ids, valid_years
from .ioi import make_ioi, sample_ioi_ids
from .multiple_choice import make_multiple_choice, sample_multiple_choice_ids
from .tokenizers import TrainBatch, get_tokenizer, gpt2_tokenizer, rebuild_zoo_tokenizer, zoo_tokenizer

#: task name -> ``make_<task>``
MAKERS = {
    "greater_than": make_greater_than,
    "ioi": make_ioi,
    "addition": make_addition,
    "boolean": make_boolean,
    "multiple_choice": make_multiple_choice,
}
#: task name -> maker, for the tasks read from a dataset on the hub (no training sampler)
DATASET_MAKERS = {"arc_easy": make_arc_easy, "arc_challenge": make_arc_challenge}
#: task name -> ``sample_<task>_ids``
SAMPLERS = {
    "greater_than": sample_greater_than_ids,
    "ioi": sample_ioi_ids,
    "addition": sample_addition_ids,
    "boolean": sample_boolean_ids,
    "multiple_choice": sample_multiple_choice_ids,
}


def make_task(name: str, tokenizer="zoo", n: int = 100, seed: int = 0, split: str = "test", **options) -> TaskData:
    """``MAKERS[name](tokenizer, n, seed, split, **options)`` (or ARC's) with a clear error for unknown names."""
    maker = MAKERS.get(name) or DATASET_MAKERS.get(name)
    if maker is None:
        raise ValueError(f"unknown task {name!r}; available: {sorted(MAKERS) + sorted(DATASET_MAKERS)}")
    return maker(tokenizer, n, seed=seed, split=split, **options)


__all__ = [
    "TaskData", "TaskNotBuildable", "TrainBatch", "MAKERS", "DATASET_MAKERS", "SAMPLERS", "make_arc", "make_task", "get_tokenizer", "gpt2_tokenizer",
    "zoo_tokenizer", "rebuild_zoo_tokenizer", "valid_years",
    *[f.__name__ for f in MAKERS.values()], *[f.__name__ for f in DATASET_MAKERS.values()],
    *[f.__name__ for f in SAMPLERS.values()],
]
