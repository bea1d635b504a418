"""The one-source notebooks as an nbgrader course: ``python -m tutorial_lib.course.exercises nbgrader OUT/``.

``OUT/`` becomes an nbgrader course folder: ``nbgrader_config.py`` and ``source/<assignment>/NN_name.ipynb``,
one assignment per notebook (the assignment is named like the notebook, ``00_start_here``). Each notebook is
written from ``notebooks/src/NN_name.py`` by the same parser as the learner's and the solution notebooks
(:mod:`tutorial_lib.course.exercises`), cell by cell:

* an **exercise cell** (one that holds ``# BEGIN SOLUTION``) becomes two cells: an *autograded answer* (the
  ``def``, its solution between nbgrader's ``### BEGIN SOLUTION`` / ``### END SOLUTION``, the course's hint kept
  above it as ``# TODO: ...``), then an *autograder test* (locked, with points): the exercise's inline check as the
  learner sees it, then held-back cases between ``### BEGIN HIDDEN TESTS`` / ``### END HIDDEN TESTS``
  (:data:`HIDDEN`: the same check on other prompts, the examples in another order, other seeds). Code the source
  cell has after its check call goes to a plain cell after the test;
* a **prediction cell** (``PREDICT_X = <guess>  # LEARNER: None``) becomes a *manually graded answer*: the
  learner's line, then the worked version's guess as the solution;
* every other cell is copied as the learner's notebook has it (the "Open in Colab" link is left out).

Points: an exercise gets :data:`POINTS_PER_STAR` times its stars -- the difficulty each notebook's introduction
gives it, ``★★☆ | 10 min`` or ``(easy, 5 min)`` (easy = ★, medium = ★★, hard = ★★★), matched to the exercises
in order -- and a prediction cell :data:`PREDICTION_POINTS` per ``PREDICT_`` line. A line ``# POINTS: 4`` in a
source cell sets that cell's points instead (the learner's and solution notebooks leave the line out).

The feedback an autograded test gives is the inline check's own message (an :class:`~tutorial_lib.course.checks.
ExerciseError` that names the slip); nbgrader gives the test zero points when it raises.
"""
from __future__ import annotations

import ast
import copy
import json
import re
from contextlib import contextmanager
from pathlib import Path

from . import colab
from . import one_source as ex

POINTS_PER_STAR = 1
PREDICTION_POINTS = 1
WORDS = {"easy": 1, "medium": 2, "hard": 3}
# "★★☆ | 10 min" (a table row), "(★★, 10 min)" or "(easy, 5 min)": a difficulty followed by a time to write
_DIFFICULTY = re.compile(r"(?P<stars>★+)☆*\s*[,|]\s*\d+\s*min|\((?P<word>easy|medium|hard)\s*,\s*\d+\s*min")
# an item's number: "| 3. `name`", "; 4: a random circuit", "| 1 `participation_ratio`" (not "15 min")
_ITEM = re.compile(r"(?:^|[|;]\s*)(\d+)(?:[.:]|\s+`)")
_EXERCISE = re.compile(r"\*\*Exercise (\d+)")  # how the markdown before an exercise names it
_POINTS = re.compile(r"^\s*# POINTS:\s*(?P<n>\d+(?:\.\d+)?)\s*$")
CODE_STUB = '# YOUR CODE HERE\nraise NotImplementedError("Exercise: write your answer here")'
COURSE_ID = "circuits-course"

