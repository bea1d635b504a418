"""Test it like a learner (issue 17, item 7): every learner notebook, run with the usual wrong answers put
into its exercises, must have its checks reject each one with the message meant for it.

For each learner notebook ``notebooks/0?_*.ipynb``, one kernel runs the cells in order on the offline default
model (tests/learner_run.py). At each exercise it runs the cell as shipped (the check must say the exercise
is not written yet), then once per wrong answer in :data:`WRONG` with the exercise's ``def`` replaced (the
check must raise ``ExerciseError`` with a message matching the registered pattern), then the solution's cell
(it must pass, so that later cells have what they need). Every exercise of every learner notebook must have
at least one registered wrong answer: :func:`test_every_exercise_has_wrong_answers` fails otherwise.

The wrong answers are the slips the checks name (tests/test_checks_nb0*.py feed the same slips to the checks on
tiny models); here they run in the notebooks, on the model and the arguments a learner's check gets. The
kernel runs offline at ``TUTORIAL_SIZE=quick`` (see :func:`kernel_env`): about 3 minutes for the five notebooks
on a 2-core CPU. ``KNOWN_GAPS`` lists wrong answers that a check accepts in its notebook, or rejects without
an ``ExerciseError`` that says why; they run too, as strict xfails, so that a fixed check shows up (its entry then
moves to ``WRONG``).
"""
from __future__ import annotations

import os
import re
from functools import lru_cache
from pathlib import Path

import nbformat
import pytest

import learner_wrong_nb00
import learner_wrong_nb01
import learner_wrong_nb02
import learner_wrong_nb03
import learner_wrong_nb04
import learner_wrong_nb05
from learner_run import SOLUTION, UNFINISHED, exercise_functions, is_exercise_cell, run_learner_notebook

ROOT = Path(__file__).resolve().parents[1]
LEARNER = sorted((ROOT / "notebooks").glob("0?_*.ipynb"))
SOLUTIONS = ROOT / "notebooks" / "solutions"
DROP = ("TUTORIAL_MODEL", "HF_ENDPOINT", "TUTORIAL_SIZE", "TUTORIAL_CLAIMS")
# notebooks whose cells after the last exercise are not run (they take long and hold no check)
STOP_AFTER_LAST_EXERCISE: set[str] = set()


# {notebook: {exercise function: {wrong answer: (source of the whole wrong def, regex the check's message matches)}}}
# one module per notebook, tests/learner_wrong_nbNN.py
WRONG: dict[str, dict[str, dict[str, tuple[str, str]]]] = {
    "00_start_here": learner_wrong_nb00.WRONG,
    "01_greater_than": learner_wrong_nb01.WRONG,
    "02_consistency_specificity": learner_wrong_nb02.WRONG,
    "03_spectral_recipe": learner_wrong_nb03.WRONG,
    "04_comparing_methods": learner_wrong_nb04.WRONG,
    "05_answer_key": learner_wrong_nb05.WRONG,
}

# Wrong answers that a check accepts in its notebook, or rejects without saying why (a crash inside the check, a
# misleading message): {notebook: {function: {wrong answer: (source, the message it should get, why it does not)}}}.
# They run like the others and are expected to fail (strict): a fixed check makes one pass, and it then moves to WRONG.
KNOWN_GAPS: dict[str, dict[str, dict[str, tuple[str, str, str]]]] = {}


# ---------------------------------------------------------------- what the notebooks hold (read, not run)
def _exercises(path: Path) -> list[str]:
    nb = nbformat.read(path, as_version=4)
    return [name for c in nb.cells if is_exercise_cell(c) for name in exercise_functions(c.source)]


EXERCISES = {p.stem: _exercises(p) for p in LEARNER}


def _cases():
    """One case per check a learner meets, in notebook order: (notebook, function, what is run, the message's regex)."""
    cases = []
    for stem, names in EXERCISES.items():
        for name in names:
            cases.append(pytest.param(stem, name, UNFINISHED, rf"^{name} is not written yet: Exercise: ",
                                      id=f"{stem}-{name}-unfinished"))
            for label, (_, pattern) in WRONG.get(stem, {}).get(name, {}).items():
                cases.append(pytest.param(stem, name, label, pattern, id=f"{stem}-{name}-wrong: {label}"))
            for label, (_, pattern, why) in KNOWN_GAPS.get(stem, {}).get(name, {}).items():
                cases.append(pytest.param(stem, name, label, pattern, id=f"{stem}-{name}-gap: {label}",
                                          marks=pytest.mark.xfail(reason=why, strict=True)))
            cases.append(pytest.param(stem, name, SOLUTION, None, id=f"{stem}-{name}-solution"))
    return cases


def kernel_env() -> dict:
    """The offline default (``MODEL_NAME = "auto"`` gives the zoo model at once, without probing the hub), the
    sweeps at ``TUTORIAL_SIZE=quick`` (the checks are the same; the notebooks' own sweeps are smaller), claims
    reported rather than raised (a claim not met at the quick sizes must not hide the exercises after it),
    one thread per kernel (``TEST_THREADS`` to change it)."""
    env = {k: v for k, v in os.environ.items() if k not in DROP}
    threads = os.environ.get("TEST_THREADS", "1")
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TUTORIAL_SIZE="quick", TUTORIAL_CLAIMS="report",
               MPLBACKEND="Agg", PYTHONWARNINGS="ignore::DeprecationWarning", OMP_NUM_THREADS=threads,
               MKL_NUM_THREADS=threads)
    return env


