"""Task generators: each returns a :class:`~tutorial_lib.tasks.base.TaskData`.

Every task has the same two entry points:

* ``make_<task>(tokenizer, n, seed=0, split="test", **options)`` -> a TaskData with clean and
  corrupted tokens (BOS first), answers, positions and the task's metric;
* ``sample_<task>_ids(n, seed=0, split="train", tokenizer="zoo", **options)`` -> a
  :class:`~tutorial_lib.tasks.tokenizers.TrainBatch` ``(tokens, end_pos, answers)``, the cheap path the
  zoo trainer uses.

``tokenizer`` is ``"zoo"``, ``"gpt2"`` or a tokenizer object (GPT-2's or the zoo's). The same seed
gives the same data; ``split="train"`` never produces a ``"test"`` example (see each module).

The words the tasks write live here too (:mod:`~tutorial_lib.tasks.vocab`), with the zoo's word-level
tokenizer built from them (:mod:`~tutorial_lib.tasks.word_tokenizer`) and the shared tokenizer helpers
(:mod:`~tutorial_lib.tasks.tokenizers`). The tasks know no model and no zoo: the zoo imports its words,
tokenizer and training rows from here.

>>> from tutorial_lib.tasks import make_task
>>> make_task("ioi", "zoo", n=8, seed=0)
IOIData('IOI', n=8, seq_len=15)
"""
from .addition import make_addition, sample_addition_ids
from .base import TaskData
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
#: task name -> ``sample_<task>_ids``
SAMPLERS = {
    "greater_than": sample_greater_than_ids,
    "ioi": sample_ioi_ids,
    "addition": sample_addition_ids,
    "boolean": sample_boolean_ids,
    "multiple_choice": sample_multiple_choice_ids,
}


def make_task(name: str, tokenizer="zoo", n: int = 100, seed: int = 0, split: str = "test", **options) -> TaskData:
    """``MAKERS[name](tokenizer, n, seed, split, **options)`` with a clear error for unknown names."""
    if name not in MAKERS:
        raise ValueError(f"unknown task {name!r}; available: {sorted(MAKERS)}")
    return MAKERS[name](tokenizer, n, seed=seed, split=split, **options)


__all__ = [
    "TaskData", "TrainBatch", "MAKERS", "SAMPLERS", "make_task", "get_tokenizer", "gpt2_tokenizer",
    "zoo_tokenizer", "rebuild_zoo_tokenizer", "valid_years",
    *[f.__name__ for f in MAKERS.values()], *[f.__name__ for f in SAMPLERS.values()],
]
