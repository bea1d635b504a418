"""The course website (``bash scripts/course.sh site``), on a fast subset, read in a real browser; and its Pages workflow.

The subset is notebooks 00 and 05 with every page of ``docs/`` and the README, built by ``scripts/build_site.py``
into a temporary folder at ``TUTORIAL_SIZE=quick`` with its own execution cache. It is built twice: the second
build, into a fresh folder with the same cache, must execute no notebook. The first is served on localhost and
every page opened in the browser the JupyterLab test uses (Debian's Chromium through playwright); each page must
load with no console error and no request leaving localhost, draw every plotly figure and formula it holds, load plotly.js at
most once (the site's one copy), stay within 5 MB, and carry no widget state; every internal link (file and anchor)
must resolve.
"""
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SUBSET = ("00_start_here", "05_answer_key")
LIMIT = 5 * 1024 * 1024


# ---------------------------------------------------------------------------------------------- the workflow
def test_pages_workflow_builds_the_site_from_main_and_deploys_it():
    yaml = pytest.importorskip("yaml")
    wf = yaml.safe_load((ROOT / ".github" / "workflows" / "pages.yml").read_text())
    on = wf.get("on", wf.get(True))  # YAML 1.1 reads a bare `on` as true
    assert on["push"] == {"branches": ["main"]}, on
    assert wf["permissions"]["pages"] == "write" and wf["permissions"]["id-token"] == "write"
    build, deploy = wf["jobs"]["build"], wf["jobs"]["deploy"]
    runs = [st.get("run", "") for st in build["steps"]]
    uses = [st.get("uses", "") for st in build["steps"]]
    assert uses[0].startswith("actions/checkout@") and any(u.startswith("actions/setup-python@") for u in uses)
    site = next(i for i, r in enumerate(runs) if r.strip() == "bash scripts/course.sh site")
    upload = next(i for i, u in enumerate(uses) if u.startswith("actions/upload-pages-artifact@"))
    assert site < upload and build["steps"][upload]["with"]["path"] == "build/site"
    cache = next(st for st in build["steps"] if st.get("uses", "").startswith("actions/cache@"))
    assert cache["with"]["path"] == "build/site-cache"  # scripts/build_site.py's default execution cache
    assert deploy["needs"] == "build" and deploy["environment"]["name"] == "github-pages"
    assert deploy["steps"][-1]["uses"].startswith("actions/deploy-pages@")


# ---------------------------------------------------------------------------------------------- the site
def build(out: Path, cache: Path) -> tuple[float, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("TUTORIAL_RECORD", "TUTORIAL_READINGS")}
    env.update(TUTORIAL_SIZE="quick", OMP_NUM_THREADS=env.get("OMP_NUM_THREADS", "1"))
    t = time.time()
    done = subprocess.run([sys.executable, "scripts/build_site.py", "--notebooks", ",".join(n[:2] for n in SUBSET),
                           "--out", str(out), "--cache", str(cache), "--quiet"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"the site did not build:\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}"
    return time.time() - t, done.stdout


def cache_records(cache: Path) -> set:
    from jupyter_cache import get_cache

    return {(r.pk, r.hashkey, r.created) for r in get_cache(str(cache)).list_cache_records()}


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    chromium = Path(os.environ.get("CHROMIUM", "/usr/bin/chromium"))
    if not chromium.exists():
        if os.environ.get("CI"):
            raise RuntimeError("Chromium is missing: `bash scripts/course.sh test` installs it with apt-get")
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    for mod in ("playwright", "sphinx", "myst_nb", "jupyter_cache"):
        pytest.importorskip(mod)
    tmp = tmp_path_factory.mktemp("site")
    cache = tmp / "cache"
    first, log = build(tmp / "site", cache)
    before = cache_records(cache)
    again, _ = build(tmp / "again", cache)  # a fresh folder, the same cache: nothing is executed again
    assert cache_records(cache) == before and len(before) == len(SUBSET), "the second build executed a notebook"
    print(f"site subset built in {first:.1f} s; again from the cache in {again:.1f} s\n{log[-400:]}")
    return tmp / "site"


def pages(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*.html") if "_static" not in p.parts)


def test_site_has_the_readme_the_docs_and_the_subset(site):
    got = set(pages(site))
    want = {"index.html"} | {f"docs/{p.stem}.html" for p in (ROOT / "docs").glob("*.md")}
    want |= {f"notebooks/{n}.html" for n in SUBSET}
    assert want <= got, want - got
    left_out = {p for p in got if p.startswith("notebooks/")} - want
    assert not left_out, f"notebooks outside the subset were built: {left_out}"
    # one copy of plotly.js in the whole site, the one plotly ships
    copies = [p.relative_to(site).as_posix() for p in site.rglob("*.js") if "plotly" in p.name]
    assert copies == ["_static/plotly.min.js"], copies
    # README links to a notebook of the subset stay in the site; to one outside it, go to the repository
    index = (site / "index.html").read_text()
    assert 'href="notebooks/00_start_here.html"' in index
    assert re.search(r'href="https://github\.com/[^"]+/blob/main/notebooks/01_greater_than\.ipynb"', index)


def test_site_pages_in_the_browser(site):
    from tests.browser.jupyterlab_driver import browser
    from tests.browser.site_driver import broken_links, outside, serve, visit

    problems = []
    with serve(site) as url, browser() as b:
        for rel in pages(site):
            v = visit(b, url, site, rel)
            html = (site / rel).read_text()
            if v.bytes > LIMIT:
                problems.append(f"{rel}: {v.bytes / 1e6:.1f} MB, over 5 MB")
            if v.console_errors:
                problems.append(f"{rel}: console errors {v.console_errors[:3]}")
            if outside(v.requests):
                problems.append(f"{rel}: requests left localhost {outside(v.requests)[:3]}")
            if broken_links(url, site, v.links):
                problems.append(f"{rel}: broken links {broken_links(url, site, v.links)[:5]}")
            if v.drawn < v.figures:
                problems.append(f"{rel}: {v.figures - v.drawn} of {v.figures} plotly figures did not draw")
            loads = [r for r in v.requests if r.endswith("plotly.min.js")]
            if v.plotly_scripts > 1 or len(loads) > 1:
                problems.append(f"{rel}: plotly.js loaded {max(v.plotly_scripts, len(loads))} times")
            if v.math_drawn < v.math:
                problems.append(f"{rel}: MathJax typeset {v.math_drawn} of {v.math} formulas")
            if v.figures and v.plotly_scripts != 1:
                problems.append(f"{rel}: {v.figures} figures but plotly.js not loaded")
            if not v.figures and v.plotly_scripts:
                problems.append(f"{rel}: loads plotly.js and draws no figure")
            if "widget-state+json" in html or "widget-view+json" in html:
                problems.append(f"{rel}: carries widget state or a widget view")
            if rel.startswith("notebooks/") and not v.figures:
                problems.append(f"{rel}: a notebook page with no plotly figure")
            if rel == "notebooks/00_start_here.html":
                # the ablation panel, as a static snapshot with its figure and a link to run it in Colab
                colab = [u for u in v.snapshot_links if u.startswith("https://colab.research.google.com/")]
                if not v.snapshots or not colab or "00_start_here.ipynb" not in colab[0]:
                    problems.append(f"{rel}: no static snapshot of the panel with a Colab link ({v.snapshot_links})")
                if not v.snapshot_drawn:
                    problems.append(f"{rel}: the panel's snapshot drew no figure")
    assert not problems, "\n".join(problems)
