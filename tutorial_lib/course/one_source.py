"""The course's one-source notebook format: percent-format cells, solution markers, ``# LEARNER:`` lines, tags.

The parser and the code renderer that :mod:`tutorial_lib.course.exercises` (the learner's and the solution notebooks)
and :mod:`tutorial_lib.course.nbgrader_export` (the nbgrader course) both read the sources with; the rules are
documented in :mod:`tutorial_lib.course.exercises`.
"""
from __future__ import annotations

import re

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
