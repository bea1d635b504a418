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
import re
import sys
from pathlib import Path

from . import colab
from ..core.paths import REPO

NOTEBOOKS = REPO / "notebooks"
SOURCES = NOTEBOOKS / "src"
SOLUTIONS = NOTEBOOKS / "solutions"

_CELL = re.compile(r"^# %%(?P<md> \[markdown\])?(?: tags=(?P<tags>[\w,\-]+))?\s*$")
_BEGIN = re.compile(r"^(?P<indent>\s*)# BEGIN SOLUTION(?::\s*(?P<hint>.*))?$")
_END = re.compile(r"^\s*# END SOLUTION\s*$")
# ``name = <solution value>  # LEARNER: <learner value>  # comment``: a prediction or a setting whose value differs
_LEARNER = re.compile(r"^(?P<lhs>\s*[A-Za-z_]\w*\s*=\s*)(?P<sol>.+?)\s+# LEARNER: (?P<val>.+?)(?P<rest>\s+#.*)?$")
# ``# POINTS: 4``: the cell's points in the nbgrader export (course/nbgrader_export.py); left out of both notebooks
_POINTS = re.compile(r"^\s*# POINTS:\s*\d+(?:\.\d+)?\s*$")


class SourceError(ValueError):
    """The notebook source is malformed (unbalanced solution markers, text before the first cell)."""


def parse_cells(text: str, origin: str = "<source>") -> list[dict]:
    """Split percent-format ``text`` into ``[{"type": "code"|"markdown", "lines": [...], "tags": [...]}]``."""
    cells: list[dict] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        m = _CELL.match(line)
        if m:
            cells.append({"type": "markdown" if m.group("md") else "code", "lines": [],
                          "tags": m.group("tags").split(",") if m.group("tags") else []})
            continue
        if not cells:
            if line.strip():
                raise SourceError(f"{origin}:{lineno}: text before the first '# %%' cell marker")
            continue
        cells[-1]["lines"].append(line)
    for cell in cells:
        while cell["lines"] and not cell["lines"][-1].strip():
            cell["lines"].pop()
        while cell["lines"] and not cell["lines"][0].strip():
            cell["lines"].pop(0)
        if cell["type"] == "markdown":
            cell["lines"] = [l[2:] if l.startswith("# ") else ("" if l.strip() == "#" else l) for l in cell["lines"]]
    return [c for c in cells if c["lines"]]


def render_code(lines: list[str], solution: bool, origin: str = "<source>") -> list[str]:
    """Code cell lines for the solution (markers dropped) or the exercise (blocks replaced by a stub)."""
    out: list[str] = []
    inside = None
    for line in lines:
        b, e = _BEGIN.match(line), _END.match(line)
        if b:
            if inside is not None:
                raise SourceError(f"{origin}: nested '# BEGIN SOLUTION'")
            inside = b
            if not solution:
                hint = (b.group("hint") or "fill in this part").replace('"', "'")
                out.append(f'{b.group("indent")}# TODO: {hint}')
                out.append(f'{b.group("indent")}raise NotImplementedError("Exercise: {hint}")')
            continue
        if _POINTS.match(line):
            continue
        if e:
            if inside is None:
                raise SourceError(f"{origin}: '# END SOLUTION' without a matching BEGIN")
            inside = None
            continue
        if inside is None or solution:
            m = _LEARNER.match(line)
            if m:
                line = m.group("lhs") + (m.group("sol") if solution else m.group("val")) + (m.group("rest") or "")
            out.append(line)
    if inside is not None:
        raise SourceError(f"{origin}: '# BEGIN SOLUTION' without a matching END")
    return out


INSTALL_TAG = "course-install"
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
