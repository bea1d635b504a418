"""Build the course website: ``bash scripts/course.sh site`` (or ``python scripts/build_site.py``).

1. Stage a source folder, ``build/site-src/``: the README as ``index.md``, ``docs/*.md`` as ``docs/``, each solution
   notebook as ``notebooks/NN_*.ipynb`` -- the paths the README and the docs already link to, so their relative
   links resolve as written. A link to something the site does not carry (a notebook left out of a subset, a file
   of the repository) becomes a link to the repository. Each notebook gets a hidden first cell
   (``site/kernel_setup.py``) that draws plotly figures without plotly.js and gives each panel a static snapshot.
   Files are rewritten only when their text changed, so Sphinx re-reads only what changed.
2. Run Sphinx (``site/conf.py``, MyST-NB): notebooks are executed on the offline default model through
   jupyter-cache, keyed on each notebook's code (``build/site-cache/``), so a rebuild with nothing changed
   executes nothing.
3. Check every page: at most 5 MB, plotly.js referenced at most once and never inlined, no widget state.

Options: ``--notebooks 00,05`` (or ``COURSE_SITE_NOTEBOOKS``) builds a subset; ``--out``, ``--cache``; ``--fresh``
empties the execution cache first. ``TUTORIAL_SIZE`` is passed on (and is part of the cache key).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONF_DIR = ROOT / "site"
PAGE_LIMIT = 5 * 1024 * 1024
# What the notebooks are executed under; each is also written into the hidden cell, so it is part of the cache key.
EXEC_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TUTORIAL_CLAIMS": "report"}
DROP_ENV = ("TUTORIAL_RECORD", "TUTORIAL_READINGS", "TUTORIAL_READINGS_FILE")  # a site build records nothing
LINK = re.compile(r"(\]\()([^)\s]+)(\))")


def repository() -> tuple[str, str]:
    """The repository's address and branch, from ``tutorial_lib/course/colab.py`` (read, not imported: importing
    the package would load torch for two strings)."""
    text = (ROOT / "tutorial_lib" / "course" / "colab.py").read_text()
    repo = re.search(r'^REPOSITORY = "([^"]+)"', text, re.M).group(1)
    branch = re.search(r'^BRANCH = "([^"]+)"', text, re.M).group(1)
    return repo, branch


def pick_notebooks(subset: str | None) -> list[Path]:
    every = sorted((ROOT / "notebooks" / "solutions").glob("[0-9][0-9]_*.ipynb"))
    if not subset:
        return every
    want = [s.strip() for s in subset.replace(" ", ",").split(",") if s.strip()]
    chosen = [p for p in every if p.name[:2] in want or p.stem in want]
    unknown = [w for w in want if not any(p.name[:2] == w or p.stem == w for p in every)]
    if unknown:
        raise SystemExit(f"--notebooks: no solution notebook {unknown}; there are {[p.name[:2] for p in every]}")
    return chosen


def staged_name(repo_path: str, notebooks: set[str]) -> str | None:
    """Where a repository file is in the staged source, or None when the site does not carry it."""
    if repo_path == "README.md":
        return "index.md"
    if re.fullmatch(r"docs/[^/]+\.md", repo_path):
        return repo_path if (ROOT / repo_path).exists() else None
    m = re.fullmatch(r"notebooks/(?:solutions/)?([0-9]{2}_[^/]+\.ipynb)", repo_path)
    if m and m.group(1) in notebooks:
        return f"notebooks/{m.group(1)}"
    return None


def rewrite_links(text: str, repo_file: str, notebooks: set[str], repo: str, branch: str) -> str:
    """Point each relative link of ``repo_file``'s text at the staged page, or at the repository."""
    here = Path(staged_name(repo_file, notebooks) or repo_file).parent

    def fix(m: re.Match) -> str:
        target = m.group(2)
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I) or target.startswith("#"):
            return m.group(0)
        path, _, anchor = target.partition("#")
        repo_path = os.path.normpath(Path(repo_file).parent / path).replace(os.sep, "/")
        staged = staged_name(repo_path, notebooks)
        if staged is not None:
            new = os.path.relpath(staged, here).replace(os.sep, "/") + (f"#{anchor}" if anchor else "")
        else:
            kind = "tree" if (ROOT / repo_path).is_dir() else "blob"
            new = f"{repo}/{kind}/{branch}/{repo_path}" + (f"#{anchor}" if anchor else "")
        return m.group(1) + new + m.group(3)

    return LINK.sub(fix, text)


def first_cell(name: str, env: dict, repo: str, branch: str) -> dict:
    owner_repo = repo.removeprefix("https://github.com/")
    colab = f"https://colab.research.google.com/github/{owner_repo}/blob/{branch}/notebooks/solutions/{name}"
    settings = {k: env[k] for k in ("TUTORIAL_MODEL", "TUTORIAL_SIZE", *EXEC_ENV) if env.get(k)}
    code = (CONF_DIR / "kernel_setup.py").read_text().replace("COLAB_URL = None", f"COLAB_URL = {colab!r}")
    head = ("# executed for the course website under: " + json.dumps(settings, sort_keys=True) + "\n"
            "import os as _os\n_os.environ.update(" + repr(settings) + ")\n")
    return {"cell_type": "code", "execution_count": None, "id": "course-site-setup",
            "metadata": {"tags": ["remove-cell"]}, "outputs": [], "source": head + code}


