"""Where the course keeps its files: its data (zoo weights, GPT-2's BPE files) and a cache under the home.

The data ships in two layouts, and :func:`data_dir` finds it in either:

* installed from a wheel (``pip install``, Colab): inside the package, ``tutorial_lib/data/`` (the wheel
  maps the repository's ``data/`` there as package data; see ``pyproject.toml``);
* a source checkout (``pip install -e .``, or on ``PYTHONPATH``): the repository's ``data/``.
"""
from __future__ import annotations

import os
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]  # the tutorial_lib/ folder (this file is tutorial_lib/core/paths.py)
REPO = PACKAGE.parent  # the repository root, in a source checkout
PACKAGED_DATA = PACKAGE / "data"
CHECKOUT_DATA = REPO / "data"


def data_dir() -> Path:
    """The course's data folder: ``TUTORIAL_DATA`` if set, else the packaged copy, else the checkout's."""
    if os.environ.get("TUTORIAL_DATA"):
        return Path(os.environ["TUTORIAL_DATA"])
    if (PACKAGED_DATA / "zoo" / "manifest.json").exists():
        return PACKAGED_DATA
    if (CHECKOUT_DATA / "zoo" / "manifest.json").exists():
        return CHECKOUT_DATA
    raise FileNotFoundError(
        f"the course's data folder is missing: neither {PACKAGED_DATA} (an installed wheel) nor {CHECKOUT_DATA} "
        "(a source checkout) holds zoo/manifest.json. Reinstall the course (pip install <wheel or git URL>), "
        "or set TUTORIAL_DATA to a copy of the repository's data/ folder.")


def zoo_dir() -> Path:
    return data_dir() / "zoo"


def gpt2_dir() -> Path:
    """GPT-2's BPE files (``encoder.json``, ``vocab.bpe``)."""
    return data_dir() / "gpt2"


def cache_dir() -> Path:
    """A writable cache (``TUTORIAL_CACHE``, else ``~/.cache/tutorial_lib``)."""
    path = Path(os.environ.get("TUTORIAL_CACHE", Path.home() / ".cache" / "tutorial_lib"))
    path.mkdir(parents=True, exist_ok=True)
    return path