@lru_cache(maxsize=None)
def learner_run(stem: str):
    wrong: dict = {}
    for table in (WRONG, KNOWN_GAPS):
        for name, slips in table.get(stem, {}).items():
            wrong.setdefault(name, {}).update({label: src for label, (src, *_) in slips.items()})
    run = run_learner_notebook(ROOT / "notebooks" / f"{stem}.ipynb", SOLUTIONS / f"{stem}.ipynb", wrong, kernel_env(),
                               stop_after_last_exercise=stem in STOP_AFTER_LAST_EXERCISE)
    slow = sorted(((o.seconds, k) for k, o in run.outcomes.items()), reverse=True)[:3]
    print(f"\n{stem}: {run.seconds:.0f} s, {len(run.outcomes)} exercise runs; slowest: "
          + ", ".join(f"{k[0]}/{k[1]} {s:.1f} s" for s, k in slow))
    return run


# ---------------------------------------------------------------- the tests
def test_every_exercise_has_wrong_answers():
    """A new exercise cannot be added without its wrong answers; a registered one must still be in its notebook."""
    assert LEARNER, "no learner notebooks found"
    problems = []
    for stem, names in EXERCISES.items():
        registered = WRONG.get(stem, {})
        for name in names:
            if not registered.get(name):
                problems.append(f"{stem}: exercise `{name}` has no wrong answer in WRONG")
        if len(names) != len(set(names)):
            problems.append(f"{stem}: an exercise function is defined in two exercise cells: {names}")
        for table, what in ((WRONG, "WRONG"), (KNOWN_GAPS, "KNOWN_GAPS")):
            for name in set(table.get(stem, {})) - set(names):
                problems.append(f"{stem}: {what} registers `{name}`, which is no exercise of the learner notebook")
        for name, gaps in KNOWN_GAPS.get(stem, {}).items():
            for label in set(gaps) & set(registered.get(name, {})):
                problems.append(f"{stem}: `{name}`'s wrong answer {label!r} is both in WRONG and in KNOWN_GAPS")
    for stem in (set(WRONG) | set(KNOWN_GAPS)) - set(EXERCISES):
        problems.append(f"notebook {stem} is registered, but is not among {sorted(EXERCISES)}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("stem,name", sorted({(s, n) for table in (WRONG, KNOWN_GAPS) for s, t in table.items() for n in t}))
def test_each_wrong_answer_defines_the_exercise_function(stem, name):
    """Each wrong answer is one ``def`` with the exercise's name and the learner's arguments."""
    import ast

    path = ROOT / "notebooks" / f"{stem}.ipynb"
    learner_args = None
    if path.exists():
        for cell in nbformat.read(path, as_version=4).cells:
            if is_exercise_cell(cell) and name in exercise_functions(cell.source):
                node = next(n for n in ast.parse(cell.source).body if getattr(n, "name", None) == name)
                learner_args = [a.arg for a in node.args.args]
    slips = {**WRONG.get(stem, {}).get(name, {}), **KNOWN_GAPS.get(stem, {}).get(name, {})}
    for label, (source, pattern, *_) in slips.items():
        body = ast.parse(source).body
        assert len(body) == 1 and isinstance(body[0], ast.FunctionDef) and body[0].name == name, (stem, name, label)
        if learner_args is not None:
            assert [a.arg for a in body[0].args.args] == learner_args, (stem, name, label)
        re.compile(pattern)


@pytest.mark.parametrize("stem,name,what,pattern", _cases())
def test_learner_meets_the_check(stem, name, what, pattern):
    """The check says "not written yet" to the cell as shipped, rejects each wrong answer with its message, and
    passes the solution."""
    run = learner_run(stem)
    outcome = run.outcomes.get((name, what))
    if outcome is None:
        pytest.fail(f"{stem} stopped before exercise `{name}` ran: {run.error}")
    if what == SOLUTION:
        assert outcome.ename is None, f"the solution of `{name}` raised {outcome.ename}: {outcome.evalue}"
        assert "passed" in outcome.text, f"the solution of `{name}` ran, but no check said it passed:\n{outcome.text}"
        return
    assert outcome.ename is not None, (f"{stem}: the check of `{name}` accepted the wrong answer {what!r}; "
                                       f"it printed:\n{outcome.text}")
    assert outcome.ename == "ExerciseError", (f"{stem}: `{name}` with the wrong answer {what!r} raised "
                                              f"{outcome.ename}, not ExerciseError: {outcome.evalue}")
    assert re.search(pattern, outcome.evalue, re.DOTALL), (f"{stem}: the check of `{name}` rejected the wrong answer "
                                                      f"{what!r} with\n  {outcome.evalue}\nwhich does not match\n  {pattern}")


@pytest.mark.parametrize("stem", [p.stem for p in LEARNER])
def test_learner_notebook_runs_to_its_end(stem):
    """With every exercise solved in turn, the learner's notebook (its prediction cells left as shipped) runs on."""
    run = learner_run(stem)
    assert run.error is None, f"{stem}: {run.error}"