def write_if_changed(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def stage(src: Path, notebooks: list[Path], env: dict) -> list[str]:
    """Write the site's source folder; return the staged files (relative names)."""
    repo, branch = repository()
    names = {p.name for p in notebooks}
    files: dict[str, str] = {}
    readme = (ROOT / "README.md").read_text()
    # the order of the README's "Read more" list (each page's last link there), then any page it does not link
    order = lambda p: (readme.rfind(f"(docs/{p.name})") % (len(readme) + 1), p.name)
    toc_docs = sorted((ROOT / "docs").glob("*.md"), key=order)
    for p in toc_docs:
        files[f"docs/{p.name}"] = rewrite_links(p.read_text(), f"docs/{p.name}", names, repo, branch)
    for p in notebooks:
        nb = json.loads(p.read_text())
        for cell in nb["cells"]:
            if cell["cell_type"] == "markdown":
                text = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
                cell["source"] = rewrite_links(text, f"notebooks/solutions/{p.name}", names, repo, branch)
        nb["cells"].insert(0, first_cell(p.name, env, repo, branch))
        files[f"notebooks/{p.name}"] = json.dumps(nb, indent=1, ensure_ascii=False) + "\n"
    index = rewrite_links(readme, "README.md", names, repo, branch)
    toc = ["", "```{toctree}", ":hidden:", ":caption: Notebooks", ""] + [f"notebooks/{p.stem}" for p in notebooks]
    toc += ["```", "", "```{toctree}", ":hidden:", ":caption: Read more", ""] + [f"docs/{p.stem}" for p in toc_docs]
    files["index.md"] = index.rstrip("\n") + "\n" + "\n".join(toc + ["```", ""])
    for rel, text in files.items():
        write_if_changed(src / rel, text)
    for old in [p for p in src.rglob("*") if p.is_file()]:  # what an earlier build staged and this one does not
        if old.relative_to(src).as_posix() not in files:
            old.unlink()
    return sorted(files)


def check_pages(out: Path) -> list[dict]:
    """Size, plotly.js references and figures of every page; raises SystemExit when a page breaks a rule."""
    rows, bad = [], []
    for page in sorted(out.rglob("*.html")):
        if "_static" in page.parts:
            continue
        html = page.read_text(errors="replace")
        row = {"page": page.relative_to(out).as_posix(), "bytes": len(html.encode()),
               "plotly_js": len(re.findall(r"<script[^>]+src=\"[^\"]*plotly[^\"]*\.js", html)),
               "figures": html.count('class="plotly-graph-div"'),
               "inline_plotly_js": "Plotly.register" in html or "plotly.js v" in html,
               "widget_state": "application/vnd.jupyter.widget-state+json" in html}
        rows.append(row)
        if row["bytes"] > PAGE_LIMIT or row["plotly_js"] > 1 or row["inline_plotly_js"] or row["widget_state"]:
            bad.append(row)
    if bad:
        raise SystemExit(f"[site] pages break the rules (at most 5 MB, plotly.js at most once, not inlined, no "
                         f"widget state): {bad}")
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--notebooks", default=os.environ.get("COURSE_SITE_NOTEBOOKS"),
                    help="comma-separated notebook numbers (default: all), e.g. 00,05")
    ap.add_argument("--out", type=Path, default=ROOT / "build" / "site")
    ap.add_argument("--cache", type=Path, default=Path(os.environ.get("COURSE_SITE_CACHE", ROOT / "build" / "site-cache")))
    ap.add_argument("--fresh", action="store_true", help="empty the execution cache first")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    out = args.out.resolve()
    src, doctrees = out.parent / f"{out.name}-src", out.parent / f"{out.name}-doctrees"
    cache = args.cache.resolve()
    if args.fresh and cache.exists():
        shutil.rmtree(cache)

    env = {k: v for k, v in os.environ.items() if k not in DROP_ENV}
    env.update(EXEC_ENV, COURSE_SITE_CACHE=str(cache), MPLBACKEND="Agg")
    env.setdefault("TUTORIAL_MODEL", "auto")
    env.setdefault("PYTHONWARNINGS", "ignore::DeprecationWarning")

    t0 = time.time()
    notebooks = pick_notebooks(args.notebooks)
    staged = stage(src, notebooks, env)
    manifest = doctrees / "course-site-pages.json"  # kept beside Sphinx's own state, not published
    if manifest.exists() and json.loads(manifest.read_text()) != staged:  # pages added or removed: build anew
        shutil.rmtree(out, ignore_errors=True)
        shutil.rmtree(doctrees, ignore_errors=True)
    cmd = [sys.executable, "-m", "sphinx", "-b", "html", "-j", "1", "-c", str(CONF_DIR), "-d", str(doctrees),
           str(src), str(out)] + (["-q"] if args.quiet else [])
    print(f"[site] {len(notebooks)} notebook(s), {len(staged) - len(notebooks)} pages of text; executions cached in "
          f"{cache}", flush=True)
    code = subprocess.call(cmd, env=env, cwd=ROOT)
    if code != 0:
        print(f"[site] sphinx-build failed (exit {code})", file=sys.stderr)
        return code
    manifest.parent.mkdir(parents=True, exist_ok=True)
    manifest.write_text(json.dumps(staged))
    rows = check_pages(out)
    largest = max(rows, key=lambda r: r["bytes"])
    print(f"[site] {len(rows)} pages in {out} ({time.time() - t0:.1f} s); largest {largest['page']} "
          f"{largest['bytes'] / 1e6:.2f} MB; plotly.js loaded by {sum(r['plotly_js'] for r in rows)} page(s), once each")
    return 0


if __name__ == "__main__":
    sys.exit(main())
