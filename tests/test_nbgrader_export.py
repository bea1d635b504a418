"""The nbgrader export (issue 53), graded by nbgrader's own commands.

``python -m tutorial_lib.course.exercises nbgrader OUT/`` writes an nbgrader course folder from the one-source
notebooks. Here notebook 00 and notebook 05 (the fastest of 01-05: it builds its models by hand and loads
none) go through nbgrader as an instructor would use it: ``generate_assignment``, then ``autograde`` of three
submissions per assignment, then ``generate_feedback``:

* ``solution``: the released notebook with every answer cell filled in with the worked version (full marks on
  every autograded test; the predictions wait for a human);
* ``slip``: the same, with one exercise's ``def`` replaced by one of the usual wrong answers that the learner-notebook
  test registers (tests/learner_wrong_nb*.py): that test's points lost, every other kept, the feedback naming the
  slip with the check's own message;
* ``untouched``: the released notebook as a learner receives it (zero on every graded cell, and no crash).

Each assignment gets its own course folder, and the two run side by side (one kernel per core); offline, on the
zoo model, at ``TUTORIAL_SIZE=quick``.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import learner_wrong_nb00
import learner_wrong_nb05
from learner_run import exercise_functions, replace_def
from tutorial_lib.course import exercises, nbgrader_export as ne

pytest.importorskip("nbgrader")

# assignment -> (the exercise the slip submission gets wrong, which of its registered wrong answers)
SLIPS = {"00_start_here": ("logit_diff", "logits[:, -1] instead of end_pos", learner_wrong_nb00.WRONG),
         "05_answer_key": ("why_missed", "EAP-IG compared instead of EAP", learner_wrong_nb05.WRONG)}
STUDENTS = ("solution", "slip", "untouched")
SLOWEST = "05_answer_key"  # its three autogrades start first
MARKERS = ("### BEGIN SOLUTION", "### END SOLUTION")


def kernel_env() -> dict:
    """Offline (the zoo model at once), quick sizes, claims reported rather than raised, one thread per kernel."""
    env = {k: v for k, v in os.environ.items() if k not in ("TUTORIAL_MODEL", "HF_ENDPOINT", "TUTORIAL_SIZE",
                                                               "TUTORIAL_CLAIMS", "TUTORIAL_RECORD")}
    threads = os.environ.get("TEST_THREADS", "1")
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TUTORIAL_SIZE="quick", TUTORIAL_CLAIMS="report",
               MPLBACKEND="Agg", PYTHONWARNINGS="ignore", OMP_NUM_THREADS=threads, MKL_NUM_THREADS=threads,
               # nbgrader runs `alembic` (its database migrations) from PATH: the one beside this Python
               PATH=os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]))
    return env


def nbgrader(course: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=course, env=kernel_env(),
                          capture_output=True, text=True, timeout=900)


def _meta(cell) -> dict:
    return cell["metadata"].get("nbgrader", {})


def solved_source(source_cell: dict) -> str:
    """What a learner who wrote the worked answer has in an answer cell: the source cell without nbgrader's markers."""
    return "".join(l for l in source_cell["source"] if l.strip() not in MARKERS)


def submissions(source_nb: dict, release_nb: dict, stem: str) -> dict[str, dict]:
    by_id = {_meta(c)["grade_id"]: c for c in source_nb["cells"] if _meta(c).get("solution")}
    solution = json.loads(json.dumps(release_nb))
    for cell in solution["cells"]:
        if _meta(cell).get("solution"):
            cell["source"] = solved_source(by_id[_meta(cell)["grade_id"]])
    slip = json.loads(json.dumps(solution))
    name, label, wrong = SLIPS[stem]
    cell = next(c for c in slip["cells"] if _meta(c).get("grade_id") == name)
    cell["source"] = replace_def("".join(cell["source"]), name, wrong[name][label][0])
    return {"solution": solution, "slip": slip, "untouched": release_nb}


def _text(output: dict) -> str:
    """What an output shows: a stream's text, or an error's name and message."""
    if output["output_type"] == "stream":
        text = output.get("text", "")
        return "".join(text) if isinstance(text, list) else text
    if output["output_type"] == "error":
        return f"{output.get('ename', '')}: {output.get('evalue', '')}\n"
    return ""


def release(root: Path, stem: str) -> dict:
    """Export ``stem`` into its own course folder and run ``generate_assignment`` there."""
    course = root / stem
    ne.export(course, [exercises.SOURCES / f"{stem}.py"])
    run = nbgrader(course, "generate_assignment", stem, "--force")
    release_path = course / "release" / stem / f"{stem}.ipynb"
    return {"course": course, "run": run, "release": json.loads(release_path.read_text()) if release_path.exists() else None}


