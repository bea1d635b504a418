"""course.reading: what-you-should-see text, folded answers, and predictions compared with the run."""
from types import SimpleNamespace

from tutorial_lib.course import reading


def shown(fn, *args, **kwargs) -> str:
    assert fn(*args, **kwargs) is None  # nothing returned: a notebook cell does not echo the text a second time
    return reading.LAST[0]

GPT2 = SimpleNamespace(cfg=SimpleNamespace(n_layers=12, d_model=768))
ZOO = SimpleNamespace(cfg=SimpleNamespace(n_layers=4, d_model=128))


def test_see_adds_the_paper_only_on_gpt2_small(capsys):
    assert shown(reading.see, "m0 costs -0.80.", paper="MLPs 8-11.", model=ZOO) == "**What you should see.** m0 costs -0.80."
    out = shown(reading.see, "m0 costs -0.80.", paper="MLPs 8-11.", model=GPT2)
    assert out.endswith("**The paper (GPT-2 small):** MLPs 8-11.")
    assert "What you should see" in capsys.readouterr().out


def test_answer_is_folded():
    out = shown(reading.answer, "Which components does IOI need?", "m0 and a1.h2.")
    assert out.startswith("<details><summary>") and "m0 and a1.h2." in out and out.endswith("</details>")
    assert "Which components does IOI need?" in out


def test_predicted_choice_number_and_set(capsys):
    assert shown(reading.predicted, None, "m0", "key MLP").startswith("✎ key MLP: you did not write down a prediction")
    assert shown(reading.predicted, "m0", "m0", "key MLP").startswith("✔")
    assert shown(reading.predicted, "m3", "m0", "key MLP", why="The early MLP does it.").startswith("✗ key MLP: you predicted m3")
    assert "not one of" in shown(reading.predicted, "m9", "m0", "key MLP", options=["m0", "m1"])
    msg = shown(reading.predicted, 0.5, 0.85, "sufficiency", tolerance=0.1)
    assert msg.startswith("✗") and "off by 0.35" in msg
    assert shown(reading.predicted, 0.8, 0.85, "sufficiency", tolerance=0.1).startswith("✔")
    assert shown(reading.predicted, True, True, "beats random").startswith("✔")
    assert shown(reading.predicted, False, True, "beats random").startswith("✗")
    msg = shown(reading.predicted, {"ioi", "addition"}, {"ioi", "boolean"}, "tasks")
    assert msg.startswith("✗") and "1 of your 2 right" in msg and "missed {boolean}" in msg and "not found: {addition}" in msg
    assert shown(reading.predicted, ["a", "b"], {"b", "a"}, "tasks").startswith("✔")
    tie = shown(reading.predicted, "m1", {"m0", "m1"}, "an MLP that matters")
    assert tie.startswith("✔") and "m1 ties with m0" in tie and "cannot tell them apart" in tie
    assert "ties" not in shown(reading.predicted, "m1", {"m1"}, "an MLP that matters")
    assert shown(reading.predicted, float("nan"), 1.0, "x").startswith("?")
    assert "The early MLP does it." in capsys.readouterr().out