# Held-back cases, per inline check: code run after the visible check, inside nbgrader's hidden-tests block.
# ``{call}`` is the visible check call, ``{fn}`` the learner's function, ``{a1}``, ``{a2}``, ... the call's other
# positional arguments, ``{k_<name>}`` its keyword arguments (as written in the notebook). ``None``: the check's
# own cases are fixed literals and no argument varies them; the reason says so (the export lists these).
HIDDEN: dict[str, "str | tuple[None, str]"] = {
    # 00
    "check_head_output": 'checks.check_head_output({fn}, {a1}, {a1}.to_tokens(" The contract ran from the year 1812 to the year 18"))',
    "check_zero_head_hook": "with held_back(1):\n    {call}\nwith held_back(2):\n    {call}",
    "check_logit_diff": "with held_back(1):\n    checks.check_logit_diff({fn}, reversed_examples({a1}), {a2}.flip(0))",
    "check_patch_hook": "checks.check_patch_hook({fn}, {a1}, {a2}.flip(0), {a3}.flip(0), layer={a1}.cfg.n_layers - 1)",
    "check_could_have_failed": (None, "the inline check already runs seven held-back rows, near each threshold, that the "
                                      "notebook's table does not show"),
    # 01
    "check_prob_diff": "checks.check_prob_diff({fn}, reversed_examples({a1}), {a2}.flip(0))",
    "check_patch_each_head": "checks.check_patch_each_head({fn}, {a1}, reversed_examples({a2}))",
    "check_direct_path_patch": 'checks.check_direct_path_patch({fn}, {a1}, reversed_examples({a2}), sender="m0")',
    "check_path_patch": "checks.check_path_patch({fn}, {a1}, reversed_examples({a2}), {a3}, {a4}, head={k_head})",
    "check_search_step": "checks.check_search_step({fn}, {a1}, reversed_examples({a2}), {a3})",
    "check_sufficiency": "checks.check_sufficiency({fn}, {a1}, reversed_examples({a2}), components={k_components})",
    "check_necessity": "checks.check_necessity({fn}, {a1}, reversed_examples({a2}), components={k_components})",
    # 02
    "check_edge_score": "checks.check_edge_score({fn}, {a1}, {a2}, examples=(1, 2))",
    "check_eap_edges": "checks.check_eap_edges({fn}, {a1}, reversed_examples({a2}), examples=5)",
    "check_node_scores": "checks.check_node_scores({fn}, {a1}, examples=(1, 2))",
    "check_shared_set": "with held_back(1):\n    checks.check_shared_set({fn}, {a1}.flip(0), {a2})",
    "check_reuse_at_p": "with held_back(1):\n    checks.check_reuse_at_p({fn}, {a1}.flip(0))",
    "check_size_matched_control": (None, "its circuits and seeds are literals, and it checks properties, not numbers"),
    "check_permutation_test": "with held_back(1):\n    {call}",
    "check_cross_task_row": "checks.check_cross_task_row({fn}, {a1}, {a2}, {a3}, n=12)",
    "check_jaccard": "checks.check_jaccard({fn}, {a1}, n_random=1000)",
    # 03
    "check_participation_ratio": "with held_back(1):\n    {call}\nwith held_back(2):\n    {call}",
    "check_pr_integral": "with held_back(1):\n    {call}",
    "check_induction_selectivity": "checks.check_induction_selectivity({fn}, {a1}, {a2}, seed=1)",
    "check_group_ablation": "checks.check_group_ablation({fn}, {a1}, {a2}, list({a3})[:1])",
    "check_ablation_test": "checks.check_ablation_test({fn}, {a1}, {a2}, list({a3})[::-1], mode=\"zero\", n_draws=5, seed=3)",
    "check_k_composition": (None, "it already covers every layer-0 -> layer-1 head pair of the notebook's model"),
    "check_induction_scores": "checks.check_induction_scores({fn}, {a1}, {a2}, length=16, n_seqs=8)",
    # 04
    "check_ig_step": "checks.check_ig_step({fn}, {a1}, reversed_examples({a2}))",
    "check_faithfulness": "checks.check_faithfulness({fn}, {a1}, {a2}.subset(range(len({a2}) // 2)), {a3})",
    "check_random_circuit": (None, "its sizes and seeds are literals, and it checks counts and uniformity, not numbers"),
    "check_cpr_cmd": (None, "its curves are literals"),
    "check_overlap_against_chance": ('checks.check_overlap_against_chance({fn}, cases=[([f"m{{i}}" for i in range(3, 12)], '
                                     '[f"m{{i}}" for i in range(9, 20)], 48)])'),
    # 05
    "check_previous_token_head": (None, "it builds its own model with literal weights"),
    "check_roc": (None, "its rankings are literals"),
    "check_why_missed": "checks.check_why_missed({fn}, list({a1})[::-1])",
}


