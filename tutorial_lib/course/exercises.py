"""One source per notebook, two notebooks out of it: the learner's exercises and the solutions.

Each notebook is written once, as a Python file in "percent" format under ``notebooks/src/``::

    # %% [markdown]
    # ## 1. Probability difference  (~10 min)
    # %%
    def prob_diff(probs, yy):
        # BEGIN SOLUTION: sum the probabilities of years above YY, subtract those at or below
        above = ...
        return above - below
        # END SOLUTION

    check_prob_diff(prob_diff)

``python -m tutorial_lib.course.exercises build`` writes

* ``notebooks/NN_name.ipynb`` -- the learner's version: every ``BEGIN SOLUTION`` ... ``END SOLUTION``
  block becomes ``raise NotImplementedError("Exercise: <hint>")`` at the same indentation, so the
  inline check right below it tells the learner plainly that it is still to do;
* ``notebooks/solutions/NN_name.ipynb`` -- the solution version (markers removed), which CI runs
  through nbval.

``python -m tutorial_lib.course.exercises check`` exits non-zero if either notebook differs from what the
source would produce, and ``tests/test_exercises.py`` runs that check: the two versions cannot drift.
A line ``NAME = <value>  # LEARNER: <other value>  # comment`` gets ``<value>`` in the solution and
``<other value>`` in the learner's version (a prediction the learner is to write: ``None`` there).
Cell tags: ``# %% tags=nbval-skip,other`` sets the cell's tags. The cell tagged ``course-install`` (each
notebook's first code cell) is opened with :func:`tutorial_lib.course.colab.install_lines`, and every notebook
starts with an "Open in Colab" link (:func:`tutorial_lib.course.colab.badge_markdown`): both are written from the
one repository address in :mod:`tutorial_lib.course.colab`.

``python -m tutorial_lib.course.exercises nbgrader OUT/`` writes the same sources as an nbgrader course folder
(:mod:`tutorial_lib.course.nbgrader_export`); a line ``# POINTS: 4`` in a source cell sets that exercise's or
prediction's points there, and is left out of both notebooks.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from . import colab
from ..core.paths import REPO
from .one_source import (INSTALL_TAG, NOTEBOOKS, SOLUTIONS, SOURCES, SourceError,  # noqa: F401  (re-exported)
                         parse_cells, render_code)

SOLUTION_NOTE = ("*Worked version: the exercises are filled in, and each `PREDICT_...` variable holds a guess (the "
                 "paper's story where there is one), so the predictions below are checked against it. The learner's copy, "
                 "one folder up, leaves the exercises to you and the predictions `None`.*")


def build_notebook(cells: list[dict], solution: bool, origin: str = "<source>", notebook_path: str | None = None) -> dict:
    """An nbformat-4 notebook (as a dict, no outputs) from parsed cells; ``notebook_path`` (its path in the
    repository) adds the "Open in Colab" link as the first cell."""
    nb_cells = []
    if notebook_path is not None:
        first = [colab.badge_markdown(notebook_path)]
        if solution:
            first += ["", SOLUTION_NOTE]
        cells = [{"type": "markdown", "lines": first, "tags": []}] + list(cells)
    for i, cell in enumerate(cells):
        lines = cell["lines"] if cell["type"] == "markdown" else render_code(cell["lines"], solution, origin)
        if INSTALL_TAG in cell["tags"]:
            lines = colab.install_lines() + lines
        source = "\n".join(lines)
        meta = {"tags": cell["tags"]} if cell["tags"] else {}
        base = {"cell_type": cell["type"], "id": f"c{i:03d}", "metadata": meta,
                "source": [l + "\n" for l in source.split("\n")[:-1]] + [source.split("\n")[-1]]}
        if cell["type"] == "code":
            base.update(execution_count=None, outputs=[])
        nb_cells.append(base)
    return {
        "cells": nb_cells,
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def targets(source: Path) -> dict[str, Path]:
    return {"exercise": NOTEBOOKS / f"{source.stem}.ipynb", "solution": SOLUTIONS / f"{source.stem}.ipynb"}


def render(source: Path) -> dict[str, str]:
    """Both notebooks for ``source`` as JSON text, keyed 'exercise' and 'solution'."""
    cells = parse_cells(source.read_text(), origin=str(source))
    if sum(INSTALL_TAG in c["tags"] for c in cells) != 1:
        raise SourceError(f"{source}: exactly one cell (the first code cell) must be tagged {INSTALL_TAG!r}")
    paths = targets(source)
    return {kind: json.dumps(build_notebook(cells, kind == "solution", str(source),
                                            notebook_path=paths[kind].relative_to(REPO).as_posix()),
                             indent=1, ensure_ascii=False) + "\n"
            for kind in ("exercise", "solution")}


def build(sources_dir: Path = SOURCES) -> list[Path]:
    """Regenerate every notebook from ``notebooks/src/*.py``; returns the paths written."""
    written = []
    for src in sorted(Path(sources_dir).glob("*.py")):
        texts = render(src)
        for kind, path in targets(src).items():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(texts[kind])
            written.append(path)
    return written


def drift(sources_dir: Path = SOURCES) -> list[str]:
    """Notebooks that differ from what their source would produce (empty list: in sync)."""
    problems = []
    for src in sorted(Path(sources_dir).glob("*.py")):
        texts = render(src)
        for kind, path in targets(src).items():
            if not path.exists():
                problems.append(f"{path} is missing")
            elif path.read_text() != texts[kind]:
                problems.append(f"{path} differs from {src}")
    return problems


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    cmd = argv[0] if argv else "build"
    if cmd == "build":
        for p in build():
            print(f"wrote {p.relative_to(REPO)}")
        return 0
    if cmd == "check":
        problems = drift()
        for p in problems:
            print(p)
        if problems:
            print("run `python -m tutorial_lib.course.exercises build` to regenerate the notebooks")
        return 1 if problems else 0
    if cmd == "nbgrader" and len(argv) == 2:
        from .nbgrader_export import export, without_hidden_cases

        for p in export(Path(argv[1])):
            print(f"wrote {p}")
        for check, why in without_hidden_cases().items():
            print(f"note: {check} has no held-back case ({why})")
        return 0
    print("usage: python -m tutorial_lib.course.exercises [build|check|nbgrader OUT/]", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
