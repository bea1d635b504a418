"""Run a learner notebook the way a learner would: each exercise first as shipped, then with wrong answers,
then solved (used by ``tests/test_learner_notebooks.py``).

One kernel per notebook runs the learner's cells in order. At each exercise cell (a code cell holding
``raise NotImplementedError("Exercise: ...")``) it runs, in the same kernel:

1. the cell as the learner has it (its check should say the exercise is not written yet);
2. for each registered wrong answer, a copy of the cell with the exercise's ``def`` replaced by the wrong one
   (the rest of the cell, the check call included, is kept);
3. the solution's version of the cell (the cell with the same id in ``notebooks/solutions/``), so that later
   cells find what they need.

Every run is recorded as an :class:`Outcome` (the exception's name and message, or none); cells tagged
``nbval-skip`` are skipped, as nbval does. A non-exercise cell that fails stops the run (``LearnerRun.error``).
"""
from __future__ import annotations

import ast
import copy
import time
from dataclasses import dataclass, field
from pathlib import Path

from notebook_run import _text_of  # tests/ is on the path, as for conftest

EXERCISE_MARK = 'raise NotImplementedError("Exercise:'
UNFINISHED, SOLUTION = "unfinished", "solution"


@dataclass
class Outcome:
    ename: str | None  # None: the cell ran without an error
    evalue: str = ""
    text: str = ""  # what the cell printed
    seconds: float = 0.0


@dataclass
class LearnerRun:
    path: Path
    outcomes: dict = field(default_factory=dict)  # (function, UNFINISHED | SOLUTION | wrong answer's name) -> Outcome
    exercises: list = field(default_factory=list)  # exercise functions, in the order they were met
    error: str | None = None  # a non-exercise cell failed, or the kernel died
    seconds: float = 0.0
    stopped_after: int | None = None  # the index of the last cell run, when the run stopped early on purpose
    cell_seconds: dict = field(default_factory=dict)  # cell index -> seconds, every run of the cell included


def _functions(source: str) -> dict:
    """Top-level function definitions of ``source``: name -> ast node."""
    return {n.name: n for n in ast.parse(source).body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


def exercise_functions(source: str) -> list[str]:
    """The top-level functions of a code cell whose body still raises the "Exercise: ..." stub."""
    lines = source.splitlines()
    return [name for name, node in _functions(source).items()
            if any(EXERCISE_MARK in line for line in lines[node.lineno - 1:node.end_lineno])]


def is_exercise_cell(cell) -> bool:
    return cell.cell_type == "code" and EXERCISE_MARK in cell.source


def replace_def(source: str, name: str, new_def: str) -> str:
    """``source`` with the top-level ``def name(...)`` (decorators included) replaced by ``new_def``."""
    node = _functions(source).get(name)
    if node is None:
        raise ValueError(f"no top-level `def {name}(` in the cell:\n{source}")
    start = min([node.lineno] + [d.lineno for d in node.decorator_list])
    lines = source.splitlines()
    return "\n".join(lines[:start - 1] + new_def.strip("\n").splitlines() + lines[node.end_lineno:])


def def_source(source: str, name: str) -> str:
    """The text of the top-level ``def name(...)`` in ``source``."""
    node = _functions(source)[name]
    start = min([node.lineno] + [d.lineno for d in node.decorator_list])
    return "\n".join(source.splitlines()[start - 1:node.end_lineno])


def run_learner_notebook(learner: Path, solution: Path, wrong: dict, env: dict, timeout: int = 900,
                         stop_after_last_exercise: bool = False) -> LearnerRun:
    """Run ``learner`` cell by cell in one kernel started with ``env`` (see the module docstring).

    ``wrong``: ``{function name: {wrong answer's name: source of the whole wrong def}}``. Never raises for a
    failing cell: see the outcomes and ``.error``.
    """
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError
    # only the README's own notebook run records the README's figures (TUTORIAL_RECORD), never these test runs
    env = {k: v for k, v in env.items() if k != "TUTORIAL_RECORD"}

    learner, solution = Path(learner), Path(solution)
    nb = nbformat.read(learner, as_version=4)
    solved = {c.get("id"): c for c in nbformat.read(solution, as_version=4).cells}
    run = LearnerRun(learner)
    last_exercise = max((i for i, c in enumerate(nb.cells) if is_exercise_cell(c)), default=-1)
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": str(learner.parent)}})

    def execute(index: int, original, source: str) -> Outcome:
        # the variant takes the cell's place in the notebook while it runs (display updates find it there)
        variant = copy.deepcopy(original)
        variant.source, variant.outputs = source, []
        nb.cells[index] = variant
        t0 = time.time()
        try:
            client.execute_cell(variant, index)
            ename, evalue = None, ""
        except CellExecutionError as err:
            ename, evalue = err.ename, err.evalue
        finally:
            nb.cells[index] = original
            took = time.time() - t0
            run.cell_seconds[index] = run.cell_seconds.get(index, 0.0) + took
        return Outcome(ename, evalue, _text_of(variant.outputs), took)

    t0 = time.time()
    client.reset_execution_trackers()
    try:
        with client.setup_kernel(env=env):
            for index, cell in enumerate(list(nb.cells)):
                if cell.cell_type != "code" or "nbval-skip" in cell.metadata.get("tags", []):
                    continue
                if not is_exercise_cell(cell):
                    out = execute(index, cell, cell.source)
                    if out.ename is not None:
                        first = cell.source.strip().splitlines()[0] if cell.source.strip() else ""
                        run.error = (f"cell {index} ({cell.get('id')}: {first[:60]!r}) raised {out.ename}: "
                                     f"{out.evalue[-2000:]}")
                        break
                    continue
                sol = solved.get(cell.get("id"))
                if sol is None:
                    run.error = f"cell {index} ({cell.get('id')}) has no cell with the same id in {solution.name}"
                    break
                names = exercise_functions(cell.source)
                run.exercises += names
                for name in names:
                    run.outcomes[(name, UNFINISHED)] = execute(index, cell, cell.source)
                    # the other exercises of the cell, if any, solved: only `name` is wrong
                    base = cell.source
                    for other in names:
                        if other != name:
                            base = replace_def(base, other, def_source(sol.source, other))
                    for label, source in wrong.get(name, {}).items():
                        run.outcomes[(name, label)] = execute(index, cell, replace_def(base, name, source))
                out = execute(index, cell, sol.source)
                for name in names:
                    run.outcomes[(name, SOLUTION)] = out
                if out.ename is not None:
                    run.error = f"the solution of cell {index} ({', '.join(names)}) raised {out.ename}: {out.evalue[-2000:]}"
                    break
                if stop_after_last_exercise and index == last_exercise:
                    run.stopped_after = index
                    break
    except Exception as err:  # kernel death, a cell past its timeout
        run.error = f"{type(err).__name__}: {str(err)[-2000:]}"
    run.seconds = time.time() - t0
    return run
