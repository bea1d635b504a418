"""The install cell (the lines `course/colab.py` writes at the top of every notebook's first code cell), run as
on Colab against a fake environment: pip is replaced by a recorder, `tutorial_lib` is hidden until "installed",
and a temporary site directory adds distributions Colab has and this venv lacks. And the one address and the one
name: every notebook, the install cell, the README and pyproject.toml agree with `colab.REPOSITORY` /
`colab.DISTRIBUTION`, and the address is written nowhere else."""
import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from tutorial_lib.course import colab

ROOT = Path(__file__).resolve().parents[1]
CLEAN_ENV = {k: v for k, v in os.environ.items()
             if k not in ("PYTHONPATH", "VIRTUAL_ENV", "TUTORIAL_DATA", "TUTORIAL_MODEL", "HF_ENDPOINT")}

# pip's own words when a pin stands in the way (pip 24, ipywidgets>=8 against Colab's 7.7.1)
RESOLUTION_IMPOSSIBLE = """\
ERROR: Cannot install circuits-course==0.1.0 because these package versions have conflicting dependencies.

The conflict is caused by:
    circuits-course 0.1.0 depends on ipywidgets>=8.0
    The user requested (constraint) ipywidgets==7.7.1

To fix this you could try to:
1. loosen the range of package versions you've specified
2. remove package versions to allow pip to attempt to solve the dependency conflict

ERROR: ResolutionImpossible: for help visit https://pip.pypa.io/en/latest/topics/dependency-resolution/#dealing-with-dependency-conflicts
"""
NOT_ON_INDEX = ("ERROR: Could not find a version that satisfies the requirement circuits-course==0.1.0 (from versions: none)\n"
                "ERROR: No matching distribution found for circuits-course==0.1.0\n")

# Runs before the cell: pip is recorded and answered from ANSWERS (dry runs) or succeeds (installs).
FAKE_PIP = """
import importlib.util, json, subprocess, sys
calls, ANSWERS = [], json.loads(sys.argv[1])
real_find_spec = importlib.util.find_spec
importlib.util.find_spec = lambda name, *a: None if name == "tutorial_lib" else real_find_spec(name, *a)
def fake_run(cmd, *a, **kw):
    calls.append({"cmd": cmd, "pins": open(cmd[cmd.index("-c") + 1]).read() if "-c" in cmd else None})
    if "--dry-run" in cmd:
        rc, out, err = ANSWERS[cmd[-1]]
        return subprocess.CompletedProcess(cmd, rc, out, err)
    importlib.util.find_spec = real_find_spec  # "installed": the real package is importable from here on
    return subprocess.CompletedProcess(cmd, 0, "", "")
subprocess.run = fake_run
import atexit
atexit.register(lambda: print("CALLS " + json.dumps(calls)))
"""


def install_cell() -> str:
    return "\n".join(colab.install_lines())


def fake_site(tmp_path: Path) -> Path:
    """Two distributions this venv lacks: one Colab-like, one whose version pip cannot read (left unpinned)."""
    site = tmp_path / "site"
    for name, ver in [("Colab_Only.Pkg", "7.7.1"), ("distro-info", "1.1build1")]:
        d = site / f"{name.replace('-', '_')}-{ver}.dist-info"
        d.mkdir(parents=True, exist_ok=True)
        (d / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {ver}\n")
    return site


def run_cell(tmp_path, answers, cell=None, ipython=False):
    env = dict(CLEAN_ENV, PYTHONPATH=str(fake_site(tmp_path)))
    body = cell if cell is not None else install_cell()
    if ipython:  # as a kernel runs it: IPython shows SystemExit as one line
        body = ("from IPython.core.interactiveshell import InteractiveShell\n"
                f"r = InteractiveShell.instance().run_cell({body!r})\n"
                "print('ERROR', type(r.error_in_exec).__name__)\n")
    res = subprocess.run([sys.executable, "-c", FAKE_PIP + body, json.dumps(answers)], capture_output=True, text=True,
                         timeout=120, cwd=tmp_path, env=env)
    calls = json.loads(next(l for l in res.stdout.splitlines() if l.startswith("CALLS "))[6:])
    return res, calls


def expected_pins(site: Path) -> dict:
    """What the environment holds, computed independently of the cell (packaging's reading of each version)."""
    script = ("import json, sys; from importlib.metadata import distributions\n"
              "print(json.dumps([[d.metadata['Name'], d.version] for d in distributions()]))")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                         env=dict(CLEAN_ENV, PYTHONPATH=str(site)), cwd=site.parent).stdout  # as the cell runs
    pins = {}
    for name, ver in json.loads(out):
        try:
            Version(ver)
        except InvalidVersion:
            continue
        pins.setdefault(canonicalize_name(name), ver)
    return pins


