"""The README's notebook figures are the ones this session's notebook run measured.

``bash scripts/course.sh test`` sets ``TUTORIAL_RECORD``: notebooks 02 and 03 (nbval) record the figures the README
quotes there, and this check -- ordered after every notebook item by ``conftest.py`` -- compares each README block
with its rendering from the run. Rewrite the blocks with ``python scripts/readme_figures.py``.
"""
import json
import os
from pathlib import Path

import pytest

from tutorial_lib.course.record import RECORD_ENV, readme_block, render

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.after_notebooks
@pytest.mark.parametrize("notebook", ["02", "03"])
def test_readme_block_matches_this_runs_figures(notebook):
    folder = os.environ.get(RECORD_ENV)
    if not folder:
        pytest.skip(f"{RECORD_ENV} is not set: the README's test command (bash scripts/course.sh test) sets it and "
                    "runs the notebooks first")
    path = Path(folder) / f"{notebook}.json"
    assert path.exists(), (f"notebook {notebook} recorded no figures in {folder}: did it run in this session "
                           "(pytest ... notebooks/solutions)?")
    block = readme_block((ROOT / "README.md").read_text(), notebook)
    assert block is not None, f"README.md has no <!-- figures:{notebook} --> block"
    want = render(notebook, json.loads(path.read_text()))
    assert block == want, (f"README's notebook-{notebook} figures drifted from this run; run "
                           f"`python scripts/readme_figures.py --from {folder}`.\nREADME:\n{block}\nrun:\n{want}")