def grade(root: Path, stem: str, student: str, notebook: dict) -> dict:
    """``autograde`` and ``generate_feedback`` for one submission, in a copy of the released course folder (its own
    gradebook, so that the six submissions run two at a time)."""
    course = root / f"{stem}-{student}"
    shutil.copytree(root / stem, course)
    path = course / "submitted" / student / stem / f"{stem}.ipynb"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(notebook))
    t0 = time.time()
    runs = {"autograde": nbgrader(course, "autograde", stem, "--force")}
    runs["generate_feedback"] = nbgrader(course, "generate_feedback", stem, "--force")
    return {"runs": runs, "seconds": time.time() - t0, **collect(course, stem, student)}


def collect(course: Path, stem: str, student: str) -> dict:
    """One submission's grades ``{grade_id: (auto score, max score, needs a manual grade)}``,
    the graded cells' outputs in the autograded notebooks, and the feedback pages."""
    from nbgrader.api import Gradebook

    grades = outputs = feedback = None
    if (course / "gradebook.db").exists():
        with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
            try:
                sub = gb.find_submission_notebook(stem, stem, student)
                grades = {g.name: (g.auto_score, g.max_score, g.needs_manual_grade) for g in sub.grades}
            except Exception:  # noqa: BLE001 -- no submission: the tests say so
                pass
    graded = course / "autograded" / student / stem / f"{stem}.ipynb"
    if graded.exists():
        outputs = {_meta(c)["grade_id"]: "".join(map(_text, c.get("outputs", [])))
                   for c in json.loads(graded.read_text())["cells"] if _meta(c).get("grade")}
    html = course / "feedback" / student / stem / f"{stem}.html"
    if html.exists():
        feedback = html.read_text()
    return {"grades": grades, "outputs": outputs, "feedback": feedback}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """``{assignment: {"source", "release", "runs", "grades", "outputs", "feedback", "seconds"}}``, the last four keyed
    by submission; the six autogrades run two at a time, the slowest assignment's first."""
    root = tmp_path_factory.mktemp("nbgrader")
    t0 = time.time()
    with ThreadPoolExecutor(max_workers=2) as pool:
        released = dict(zip(SLIPS, pool.map(lambda s: release(root, s), SLIPS)))
        results, jobs = {}, []
        for stem, rel in released.items():
            source_nb = json.loads((rel["course"] / "source" / stem / f"{stem}.ipynb").read_text())
            results[stem] = {"source": source_nb, "release": rel["release"], "runs": {"generate_assignment": [rel["run"]]},
                             "grades": {}, "outputs": {}, "feedback": {}, "seconds": {}}
            if rel["release"] is not None:
                jobs += [(stem, student, nb) for student, nb in submissions(source_nb, rel["release"], stem).items()]
        jobs.sort(key=lambda j: j[0] != SLOWEST)
        for (stem, student, _), out in zip(jobs, pool.map(lambda j: grade(root, *j), jobs)):
            for key in ("grades", "outputs", "feedback", "seconds"):
                results[stem][key][student] = out[key]
            for step, run in out["runs"].items():
                results[stem]["runs"].setdefault(step, []).append(run)
    print(f"\nnbgrader: {time.time() - t0:.0f} s in all; autograde + feedback per submission: "
          + "; ".join(f"{stem} " + ", ".join(f"{k} {v:.0f} s" for k, v in r["seconds"].items()) for stem, r in results.items()))
    return results


def _tests(nb: dict) -> dict[str, float]:
    """``{grade_id: points}`` of the autograder test cells."""
    return {_meta(c)["grade_id"]: _meta(c)["points"] for c in nb["cells"]
            if _meta(c).get("grade") and not _meta(c).get("solution")}


def _predictions(nb: dict) -> list[str]:
    return [_meta(c)["grade_id"] for c in nb["cells"] if _meta(c).get("grade") and _meta(c).get("solution")]


def _ran(result, step):
    runs = result["runs"].get(step)
    assert runs, f"{step} did not run: {result['runs']}"
    for run in runs:
        assert run.returncode == 0, f"nbgrader {step} failed ({run.returncode}):\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"


