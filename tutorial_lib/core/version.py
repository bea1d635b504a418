"""The course's version: one line, read by ``pyproject.toml`` (``tool.setuptools.dynamic``), re-exported as
``tutorial_lib.__version__`` and used by the Colab install cell (:mod:`tutorial_lib.course.colab`)."""
VERSION = "0.1.0"
