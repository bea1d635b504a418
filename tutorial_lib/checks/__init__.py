"""Inline checks a learner calls right after an exercise: ``checks.check_zero_head_hook(zero_head_hook)``.

Each check runs the learner's function on a small case, compares it with the library's answer, and
either prints a short success line or raises :class:`ExerciseError` saying plainly what is wrong (the
first mismatching value, a shape, a hook left attached). An unfinished exercise -- one that still
raises ``NotImplementedError`` -- gets a reminder instead of a traceback.

One module per notebook (``nb00.py``, ``nb01.py``, ...); every ``check_*`` function of every module is
available here.
"""
import importlib
import pkgutil

from .common import ExerciseError, compare, passed  # noqa: F401

for _mod in pkgutil.iter_modules(__path__):
    if _mod.name.startswith("nb"):
        _m = importlib.import_module(f"{__name__}.{_mod.name}")
        globals().update({k: v for k, v in vars(_m).items() if k.startswith("check_")})