# ---------------------------------------------------------------- the export alone (no kernel)
def test_export_covers_every_notebook_and_nbgrader_accepts_it(tmp_path):
    from nbgrader.nbgraderformat import MetadataValidator
    import nbformat

    written = ne.export(tmp_path)
    stems = sorted(p.stem for p in exercises.SOURCES.glob("*.py"))
    assert [p.name for p in written] == ["nbgrader_config.py"] + [f"{s}.ipynb" for s in stems]
    assert len(stems) == 6
    for stem in stems:
        path = tmp_path / "source" / stem / f"{stem}.ipynb"
        nb = nbformat.read(path, as_version=4)
        MetadataValidator().validate_nb(nb)
        learner = json.loads(exercises.render(exercises.SOURCES / f"{stem}.py")["exercise"])
        functions = [f for c in learner["cells"] if c["cell_type"] == "code"
                     for f in exercise_functions("".join(c["source"]))]
        assert functions, stem
        tests = _tests(nb)
        assert sorted(tests) == sorted(f"test_{f}" for f in functions), stem
        assert all(p > 0 for p in tests.values()), (stem, tests)
        answer_ids = [_meta(c)["grade_id"] for c in nb.cells if _meta(c).get("solution") and not _meta(c).get("grade")]
        assert sorted(answer_ids) == sorted(functions), stem
        n_predictions = sum(1 for c in learner["cells"] for l in "".join(c["source"]).splitlines()
                            if re.match(r"PREDICT_\w+ = None", l))
        assert sum(ne.points(nb)[g] for g in _predictions(nb)) == n_predictions * ne.PREDICTION_POINTS, stem
    config = (tmp_path / "nbgrader_config.py").read_text()
    ns = {"get_config": lambda: __import__("traitlets.config", fromlist=["Config"]).Config()}
    exec(config, ns)
    assert ns["c"].CourseDirectory.course_id == ne.COURSE_ID
    assert ns["c"].ClearSolutions.code_stub["python"] == ne.CODE_STUB
    assert ns["c"].Execute.timeout >= 300


SOURCE = '''# %% [markdown]
# # T
#
# | exercise | difficulty | time |
# | --- | --- | --- |
# | 1. `double` | ★★☆ | 10 min |
# | 2. `triple` | ★☆☆ | 5 min |
# %%
def double(x):
    # BEGIN SOLUTION: twice x
    return 2 * x
    # END SOLUTION


from tutorial_lib import checks

checks.check_double(double)
# %%
GUESS = 4  # LEARNER: None  # your guess
# %%
# POINTS: 7
def triple(x):
    # BEGIN SOLUTION
    return 3 * x
    # END SOLUTION


check_triple(triple, 1)
print("after the check")
'''


def test_points_come_from_the_difficulty_or_the_source(tmp_path, monkeypatch):
    src = tmp_path / "09_t.py"
    src.write_text(SOURCE)
    monkeypatch.setitem(ne.HIDDEN, "check_double", "with held_back(1):\n    {call}")
    monkeypatch.setitem(ne.HIDDEN, "check_triple", "check_triple({fn}, {a1} + 1)")
    nb = ne.build_assignment(src)
    assert ne.points(nb) == {"test_double": 2 * ne.POINTS_PER_STAR, "guess": ne.PREDICTION_POINTS, "test_triple": 7}
    text = ["".join(c["source"]) for c in nb["cells"]]
    test_triple = next(t for t, c in zip(text, nb["cells"]) if _meta(c).get("grade_id") == "test_triple")
    assert "check_triple(triple, 1)\n### BEGIN HIDDEN TESTS" in test_triple and "check_triple(triple, 1 + 1)" in test_triple
    assert "print(\"after the check\")" in text[text.index(test_triple) + 1]
    assert "# TODO: twice x\n    ### BEGIN SOLUTION\n    return 2 * x\n    ### END SOLUTION" in text[1]
    assert not any("# POINTS" in t for t in text)
    for solution in (True, False):
        assert not any("POINTS" in l for l in exercises.render_code(SOURCE.splitlines(), solution=solution))


def test_a_difficulty_count_that_does_not_match_the_exercises_is_an_error(tmp_path):
    src = tmp_path / "09_t.py"
    src.write_text(SOURCE.replace("# | 2. `triple` | ★☆☆ | 5 min |\n", ""))
    with pytest.raises(exercises.SourceError, match="1 difficulties .* for 2 exercises"):
        ne.build_assignment(src)


def test_every_check_an_exercise_calls_has_held_back_cases_or_says_why():
    called = set()
    for src in exercises.SOURCES.glob("*.py"):
        called |= set(re.findall(r"^checks\.(check_\w+)\(", src.read_text(), re.M))
    assert called, "no check calls found in the notebook sources"
    assert set(ne.HIDDEN) == called, (f"missing: {sorted(called - set(ne.HIDDEN))}; "
                                      f"stale: {sorted(set(ne.HIDDEN) - called)}")
    assert len(ne.without_hidden_cases()) < len(called) / 3


def _replay(fn):
    """``fn``'s answers recorded on one run, then played back in the same order whatever the input: a submission
    that passes by matching what it was shown."""
    record, state = [], {"replay": False, "i": 0}

    def wrapped(*args, **kwargs):
        if state["replay"]:
            state["i"] += 1
            return record[(state["i"] - 1) % len(record)]
        record.append(fn(*args, **kwargs))
        return record[-1]

    return wrapped, state