# ------------------------------------------------------------------ what runs in the graded notebooks
class _ShiftedTorch:
    """``torch`` as the check modules see it inside :func:`held_back`: ``torch.Generator().manual_seed(s)`` seeds
    ``s + shift``; everything else is torch itself."""

    def __init__(self, torch, shift: int):
        class Generator(torch.Generator):
            def manual_seed(self, seed):
                return super().manual_seed(int(seed) + shift)

        self._torch, self.Generator = torch, Generator

    def __getattr__(self, name):
        return getattr(self._torch, name)


@contextmanager
def held_back(k: int = 1):
    """Inside, the inline checks draw the random cases they make themselves (``torch.Generator().manual_seed(s)`` in
    :mod:`tutorial_lib.course.checks`) from seed ``s + 1000 k`` instead of ``s``: the same checks on cases the
    learner has not seen. The library's reference answers and the learner's own seeded draws are untouched."""
    import sys

    import torch

    if int(k) < 1:
        raise ValueError(f"held_back(k) needs k >= 1 (k = 0 is the visible case), got {k!r}")
    shifted = _ShiftedTorch(torch, 1000 * int(k))
    modules = [m for name, m in list(sys.modules.items())
               if name.startswith("tutorial_lib.course.checks.") and getattr(m, "torch", None) is torch]
    for m in modules:
        m.torch = shifted
    try:
        yield
    finally:
        for m in modules:
            m.torch = torch


def reversed_examples(task):
    """``task`` with its examples in the opposite order (a held-back case: the same prompts, in new places)."""
    return task.subset(list(range(len(task)))[::-1])


# ------------------------------------------------------------------ difficulty and points
def difficulties(cells: list[dict]) -> list[tuple["int | None", int]]:
    """``(exercise number, stars)`` for each difficulty the introduction (the markdown before the first code cell)
    gives, in order; the number is the one that opens the item (``| 3. `name` |``, ``; 4: a random circuit``,
    ``| 1 `participation_ratio```), ``None`` when there is none."""
    intro = []
    for cell in cells:
        if cell["type"] == "code":
            break
        intro += cell["lines"]
    found = []
    for line in intro:
        numbers = [(m.start(), int(m.group(1))) for m in _ITEM.finditer(line)]
        for m in _DIFFICULTY.finditer(line):
            before = [n for at, n in numbers if at < m.start()]
            found.append((before[-1] if before else None,
                          len(m.group("stars")) if m.group("stars") else WORDS[m.group("word")]))
    return found


def _points_override(lines: list[str]) -> "float | None":
    values = [float(m.group("n")) for m in map(_POINTS.match, lines) if m]
    if len(values) > 1:
        raise ex.SourceError(f"a cell has {len(values)} '# POINTS:' lines; give one")
    return values[0] if values else None


# ------------------------------------------------------------------ one notebook
def _meta(grade_id: str, *, grade: bool, solution: bool, locked: bool, points: "float | None" = None) -> dict:
    meta = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": 3, "solution": solution,
            "task": False}
    if points is not None:
        meta["points"] = points
    return {"nbgrader": meta}


def _nbgrader_solution_lines(lines: list[str], origin: str) -> list[str]:
    """An exercise cell's lines with the course's markers as nbgrader's (the hint kept above as a TODO)."""
    out = []
    for line in lines:
        b, e = ex._BEGIN.match(line), ex._END.match(line)
        if b:
            indent = b.group("indent")
            out += [f"{indent}# TODO: {b.group('hint') or 'fill in this part'}", f"{indent}### BEGIN SOLUTION"]
        elif e:
            out.append(line[:len(line) - len(line.lstrip())] + "### END SOLUTION")
        elif not _POINTS.match(line):
            m = ex._LEARNER.match(line)
            out.append(m.group("lhs") + m.group("sol") + (m.group("rest") or "") if m else line)
    return out


def _check_call(tail: list[str], origin: str):
    """The first top-level statement of ``tail`` that calls a ``check_*`` function: (first line, last line, node)."""
    tree = ast.parse("\n".join(tail))
    for node in tree.body:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            f = node.value.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            if name.startswith("check_"):
                return node.lineno - 1, node.end_lineno, node.value, name
    raise ex.SourceError(f"{origin}: an exercise cell has no check_*(...) call after its solution")


