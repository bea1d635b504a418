"""What is under version control: no working files, nothing named after an issue, notebooks without outputs."""
import json
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def tracked(*patterns: str) -> list[str]:
    try:
        out = subprocess.run(["git", "ls-files", "-z", *patterns], cwd=ROOT, capture_output=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    return [f for f in out.stdout.decode().split("\0") if f and (ROOT / f).exists()]


def test_nothing_tracked_is_named_after_an_issue():
    named = [f for f in tracked() if "issue" in f.lower()]
    assert not named, f"files named after an issue: {named}"


def test_no_working_files_are_tracked():
    """Build state, pilot scripts, patches and manifest drafts stay out of the tree (git ignores .zoo-build/)."""
    working = [f for f in tracked() if f.startswith(".zoo-build/") or f.endswith((".patch", ".orig", ".rej"))
               or f.endswith("PILOTS.rst")]
    assert not working, f"working files under version control: {working}"


def test_versioned_build_state_is_only_for_a_build_in_progress():
    """A zoo build that spans sessions keeps its resume state in zoo-state/<name>/ (docs/zoo.md); once the model
    ships (its manifest entry exists), the state leaves the tree."""
    from tutorial_lib.zoo.store import zoo_names

    state = sorted({f.split("/")[1] for f in tracked() if f.startswith("zoo-state/") and f.count("/") >= 2})
    shipped = [name for name in state if name in zoo_names()]
    assert not shipped, f"build state kept for models that already ship: {shipped}"
    other = [f for f in tracked() if f.startswith("zoo-state/") and not f.endswith(("train_state.pt", "README.md"))]
    assert not other, f"zoo-state/ holds only resume states and its README: {other}"


@pytest.mark.parametrize("path", tracked("*.ipynb"))
def test_committed_notebooks_carry_no_outputs(path):
    nb = json.loads((ROOT / path).read_text())
    with_outputs = [i for i, c in enumerate(nb["cells"]) if c.get("outputs") or c.get("execution_count")]
    assert not with_outputs, f"{path}: cells {with_outputs} carry outputs (rebuild: python -m tutorial_lib.course.exercises build)"
    assert "widgets" not in nb.get("metadata", {}), f"{path} stores widget state"


def test_headless_execution_stores_no_widget_state(tmp_path):
    """``course.sh html`` executes with EXECUTE_OPTS; a notebook showing a widget keeps no widget state that way."""
    import re
    import sys

    nbformat = pytest.importorskip("nbformat")
    pytest.importorskip("ipywidgets")
    opts = re.search(r'^EXECUTE_OPTS="([^"]+)"', (ROOT / "scripts" / "course.sh").read_text(), re.M).group(1).split()
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import ipywidgets\nipywidgets.IntSlider(3)")])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path = tmp_path / "w.ipynb"
    path.write_text(nbformat.writes(nb))
    subprocess.run([sys.executable, "-m", "jupyter", "nbconvert", "--to", "notebook", *opts, "--output", "out.ipynb",
                    str(path)], check=True, capture_output=True, cwd=tmp_path)
    out = json.loads((tmp_path / "out.ipynb").read_text())
    assert out["cells"][0]["outputs"], "the widget cell produced no output"
    assert "widgets" not in out["metadata"], "the executed copy stores widget state"
