"""Where the course lives, and the first lines of every notebook that install it on Colab.

:data:`REPOSITORY` is the one place that holds the repository's address. The exercise builder writes,
from it, the "Open in Colab" link at the top of each notebook and the install lines at the top of its
first code cell (:func:`install_lines`); the README's links are checked against it by a test.

On Colab (or any kernel where ``tutorial_lib`` is missing) those lines run
``pip install -q -c <pins> "tutorial_lib @ git+<REPOSITORY>"``, where the constraints file pins the
torch and numpy already installed, so pip can never replace Colab's CUDA build. Where the course is
installed they do nothing.
"""
from __future__ import annotations

REPOSITORY = "https://github.com/circuits-course/circuits-course"  # the course's public repository
BRANCH = "main"
DISTRIBUTION = "tutorial_lib"
KEEP = ("torch", "numpy")  # never replaced on Colab


def requirement() -> str:
    """The pip requirement that installs the course from its repository (a wheel with its data)."""
    return f"{DISTRIBUTION} @ git+{REPOSITORY}.git@{BRANCH}"


def colab_url(notebook_path: str) -> str:
    """The "Open in Colab" address of a notebook, given its path in the repository."""
    owner_repo = REPOSITORY.removeprefix("https://github.com/")
    return f"https://colab.research.google.com/github/{owner_repo}/blob/{BRANCH}/{notebook_path}"


def badge_markdown(notebook_path: str) -> str:
    # A text link, not the usual badge image: an image would be fetched from the internet every time the
    # notebook is opened (offline learners would see a broken image; the browser test forbids the request).
    return (f"**[Open in Colab]({colab_url(notebook_path)})** — on Colab, run the first code cell: it installs "
            "the course (Colab's own torch is kept).")


def install_lines() -> list[str]:
    """The lines that open each notebook's first code cell (self-contained: the course is not there yet)."""
    keep = ", ".join(repr(p) for p in KEEP)
    return [
        "import importlib.util, os, subprocess, sys, tempfile",
        "",
        "if importlib.util.find_spec(\"tutorial_lib\") is None:  # Colab, or a fresh kernel: install the course first",
        "    from importlib.metadata import version",
        "",
        f"    keep = [f\"{{p}}=={{version(p)}}\" for p in ({keep}) if importlib.util.find_spec(p)]  # never replace these",
        "    pins = os.path.join(tempfile.gettempdir(), \"course-keep.txt\")",
        "    open(pins, \"w\").write(\"\\n\".join(keep) + \"\\n\")",
        f"    subprocess.run([sys.executable, \"-m\", \"pip\", \"install\", \"-q\", \"-c\", pins, {requirement()!r}], check=True)",
        "",
    ]
