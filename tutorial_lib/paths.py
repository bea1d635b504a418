"""Where the course keeps its files: ``data/`` in the repository, a cache under the user's home."""
from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def data_dir() -> Path:
    """The repository's ``data/`` folder (override with ``TUTORIAL_DATA``)."""
    return Path(os.environ.get("TUTORIAL_DATA", REPO / "data"))


def zoo_dir() -> Path:
    return data_dir() / "zoo"


def cache_dir() -> Path:
    """A writable cache (``TUTORIAL_CACHE``, else ``~/.cache/tutorial_lib``)."""
    path = Path(os.environ.get("TUTORIAL_CACHE", Path.home() / ".cache" / "tutorial_lib"))
    path.mkdir(parents=True, exist_ok=True)
    return path
