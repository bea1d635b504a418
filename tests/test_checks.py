"""Tests for tutorial_lib.course.checks (the package): every check of every notebook module is imported by
name, so ``checks.check_*`` resolves statically; the notebooks reach them as ``tutorial_lib.checks``."""
import ast
import importlib
import pkgutil
from pathlib import Path

import tutorial_lib
from tutorial_lib.course import checks


def test_every_check_is_imported_by_name():
    init = Path(checks.__file__)
    tree = ast.parse(init.read_text())
    imported = {a.name for n in tree.body if isinstance(n, ast.ImportFrom) for a in n.names}
    assert not [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "attr", "") == "update"]
    for mod in pkgutil.iter_modules(checks.__path__):
        if mod.name.startswith("nb"):
            module = importlib.import_module(f"{checks.__name__}.{mod.name}")
            names = {k for k in vars(module) if k.startswith("check_")}
            assert names and names <= imported, f"{mod.name}: {sorted(names - imported)} not imported in __init__"
            for name in names:
                assert getattr(checks, name) is getattr(module, name)


def test_the_notebooks_reach_the_checks_from_the_package_top():
    assert tutorial_lib.checks is checks
    assert tutorial_lib.checks.check_prob_diff.__module__ == "tutorial_lib.course.checks.nb01"
    assert issubclass(checks.ExerciseError, Exception)


# ------------------------------------------------------------------ compare: say how two tensors differ
import pytest  # noqa: E402
import torch  # noqa: E402

from tutorial_lib.course.checks.common import compare  # noqa: E402


def _x():
    return torch.randn(3, 5, 4, generator=torch.Generator().manual_seed(0)) + 0.5


def test_compare_accepts_a_match_and_keeps_the_count_and_first_value():
    x = _x()
    compare(x.clone(), x, "x")
    compare(x.tolist(), x, "x")  # a nested list is a tensor too
    y = x.clone()
    y[1, 2, 3] += 1.0
    with pytest.raises(checks.ExerciseError, match=r"x: 1 of 60 values differ; e\.g\. at index \(1, 2, 3\)"):
        compare(y, x, "x")


@pytest.mark.parametrize("make, phrase", [
    (lambda x: -x, "sign is flipped"),
    (lambda x: 2 * x, "2 times the expected"),
    (lambda x: x + 0.25, r"off by the same constant \+0\.25"),
    (lambda x: torch.zeros_like(x), "all zeros"),
    (lambda x: x.masked_fill(torch.eye(3, 5, dtype=torch.bool)[:, :, None], float("nan")), "non-finite"),
])
def test_compare_names_a_simple_pattern(make, phrase):
    x = _x()
    with pytest.raises(checks.ExerciseError, match=f"values differ.*{phrase}"):
        compare(make(x), x, "x")


def test_compare_says_where_the_differences_lie():
    x = _x()
    y = x.clone()
    y[:, 4] = 0.0  # one position wrong in every example
    with pytest.raises(checks.ExerciseError, match=r"differences all lie at index 4 of the pos dimension \(dim 1, of size 5\)"):
        compare(y, x, "x", dims=("batch", "pos", "d"))
    z = x * 3 + torch.arange(4.0)  # no simple factor or offset
    z[:, 0] = x[:, 0]  # only position 0 right
    with pytest.raises(checks.ExerciseError, match=r"only index 0 of the pos dimension .* matches"):
        compare(z, x, "x", dims=("batch", "pos", "d"))


@pytest.mark.parametrize("got_shape, phrase", [
    ((3, 4), r"the pos dimension \(dim 1, of size 5\) is missing"),
    ((3, 6, 4), r"the pos dimension \(dim 1\) has 6 entries instead of 5: 1 extra entry"),
    ((3, 3, 4), "2 missing entries"),
    ((3, 5, 1, 4), r"extra dimension 2 of size 1 \(squeeze it"),
    ((5, 3, 4), "different order"),
    ((), "single number"),
])
def test_compare_explains_a_shape_mismatch(got_shape, phrase):
    with pytest.raises(checks.ExerciseError, match=rf"expected shape \(3, 5, 4\), got .* -- .*{phrase}"):
        compare(torch.ones(got_shape), _x(), "x", dims=("batch", "pos", "d"))


def test_compare_names_a_known_wrong_answer_and_computes_it_only_after_a_mismatch():
    x = _x()
    calls = []

    def swapped():
        calls.append(1)
        return x.flip(0)

    compare(x, x, "x", wrong=[("arguments swapped", swapped)])
    assert not calls
    with pytest.raises(checks.ExerciseError, match="^x: arguments swapped$"):
        compare(x.flip(0), x, "x", wrong=[("never this one", x + 1), ("arguments swapped", swapped)])
    assert calls
    # a "wrong" answer equal to the right one never hides the real difference
    with pytest.raises(checks.ExerciseError, match="values differ"):
        compare(x + 1, x, "x", wrong=[("bogus", x.clone())])
    with pytest.raises(checks.ExerciseError, match="returned None"):
        compare(None, x, "x")
