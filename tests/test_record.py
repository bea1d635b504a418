"""tutorial_lib.course.record: figures recorded by the notebooks, rendered into the README's blocks."""
import json

import pytest

from tutorial_lib.course import record as R

FIG02 = {"model": "zoo-x", "n": 8, "k": 0.1, "p": 95, "seeds": 5, "n_performed": 1,
         "tasks": {"ioi": {"clean": 1.0, "reuse": 0.25, "random_reuse": 0.0, "shared": ["m0"], "drop": 0.9,
                           "control_drop": 0.1, "control": "type", "p": 0.0011}},
         "modes": {"zero": ["ioi"], "mean": []}}


def test_record_merges_and_writes_json_when_asked(tmp_path, monkeypatch):
    monkeypatch.setattr(R, "FIGURES", {})
    monkeypatch.delenv(R.RECORD_ENV, raising=False)
    R.record("02", model="a")
    assert not list(tmp_path.iterdir())
    monkeypatch.setenv(R.RECORD_ENV, str(tmp_path))
    R.record("02", n=3)
    assert json.loads((tmp_path / "02.json").read_text()) == {"model": "a", "n": 3}
    with pytest.raises(ValueError, match="unknown notebook '07'"):
        R.record("07", x=1)
    with pytest.raises(TypeError):
        R.record("02", bad=object())  # only plain JSON values


def test_render_and_update_readme():
    text = R.render("02", FIG02)
    assert "| ioi | 1.00 | 0.25 | 0.00 | m0 | 0.90 | 0.10 | type | 0.0011 |" in text
    assert "zero: 1 of 1 performed tasks; mean: 0 of 1" in text
    assert "P = 95, zero ablation" in text  # no setting named: nothing in brackets
    assert "P = 95 (the teaching setting), zero" in R.render("02", {**FIG02, "setting": "the teaching setting"})
    readme = "intro\n<!-- figures:02 -->\nold numbers\n<!-- /figures:02 -->\nrest\n"
    new = R.update_readme(readme, "02", FIG02)
    assert R.readme_block(new, "02") == text and new.startswith("intro\n") and new.endswith("rest\n")
    with pytest.raises(ValueError, match="no <!-- figures:03 -->"):
        R.update_readme(readme, "03", {})


def test_render_03_names_the_greater_than_overlap():
    f = {"model": "zoo-y", "probe": 64, "threshold": 50.0, "heads": ["a2.h2", "a3.h1"], "n_heads": 32, "best": 300.0,
         "attention_min": 0.7, "attention_max": 0.9, "uniform_pass": 0, "bos_heads": []}
    assert "greater-than" not in R.render("03", f)
    text = R.render("03", {**f, "greater_than_circuit": ["a2.h2", "a3.h0"], "greater_than_shared": ["a2.h2"],
                           "greater_than_prompts": 50})
    assert ("1 of the 2 filtered heads are also heads of notebook 01's greater-than circuit (a2.h2, a3.h0; its search "
            "on 50 prompts)") in text


def test_times_render_and_merge(tmp_path, monkeypatch):
    monkeypatch.setenv(R.RECORD_ENV, str(tmp_path))
    R.record_time("00", 17.6, "zoo", "zoo-x")
    R.record_time("01", 300.2, "zoo", "zoo-x")
    f = json.loads((tmp_path / "times.json").read_text())
    assert f == {"models": {"zoo": "zoo-x"}, "zoo": {"00": 18, "01": 300}}
    text = R.render("times", {**f, "gpt2": {"00": 50.1}})
    assert "| [00 start here](notebooks/00_start_here.ipynb) |" in text and "| 18 s | not measured | 50 s | not measured |" in text
    assert "| 5.0 min | not measured | not measured | not measured |" in text
    assert "| loads no model | loads no model |" in text  # notebook 05 builds its own models
    assert "| 18 s | not measured | 50 s | 3.4 min |" in R.render("times", {**f, "gpt2": {"00": 50.1}, "gpu": {"00": 204}})
    R.record_slow_cells("01", [("3", 31.4), ("3", 5.0), ("5.2", 20.6)])  # only cells over 20 s are kept
    R.record_slow_cells("00", [("top", 3.0)])
    cells = json.loads((tmp_path / "times.json").read_text())
    assert cells["slow"] == {"zoo": {"01": [["3", 31], ["5.2", 21]], "00": []}}
    table = R.render("times", cells)
    assert "| 18 s | none | not measured |" in table and "| 5.0 min | §3: 31 s; §5.2: 21 s | not measured |" in table
    R.record_slow_cells("01", [("4", 25.0)])  # a notebook's new run replaces its list
    assert json.loads((tmp_path / "times.json").read_text())["slow"]["zoo"]["01"] == [["4", 25]]
    assert R.times_figures(text) == {**f, "gpt2": {"00": 50.1}}
    readme = "a\n<!-- figures:times -->\n" + text + "\n<!-- /figures:times -->\nb\n"
    new = R.update_readme(readme, "times", {"zoo": {"02": 99}})  # a partial run keeps the other figures
    assert R.times_figures(R.readme_block(new, "times"))["zoo"] == {"00": 18, "01": 300, "02": 99}
