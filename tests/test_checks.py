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