def hidden_block(call_src: str, check: str, origin: str = "<source>") -> list[str]:
    """The held-back cases of one check, as the lines between nbgrader's hidden-test markers ([] when none)."""
    if check not in HIDDEN:
        raise ex.SourceError(f"{origin}: no held-back cases for {check}: add it to nbgrader_export.HIDDEN "
                             "(a template, or (None, why not))")
    template = HIDDEN[check]
    if isinstance(template, tuple):
        return []
    node = ast.parse(call_src).body[0].value  # positions relative to the call's own text
    seg = lambda n: ast.get_source_segment(call_src, n)  # noqa: E731
    fields = {"call": call_src, "fn": seg(node.args[0])}
    fields.update({f"a{i}": seg(a) for i, a in enumerate(node.args) if i})
    fields.update({f"k_{k.arg}": seg(k.value) for k in node.keywords if k.arg})
    try:
        code = template.format(**fields)
    except (KeyError, IndexError) as err:
        raise ex.SourceError(f"{origin}: the held-back template of {check} needs {err}, which the call "
                             f"{call_src!r} does not give") from None
    return ["### BEGIN HIDDEN TESTS", "from tutorial_lib.course.nbgrader_export import held_back, reversed_examples",
            "", *code.splitlines(), "### END HIDDEN TESTS"]


def _exercise_cells(cell: dict, stars: "int | None", origin: str) -> list[tuple[str, list[str], dict]]:
    lines = cell["lines"]
    end = max(i for i, l in enumerate(lines) if ex._END.match(l))
    head, tail = lines[:end + 1], lines[end + 1:]
    first, last, node, check = _check_call(tail, origin)
    fn_name = node.args[0].id if node.args and isinstance(node.args[0], ast.Name) else check[len("check_"):]
    override = _points_override(lines)
    if override is None and stars is None:
        raise ex.SourceError(f"{origin}: exercise `{fn_name}` has no difficulty in the introduction and no '# POINTS:' line")
    points = override if override is not None else POINTS_PER_STAR * stars
    before = [l for l in tail[:first] if not _POINTS.match(l)]
    call_lines = tail[first:last]
    after = [l for l in tail[last:] if not _POINTS.match(l)]
    call_src = "\n".join(call_lines)
    test = (["from tutorial_lib import checks"] if call_src.startswith("checks.") else [])
    test += [l for l in before if l.strip() and l.strip() != "from tutorial_lib import checks"]
    test += call_lines + hidden_block(call_src, check, origin)
    out = [("code", _nbgrader_solution_lines(head, origin),
            _meta(fn_name, grade=False, solution=True, locked=False)),
           ("code", test, _meta(f"test_{fn_name}", grade=True, solution=False, locked=True, points=points))]
    after = ex.render_code(after, solution=True, origin=origin)
    while after and not after[0].strip():
        after.pop(0)
    if after:
        out.append(("code", after, {}))
    return out


def _prediction_cell(cell: dict, origin: str) -> tuple[str, list[str], dict]:
    learner, solution, names = [], [], []
    for line in cell["lines"]:
        if _POINTS.match(line):
            continue
        m = ex._LEARNER.match(line)
        if m:
            names.append(m.group("lhs").split("=")[0].strip())
            learner.append(m.group("lhs") + m.group("val") + (m.group("rest") or ""))
            solution.append(m.group("lhs") + m.group("sol"))
        else:
            learner.append(line)
    override = _points_override(cell["lines"])
    points = override if override is not None else PREDICTION_POINTS * len(names)
    source = learner + ["### BEGIN SOLUTION", *solution, "### END SOLUTION"]
    return ("code", source, _meta(names[0].lower(), grade=True, solution=True, locked=False, points=points))


