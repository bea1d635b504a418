"""Where the course lives, what it is called, and the first lines of every notebook that install it on Colab.

:data:`REPOSITORY` is the one place that holds the repository's address, and :data:`DISTRIBUTION` the one place
that holds the name a learner installs (``pip install circuits-course``; the import name stays ``tutorial_lib``;
the version is ``tutorial_lib.__version__``, which ``pyproject.toml`` reads). The exercise builder writes, from
them, the "Open in Colab" link at the top of each notebook and the install lines at the top of its first code
cell (:func:`install_lines`); ``tests/test_colab_install.py`` fails if a notebook, the README or any other file
disagrees with them.

On Colab (or any kernel where ``tutorial_lib`` is missing) those lines

1. write a constraints file that pins *every* distribution already installed in the kernel's environment
   (``importlib.metadata.distributions()``, at its exact version), so pip can only add packages, never
   replace one: upgrading an imported package under a running Colab kernel (numpy, ipywidgets, ...) is what
   breaks a runtime;
2. ask pip's resolver first (``pip install --dry-run``) for the pinned release from the package index, and,
   when the index does not have it, for the repository's ``main`` (the git URL, a build on every run);
3. if no resolution exists, print which installed package stands in the way and what to do, install
   nothing, and stop the cell (``SystemExit``: one line, no traceback wall);
4. else install, and say what was added and that the packages already there are unchanged.

Where the course is installed they do nothing.
"""
from __future__ import annotations

REPOSITORY = "https://github.com/circuits-course/circuits-course"  # the course's public repository (placeholder)
DISTRIBUTION = "circuits-course"  # the name on the package index; the import name is tutorial_lib
BRANCH = "main"


def version() -> str:
    """The course's version (:mod:`tutorial_lib.core.version`, re-exported as ``tutorial_lib.__version__``;
    ``pyproject.toml`` reads the same line)."""
    from ..core.version import VERSION

    return VERSION


def release_requirement() -> str:
    """The pip requirement of this version of the course from the package index (a wheel with its data)."""
    return f"{DISTRIBUTION}=={version()}"


def git_requirement() -> str:
    """The fallback: the course built from its repository (when the index does not have the release)."""
    return f"{DISTRIBUTION} @ git+{REPOSITORY}.git@{BRANCH}"


def requirement() -> str:
    """The requirement the install cell tries first (the release on the package index)."""
    return release_requirement()


def colab_url(notebook_path: str) -> str:
    """The "Open in Colab" address of a notebook, given its path in the repository."""
    owner_repo = REPOSITORY.removeprefix("https://github.com/")
    return f"https://colab.research.google.com/github/{owner_repo}/blob/{BRANCH}/{notebook_path}"


def badge_markdown(notebook_path: str) -> str:
    # A text link, not the usual badge image: an image would be fetched from the internet every time the
    # notebook is opened (offline learners would see a broken image; the browser test forbids the request).
    return (f"**[Open in Colab]({colab_url(notebook_path)})** — on Colab, run the first code cell: it installs "
            f"the course (`{release_requirement()}`) beside Colab's own packages and replaces none of them.")


# The cell's text. Self-contained: the course is not importable yet. RELEASE, GIT, RELEASE_NAME and ISSUES are filled in.
_CELL = '''\
import importlib, importlib.util, os, re, subprocess, sys, tempfile

if importlib.util.find_spec("tutorial_lib") is None:  # Colab, or a fresh kernel: install the course first
    from importlib.metadata import distributions

    def installed():  # every distribution in this environment, by normalised name, at its exact version
        found = {}
        for d in distributions():
            name, ver = d.metadata["Name"], d.version
            # versions pip cannot read (a few old system packages) cannot be pinned, so they are left out
            if name and ver and re.fullmatch(r"(\\d+!)?\\d+(\\.\\d+)*((a|b|rc)\\d+)?(\\.post\\d+)?(\\.dev\\d+)?(\\+[a-z0-9.]+)?", ver, re.I):
                found.setdefault(re.sub(r"[-_.]+", "-", name).lower(), ver)  # the first on sys.path is the one imported
        return found

    # Pin everything already here: pip may only add packages. Replacing one under a running kernel
    # (Colab's torch, numpy, ipywidgets, ...) is what breaks a runtime.
    before = installed()
    pins = os.path.join(tempfile.gettempdir(), "course-pins.txt")
    with open(pins, "w") as f:
        f.writelines(f"{n}=={v}\\n" for n, v in sorted(before.items()))
    pip = [sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "-c", pins]
    for want in [RELEASE, GIT]:  # the release, else the repository
        check = subprocess.run(pip + ["--dry-run", want], capture_output=True, text=True)
        if check.returncode == 0 or "ResolutionImpossible" in check.stderr:
            break
    if check.returncode != 0:  # ask the resolver before installing anything
        why = [l.strip() for l in check.stderr.splitlines() if " depends on " in l or "(constraint)" in l]
        print("The course cannot be installed here without replacing a package this runtime already has:" if why
              else "pip found no way to install the course:", *(why or check.stderr.strip().splitlines()[-12:]), sep="\\n    ")
        print("Nothing was installed. What to do: install it unpinned, `%pip install RELEASE_NAME`, then restart the "
              "runtime (Runtime > Restart session), accepting that the packages above are replaced; and tell us "
              "at ISSUES with the lines above.")
        raise SystemExit("The course was not installed: see the lines above.")
    print(*[l for l in check.stdout.splitlines() if l.startswith("Would install")] or ["installing " + want])
    done = subprocess.run(pip + ["-q", want], capture_output=True, text=True)
    if done.returncode != 0:
        print(done.stdout[-3000:], done.stderr[-3000:], sep="\\n")
        raise SystemExit("pip could not install the course: see its lines above.")
    importlib.invalidate_caches()
    after = installed()
    changed = sorted(f"{n} {v} -> {after.get(n)}" for n, v in before.items() if after.get(n) != v)
    print(f"Installed {want}; the {len(before)} packages already here are unchanged." if not changed else
          f"Installed {want}, but these changed: {changed}; restart the runtime (Runtime > Restart session).")
'''


def install_lines() -> list[str]:
    """The lines that open each notebook's first code cell (self-contained: the course is not there yet)."""
    cell = (_CELL.replace("RELEASE_NAME", release_requirement()).replace("RELEASE", repr(release_requirement()))
            .replace("GIT", repr(git_requirement())).replace("ISSUES", f"{REPOSITORY}/issues"))
    return cell.splitlines() + [""]
