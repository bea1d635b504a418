"""How much a learner reads (tutorial_lib.course.length, issue 50): every learner notebook keeps each paragraph within
MAX_PARAGRAPH words, and its visible markdown plus the readings its run printed within MAX_WORDS."""
from pathlib import Path

import pytest

from tutorial_lib.course import length
from tutorial_lib.course.length import MAX_PARAGRAPH, MAX_WORDS, long_paragraphs, markdown_words, reading_words, words

ROOT = Path(__file__).resolve().parents[1]
LEARNER = sorted((ROOT / "notebooks").glob("0?_*.ipynb"))


def test_words_and_paragraphs_are_counted_as_documented():
    assert words("The `f(C)` of a5.h1 is <b>0.91</b>, isn't it?") == 11  # The f C of a5 h1 is 0 91 isn't it
    nb = {"cells": [{"cell_type": "markdown", "source": "one two\n\nthree\n\n| a | b |\n| 1 | 2 |\n\n* x y\n* z"},
                    {"cell_type": "markdown", "source": ["<details><summary>Hint</summary>\n\n", "w " * 130, "\n</details>"]}]}
    counts = markdown_words(nb)
    assert (counts.visible, counts.folded) == (10, 131)
    assert [n for n, _ in long_paragraphs(nb)] == [130]  # a folded paragraph keeps the limit too
    assert long_paragraphs(nb, limit=200) == []
    assert [p for p in length.paragraphs("* a b\n* c\n1. d")] == ["* a b", "* c", "1. d"]


def test_reading_words_leave_folded_answers_out(tmp_path):
    log = tmp_path / "r.jsonl"
    log.write_text('{"kind": "see", "text": "four words right here"}\n{"kind": "answer", "text": "not counted"}\n'
                   '{"kind": "predicted", "text": "two more"}\n')
    assert reading_words(log) == 6


@pytest.mark.parametrize("path", LEARNER, ids=lambda p: p.stem)
def test_no_paragraph_runs_long(path):
    long = long_paragraphs(path)
    assert not long, f"{path.stem}: paragraphs over {MAX_PARAGRAPH} words (words, start): {long}"


@pytest.mark.parametrize("path", LEARNER, ids=lambda p: p.stem)
def test_markdown_fits_the_budget(path):
    counts = markdown_words(path)
    assert counts.visible <= MAX_WORDS, (f"{path.stem}: {counts.visible} words of visible markdown (limit {MAX_WORDS}, "
                                         "readings included): fold background into <details> or cut")


@pytest.mark.after_notebooks
@pytest.mark.parametrize("path", LEARNER, ids=lambda p: p.stem)
def test_markdown_and_readings_fit_the_budget(path):
    """With the readings the zoo run of the solution notebook printed (the README's test command logs them)."""
    from conftest import readings_file

    log = readings_file("zoo", path.stem)
    if log is None:
        pytest.skip("TUTORIAL_READINGS is not set: the README's test command (bash scripts/course.sh test) sets it")
    assert log.exists(), f"no readings logged by this session's run of {path.stem}"
    total = markdown_words(path).visible + reading_words(log)
    assert total <= MAX_WORDS, f"{path.stem}: {total} words of markdown and readings (limit {MAX_WORDS})"


def test_section_times_are_read_from_the_table_and_the_headers():
    from tutorial_lib.course.length import section_times

    nb = {"cells": [{"cell_type": "markdown", "source": "| section | time |\n| --- | --- |\n| 1. Setup | 5 min |\n"
                                                        "| 2. Work (ex. 1) | — | 20 min (cached after) |\n\n"
                                                        "| exercise | time |\n| --- | --- |\n| 1. `f` | 7 min |"},
                    {"cell_type": "markdown", "source": "## 1. Setup (~5 min)"},
                    {"cell_type": "markdown", "source": "## 2. Work (~25 min)\n\ntext"}]}
    assert section_times(nb) == {1: (5, 5), 2: (20, 25)}


@pytest.mark.parametrize("path", LEARNER, ids=lambda p: p.stem)
def test_time_estimates_agree_between_the_table_and_the_headers(path):
    from tutorial_lib.course.length import section_times

    times = section_times(path)
    assert times, f"{path.stem}: no contents table with section times"
    differ = {k: v for k, v in times.items() if v[0] != v[1]}
    assert not differ, f"{path.stem}: (table, header) minutes differ for sections {differ}"
