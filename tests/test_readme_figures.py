"""The documentation's notebook figures are the ones this session's notebook run measured.

``bash scripts/course.sh test`` sets ``TUTORIAL_RECORD``: notebooks 02 and 03 (nbval) record the figures the zoo page
quotes, ``tests/conftest.py`` records every notebook's wall time for the README's course table, and these checks --
ordered after every notebook item by ``conftest.py`` -- compare each block with its rendering from the run. Rewrite
the blocks with ``python scripts/readme_figures.py --from build/figures``.
"""
import importlib.util
import json
import os
from pathlib import Path

import pytest

from tutorial_lib.course.record import RECORD_ENV, claims_for, readme_block, render, times_figures

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("readme_figures", ROOT / "scripts" / "readme_figures.py")
readme_figures = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(readme_figures)
BLOCKS = readme_figures.BLOCKS
TIME_FACTOR = 3  # a notebook's time in the README may differ from this run's by this factor (machines differ)


def _recorded(record: str) -> Path:
    folder = os.environ.get(RECORD_ENV)
    if not folder:
        pytest.skip(f"{RECORD_ENV} is not set: the README's test command (bash scripts/course.sh test) sets it and "
                    "runs the notebooks first")
    path = Path(folder) / record
    assert path.exists(), (f"nothing recorded in {path}: did the notebooks run in this session "
                           "(pytest ... notebooks/solutions)?")
    return path


@pytest.mark.parametrize("block", sorted(BLOCKS))
def test_every_block_is_in_its_file(block):
    doc = BLOCKS[block][0]
    assert readme_block((ROOT / doc).read_text(), block) is not None, f"{doc} has no <!-- figures:{block} --> block"


def test_the_course_table_is_its_own_figures_rendered():
    """The course table's last line keeps what it was written from; the table is exactly that, rendered."""
    block = readme_block((ROOT / "README.md").read_text(), "times")
    figures = times_figures(block)
    assert figures.get("zoo"), "the README's course table records no offline time"
    assert block == render("times", figures), "the course table was edited by hand: run scripts/readme_figures.py"


@pytest.mark.after_notebooks
@pytest.mark.parametrize("notebook", ["02", "03"])
def test_zoo_page_block_matches_this_runs_figures(notebook):
    path = _recorded(f"{notebook}.json")
    doc = BLOCKS[notebook][0]
    block = readme_block((ROOT / doc).read_text(), notebook)
    want = render(notebook, json.loads(path.read_text()))
    assert block == want, (f"{doc}'s notebook-{notebook} figures drifted from this run; run "
                           f"`python scripts/readme_figures.py --from {path.parent}`.\n{doc}:\n{block}\nrun:\n{want}")


@pytest.mark.after_notebooks
def test_course_table_times_are_this_runs_within_a_factor():
    run = json.loads(_recorded("times.json").read_text())
    shown = times_figures(readme_block((ROOT / "README.md").read_text(), "times"))
    if run.get("models", {}).get("zoo") != shown.get("models", {}).get("zoo"):
        pytest.fail(f"the README's times are for {shown.get('models')}, this run's for {run.get('models')}; run "
                    "`python scripts/readme_figures.py --from build/figures`")
    far = {nb: (shown["zoo"].get(nb), s) for nb, s in run.get("zoo", {}).items()
           if shown["zoo"].get(nb) is None or not 1 / TIME_FACTOR <= s / max(shown["zoo"][nb], 1) <= TIME_FACTOR}
    assert not far, (f"notebook times (README, this run) more than {TIME_FACTOR}x apart: {far}; run "
                     "`python scripts/readme_figures.py --from build/figures`")


@pytest.mark.after_notebooks
def test_course_table_slow_cells_are_this_runs():
    """The cells listed as over 20 s are this run's, up to the factor machines differ by: a cell this run measured
    over 3 x 20 s is listed, and a cell listed at over 3 x 20 s took over 20 s here."""
    from tutorial_lib.course.record import SLOW_CELL_S

    run = json.loads(_recorded("times.json").read_text()).get("slow", {}).get("zoo", {})
    shown = times_figures(readme_block((ROOT / "README.md").read_text(), "times")).get("slow", {}).get("zoo", {})
    assert run, "this run recorded no per-cell times (tests/conftest.py times each nbval cell)"
    clear = SLOW_CELL_S * TIME_FACTOR
    missing = {nb: sorted({sec for sec, t in cells if t > clear} - {sec for sec, _ in shown.get(nb, [])})
               for nb, cells in run.items()}
    stale = {nb: sorted({sec for sec, t in shown.get(nb, []) if t > clear} - {sec for sec, _ in cells})
             for nb, cells in run.items()}
    assert not any(missing.values()) and not any(stale.values()), (
        f"slow cells drifted (missing from the README: {missing}; listed but fast here: {stale}); run "
        "`python scripts/readme_figures.py --from build/figures`")


@pytest.mark.after_notebooks
def test_claims_block_matches_this_runs_outcomes():
    """The README's counts of holds / fails / not testable per notebook are this run's, on the offline default."""
    from tutorial_lib.zoo.loading import default_zoo_model

    path = _recorded("claims.json")
    want = render("claims", claims_for(json.loads(path.read_text()), default_zoo_model()))
    block = readme_block((ROOT / "README.md").read_text(), "claims")
    assert block == want, (f"the README's claims block drifted from this run; run `python scripts/readme_figures.py "
                           f"--from {path.parent}`.\nREADME:\n{block}\nrun:\n{want}")
