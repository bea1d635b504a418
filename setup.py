"""Build hook: wheels carry the repository's ``data/`` inside the package, as ``tutorial_lib/data/``.

The sdist carries ``data/`` (``MANIFEST.in``), so the wheel ``python -m build`` builds from it has it too
(``tests/test_packaging.py`` builds the wheel that way). Everything else about the package (its name,
``circuits-course``; its version, ``tutorial_lib.__version__``) is declared in ``pyproject.toml``. An editable install (``pip install
-e .``) copies nothing: a source checkout reads ``data/`` where it is (``tutorial_lib.core.paths.data_dir``).
"""
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

DATA = Path(__file__).resolve().parent / "data"


class BuildPyWithData(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        target = Path(self.build_lib) / "tutorial_lib" / "data"
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(DATA, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.tmp*"))


setup(cmdclass={"build_py": BuildPyWithData})