def build_assignment(source: Path) -> dict:
    """The nbgrader source notebook (nbformat 4, as a dict) for ``notebooks/src/NN_name.py``."""
    origin = str(source)
    cells = ex.parse_cells(Path(source).read_text(), origin=origin)
    numbers, last = [], None  # each exercise cell's number, from the "**Exercise N" above it
    for cell in cells:
        if cell["type"] == "markdown":
            found = _EXERCISE.findall("\n".join(cell["lines"]))
            last = int(found[-1]) if found else last
        elif any(ex._BEGIN.match(l) for l in cell["lines"]):
            numbers.append(last)
            last = None
    given = difficulties(cells)
    if given and all(n is not None for n, _ in given) and all(n is not None for n in numbers):
        by_number = dict(given)
        stars = [by_number.get(n) for n in numbers]
        if None in stars or len(by_number) != len(given) or sorted(by_number) != sorted(numbers):
            raise ex.SourceError(f"{origin}: the introduction gives difficulties to exercises {sorted(by_number)}, "
                                 f"the notebook has exercises {numbers}")
    elif given and len(given) != len(numbers):
        raise ex.SourceError(f"{origin}: the introduction gives {len(given)} difficulties ({[s for _, s in given]}) "
                             f"for {len(numbers)} exercises")
    else:
        stars = [s for _, s in given] or [None] * len(numbers)
    out: list[tuple[str, list[str], dict]] = []
    k = 0
    for cell in cells:
        if cell["type"] == "markdown":
            out.append(("markdown", cell["lines"], {}))
        elif any(ex._BEGIN.match(l) for l in cell["lines"]):
            out += _exercise_cells(cell, stars[k], origin)
            k += 1
        elif any(ex._LEARNER.match(l) for l in cell["lines"]):
            out.append(_prediction_cell(cell, origin))
        else:
            lines = ex.render_code(cell["lines"], solution=True, origin=origin)
            if ex.INSTALL_TAG in cell["tags"]:
                lines = colab.install_lines() + lines
            out.append(("code", lines, {"tags": cell["tags"]} if cell["tags"] else {}))
    nb_cells = []
    for i, (kind, lines, meta) in enumerate(out):
        text = "\n".join(lines)
        c = {"cell_type": kind, "id": f"g{i:03d}", "metadata": copy.deepcopy(meta),
             "source": text.splitlines(keepends=True)}
        if kind == "code":
            c.update(execution_count=None, outputs=[])
        nb_cells.append(c)
    return {"cells": nb_cells,
            "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
                         "language_info": {"name": "python"}},
            "nbformat": 4, "nbformat_minor": 5}


def points(nb: dict) -> dict[str, float]:
    """``{grade_id: points}`` of a notebook's graded cells."""
    return {c["metadata"]["nbgrader"]["grade_id"]: c["metadata"]["nbgrader"]["points"] for c in nb["cells"]
            if c["metadata"].get("nbgrader", {}).get("grade")}


CONFIG = '''\
"""nbgrader configuration of the course, written by `python -m tutorial_lib.course.exercises nbgrader`."""
c = get_config()  # noqa: F821 -- nbgrader provides it

c.CourseDirectory.course_id = {course!r}
# the assignments (one per notebook), each in source/<assignment>/: {assignments}
# an unfinished exercise raises NotImplementedError("Exercise: ..."), which the inline checks report as not written yet
c.ClearSolutions.code_stub = {{"python": {stub!r}}}
# the notebooks run whole sweeps: allow up to 10 minutes per cell (nbgrader's default is 30 s)
c.Execute.timeout = 600
'''


def export(out: Path, sources: "list[Path] | None" = None) -> list[Path]:
    """Write the nbgrader course folder ``out`` (``nbgrader_config.py``, ``source/<assignment>/<notebook>.ipynb``)
    from ``sources`` (every ``notebooks/src/*.py`` by default); returns the paths written."""
    out = Path(out)
    sources = sorted(ex.SOURCES.glob("*.py")) if sources is None else [Path(s) for s in sources]
    written = []
    for src in sources:
        path = out / "source" / src.stem / f"{src.stem}.ipynb"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(build_assignment(src), indent=1, ensure_ascii=False) + "\n")
        written.append(path)
    config = out / "nbgrader_config.py"
    config.write_text(CONFIG.format(course=COURSE_ID, assignments=", ".join(s.stem for s in sources), stub=CODE_STUB))
    return [config] + written


def without_hidden_cases() -> dict[str, str]:
    """The checks whose autograder test has no held-back case, and why."""
    return {k: v[1] for k, v in HIDDEN.items() if isinstance(v, tuple)}


__all__ = ["export", "build_assignment", "held_back", "reversed_examples", "difficulties", "points", "HIDDEN"]