@pytest.mark.parametrize("check,solution", [
    ("check_zero_head_hook", "def f(z, hook, head):\n    z = z.clone()\n    z[:, :, head] = 0\n    return z"),
    ("check_participation_ratio", "def f(X):\n    from tutorial_lib.methods.spectral import participation_ratio\n"
                                  "    return participation_ratio(X)"),
])
def test_held_back_cases_fail_an_answer_that_replays_the_visible_case(check, solution):
    from tutorial_lib import checks

    ns = {}
    exec(solution, ns)
    replay, state = _replay(ns["f"])
    getattr(checks, check)(replay)  # records the visible answers (and passes: they are the solution's)
    state["replay"] = True
    getattr(checks, check)(replay)  # the visible case again: played back, it passes
    with pytest.raises(checks.ExerciseError):
        with ne.held_back(1):
            getattr(checks, check)(replay)
    with ne.held_back(1):
        getattr(checks, check)(ns["f"])  # the real answer passes the held-back cases
    import torch
    from tutorial_lib.course.checks import nb00

    assert nb00.torch is torch, "held_back left the checks' torch replaced"


# ---------------------------------------------------------------- nbgrader itself
def test_generate_assignment_releases_no_solution_and_no_hidden_test(graded):
    for stem, result in graded.items():
        _ran(result, "generate_assignment")
        released = json.dumps(result["release"])
        assert "BEGIN HIDDEN TESTS" not in released and "held_back" not in released and "reversed_examples" not in released
        source_text = json.dumps(result["source"])
        assert "BEGIN HIDDEN TESTS" in source_text
        for cell in result["source"]["cells"]:
            if _meta(cell).get("solution"):
                body = "".join(cell["source"]).split("### BEGIN SOLUTION\n")[1].split("### END SOLUTION")[0]
                for line in body.splitlines():
                    if line.strip() and not line.strip().startswith("#"):
                        assert line not in released.replace("\\n", "\n").splitlines(), (stem, line)
        visible = [l for c in result["source"]["cells"] if _meta(c).get("grade") and not _meta(c).get("solution")
                   for l in "".join(c["source"]).split("### BEGIN HIDDEN TESTS")[0].splitlines()]
        assert all(l in "".join(l2 for c in result["release"]["cells"] for l2 in c["source"]) for l in visible)


def test_the_worked_answers_get_full_marks(graded):
    for stem, result in graded.items():
        _ran(result, "autograde")
        grades = result["grades"].get("solution")
        assert grades, f"{stem}: no graded submission for the worked answers"
        for test, points in _tests(result["source"]).items():
            score, max_score, _ = grades[test]
            assert max_score == points
            assert score == points, f"{stem}: {test} got {score} of {points}:\n{result['outputs']['solution'][test][-2000:]}"
        for pred in _predictions(result["source"]):
            assert grades[pred][2], f"{stem}: the answered prediction {pred} should wait for a manual grade"


def test_one_slip_loses_only_that_exercise_and_the_feedback_names_it(graded):
    for stem, result in graded.items():
        _ran(result, "autograde")
        name, label, wrong = SLIPS[stem]
        grades = result["grades"]["slip"]
        tests = _tests(result["source"])
        lost = {t: tests[t] - grades[t][0] for t in tests if grades[t][0] != tests[t]}
        assert lost == {f"test_{name}": tests[f"test_{name}"]}, f"{stem}: points lost {lost}"
        pattern = wrong[name][label][1]
        message = result["outputs"]["slip"][f"test_{name}"]
        assert "ExerciseError" in message and re.search(pattern, message, re.S), (stem, message[-2000:])
        _ran(result, "generate_feedback")
        html = result["feedback"]["slip"]
        assert html is not None and "ExerciseError" in html, f"{stem}: no feedback file naming the slip"
        text = re.sub(r"<[^>]+>", "", html).replace("&quot;", '"').replace("&#39;", "'").replace("&gt;", ">").replace("&lt;", "<").replace("&amp;", "&")
        assert re.search(pattern, text, re.S), f"{stem}: the feedback does not carry the check's message {pattern!r}"


def test_the_untouched_learner_notebook_scores_zero_without_a_crash(graded):
    for stem, result in graded.items():
        _ran(result, "autograde")
        grades = result["grades"].get("untouched")
        assert grades, f"{stem}: the untouched notebook was not graded"
        for test in _tests(result["source"]):
            assert grades[test][0] == 0, f"{stem}: {test} gave points to an unfinished exercise"
            assert "not written yet" in result["outputs"]["untouched"][test], result["outputs"]["untouched"][test][-500:]
        for pred in _predictions(result["source"]):
            assert grades[pred][0] == 0 and not grades[pred][2], f"{stem}: the unanswered {pred} should score 0"
        _ran(result, "generate_feedback")
        assert all(result["feedback"][s] for s in STUDENTS), f"{stem}: feedback missing for some submissions"