def test_the_cell_pins_every_installed_distribution_then_installs_the_release_only(tmp_path):
    ok = [0, "Would install circuits-course-0.1.0 jaxtyping-0.3.2\n", ""]
    res, calls = run_cell(tmp_path, {colab.release_requirement(): ok})
    assert res.returncode == 0, res.stderr[-3000:]
    assert [c["cmd"][-2:] for c in calls] == [["--dry-run", colab.release_requirement()], ["-q", colab.release_requirement()]]
    for c in calls:
        cmd = c["cmd"]
        assert cmd[:4] == [sys.executable, "-m", "pip", "install"] and cmd[cmd.index("-c") + 1]
        assert not any(re.match(r"(torch|numpy|ipywidgets|plotly)\b", part) for part in cmd), cmd
    lines = calls[0]["pins"].splitlines()
    got = dict(l.split("==") for l in lines)
    assert len(got) == len(lines), "a distribution is pinned twice"
    want = expected_pins(tmp_path / "site")
    assert got == want, f"missing: {set(want) - set(got)}; extra: {set(got) - set(want)}"
    import ipywidgets
    import numpy
    import torch
    assert got["torch"] == torch.__version__ and got["numpy"] == numpy.__version__
    assert got["ipywidgets"] == ipywidgets.__version__ and got["colab-only-pkg"] == "7.7.1"
    assert "distro-info" not in got  # "1.1build1" is no version pip can read, so it cannot be pinned
    assert calls[1]["pins"] == calls[0]["pins"]
    assert "Would install circuits-course-0.1.0" in res.stdout
    assert f"packages already here are unchanged" in res.stdout, res.stdout


def test_a_resolution_failure_is_reported_before_anything_is_installed(tmp_path):
    answers = {colab.release_requirement(): [1, "", RESOLUTION_IMPOSSIBLE]}
    res, calls = run_cell(tmp_path, answers)
    assert len(calls) == 1 and "--dry-run" in calls[0]["cmd"], calls  # no install, and no fallback either
    assert res.returncode == 1
    out = res.stdout
    assert "circuits-course 0.1.0 depends on ipywidgets>=8.0" in out and "(constraint) ipywidgets==7.7.1" in out
    assert "Nothing was installed" in out and f"%pip install {colab.release_requirement()}" in out
    assert "Traceback" not in res.stderr and "The course was not installed" in res.stderr

    res, calls = run_cell(tmp_path, answers, ipython=True)  # in a kernel: one line, no traceback wall
    assert "ERROR SystemExit" in res.stdout and "Traceback" not in res.stdout + res.stderr, res.stdout
    assert len(calls) == 1


def test_when_the_index_lacks_the_release_the_repository_is_the_fallback(tmp_path):
    answers = {colab.release_requirement(): [1, "", NOT_ON_INDEX], colab.git_requirement(): [0, "", ""]}
    res, calls = run_cell(tmp_path, answers)
    assert res.returncode == 0, res.stderr[-2000:]
    assert [c["cmd"][-1] for c in calls] == [colab.release_requirement(), colab.git_requirement(), colab.git_requirement()]
    assert "--dry-run" in calls[1]["cmd"] and "--dry-run" not in calls[2]["cmd"]

    answers[colab.git_requirement()] = [1, "", "fatal: unable to access the repository\n"]  # neither: say so
    res, calls = run_cell(tmp_path, answers)
    assert res.returncode == 1 and len(calls) == 2 and "pip found no way to install the course" in res.stdout
    assert "unable to access the repository" in res.stdout


def test_the_cell_on_colab_then_sets_up(tmp_path):
    """The notebook's whole first cell, with google.colab faked: installs, then setup() enables the widget manager."""
    nb = json.loads((ROOT / "notebooks" / "00_start_here.ipynb").read_text())
    cell = "".join(next(c for c in nb["cells"] if c["cell_type"] == "code")["source"])
    fake_colab = ("import sys, types\nwidget_manager = []\n"
                  "colab = types.ModuleType('google.colab'); colab.output = types.SimpleNamespace("
                  "enable_custom_widget_manager=lambda: widget_manager.append(1))\n"
                  "google = types.ModuleType('google'); google.colab = colab\n"
                  "sys.modules['google'], sys.modules['google.colab'] = google, colab\n")
    res, calls = run_cell(tmp_path, {colab.release_requirement(): [0, "", ""]},
                          cell=fake_colab + cell + "\nprint('WHERE', env.where, widget_manager)\n")
    assert res.returncode == 0, res.stderr[-3000:]
    assert len(calls) == 2 and "WHERE colab [1]" in res.stdout


def test_the_cell_does_nothing_where_the_course_is_installed(tmp_path):
    nb = json.loads((ROOT / "notebooks" / "solutions" / "01_greater_than.ipynb").read_text())
    cell = "".join(next(c for c in nb["cells"] if c["cell_type"] == "code")["source"])
    script = ("import subprocess\nsubprocess.run = lambda *a, **k: (_ for _ in ()).throw(AssertionError('pip ran'))\n"
              + cell + "\nprint('where', env.where)\n")
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=tmp_path,
                         env=CLEAN_ENV)
    assert res.returncode == 0 and "where" in res.stdout, res.stderr[-2000:]


# ---------------------------------------------------------------- one address, one name

def notebooks():
    return sorted((ROOT / "notebooks").glob("*.ipynb")) + sorted((ROOT / "notebooks" / "solutions").glob("*.ipynb"))


def test_every_notebook_carries_the_one_address_and_the_current_install_cell():
    lines = colab.install_lines()
    for path in notebooks():
        nb = json.loads(path.read_text())
        first = "".join(nb["cells"][0]["source"])
        assert colab.colab_url(path.relative_to(ROOT).as_posix()) in first, f"{path}: stale Colab link"
        code = "".join(next(c for c in nb["cells"] if c["cell_type"] == "code")["source"]).split("\n")
        assert code[:len(lines)] == lines, f"{path}: the install cell is not install_lines() (rebuild the notebooks)"
        text = path.read_text()
        for link in re.findall(r"https://colab\.research\.google\.com/github/[^)\s\"]+", text):
            assert link.startswith(colab.colab_url("")), f"{path}: a Colab link elsewhere: {link}"


def test_the_readme_agrees_with_the_address_and_the_name():
    readme = (ROOT / "README.md").read_text()
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        assert colab.colab_url(path.relative_to(ROOT).as_posix()) in readme, f"README lacks the Colab link of {path.name}"
    for link in re.findall(r"https://colab\.research\.google\.com/github/[^)\s]+", readme):
        assert link.startswith(colab.colab_url("")), f"README links elsewhere: {link}"
    owner = colab.REPOSITORY.removeprefix("https://github.com/").split("/")[0]
    for link in re.findall(r"https://github\.com/[\w.-]+/[\w.-]+", readme):  # the course's own, under another address
        if link.split("/")[3] == owner or link.endswith("/" + colab.DISTRIBUTION):
            assert link == colab.REPOSITORY, f"README names another address for the course: {link}"
    assert colab.release_requirement() in readme, f"README does not name the release {colab.release_requirement()}"
    for name in re.findall(r"circuits[-_]course==[\w.]+", readme):
        assert name == colab.release_requirement(), f"README names another version: {name}"


def test_pyproject_names_the_distribution_and_reads_the_version_from_the_package():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["name"] == colab.DISTRIBUTION
    assert "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "tutorial_lib.core.version.VERSION"}
    import tutorial_lib
    assert colab.version() == tutorial_lib.__version__ and Version(tutorial_lib.__version__)


def test_the_address_is_written_in_one_place():
    """Only course/colab.py holds it; notebooks and the README are checked against it above."""
    owner_repo = colab.REPOSITORY.removeprefix("https://github.com/")
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    allowed = {"tutorial_lib/course/colab.py", "README.md"}
    offenders = []
    for f in files:
        path = ROOT / f
        if f in allowed or f.endswith(".ipynb") or not path.is_file() or path.stat().st_size > 2_000_000:
            continue
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            continue
        if owner_repo in text:
            offenders.append(f)
    assert not offenders, f"the repository's address is written outside course/colab.py: {offenders}"
