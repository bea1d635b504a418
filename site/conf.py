"""Sphinx configuration of the course website (``bash scripts/course.sh site``; ``scripts/build_site.py``).

The source folder is staged by ``scripts/build_site.py`` in ``build/site-src/`` (the README as the index, ``docs/``,
the solution notebooks under ``notebooks/``); this folder holds only the configuration. Notebooks are executed by
MyST-NB through jupyter-cache, keyed on each notebook's code (``COURSE_SITE_CACHE``, default ``build/site-cache``).
"""
import functools
import os
import shutil
from pathlib import Path

import jupyter_server_mathjax
import plotly

project = "Circuits course"
author = "the circuits course authors"
extensions = ["myst_nb", "sphinx.ext.githubpages"]  # githubpages: writes .nojekyll
exclude_patterns = ["**.ipynb_checkpoints"]
# myst.header: the README and the notebooks may skip a heading level; unknown_mime_type: the plotly JSON beside
# each figure's HTML, left out on purpose (below)
suppress_warnings = ["myst.header", "mystnb.unknown_mime_type"]

myst_enable_extensions = ["dollarmath"]
myst_heading_anchors = 3

# Math is drawn by a local MathJax 2 (the copy the jupyter-server-mathjax package ships, put into _static/mathjax/
# after the build), configured as the classic notebook configures it: no page fetches anything from a CDN.
MATHJAX_DIR = Path(jupyter_server_mathjax.__file__).parent / "static"
mathjax_path = "mathjax/MathJax.js?config=TeX-AMS-MML_HTMLorMML-full"
mathjax2_config = {
    # MyST marks each page's section mathjax_ignore; the math nodes it writes carry the class "math"
    "tex2jax": {"inlineMath": [["\\(", "\\)"]], "displayMath": [["\\[", "\\]"]], "processEscapes": True,
                "ignoreClass": "tex2jax_ignore|mathjax_ignore|document", "processClass": "tex2jax_process|mathjax_process|math"},
    # MathJax_Blank (a stand-in while the web fonts load) is url('about:blank') by default, which Chromium logs as a
    # CORS error; local() names it without a request.
    "HTML-CSS": {"availableFonts": [], "imageFont": None, "preferredFont": None, "webFont": "STIX-Web",
                 "styles": {"@font-face": {"font-family": "MathJax_Blank", "src": "local('MathJax_Blank')"}}},
    "messageStyle": "none",
    "showMathMenu": False,
}

# Execution: through jupyter-cache, keyed on the notebook's code cells (the staged first cell included).
nb_execution_mode = "cache"
nb_execution_cache_path = os.environ.get("COURSE_SITE_CACHE", str(Path(__file__).resolve().parents[1] / "build" / "site-cache"))
nb_execution_timeout = 1800
nb_execution_raise_on_error = True  # a notebook that crashes fails the build; claims run in report mode
nb_execution_show_tb = True
nb_merge_streams = True
# No widget state on the pages and no widget JavaScript from a CDN: a panel is shown by its static snapshot
# (site/kernel_setup.py gives every widget a text/html form), so the widget view is never chosen.
nb_ipywidgets_js = {}
nb_mime_priority_overrides = [
    ("html", "application/vnd.jupyter.widget-view+json", None),
    ("html", "application/vnd.plotly.v1+json", None),
]

html_theme = "alabaster"
html_title = "Circuits course"
html_theme_options = {"page_width": "1300px", "body_max_width": "none", "sidebar_width": "230px",
                      "fixed_sidebar": True, "show_relbars": True}
html_favicon = "_static/favicon.svg"  # without one, the browser asks for /favicon.ico and logs a 404
html_static_path = ["_static", str(Path(plotly.__file__).parent / "package_data" / "plotly.min.js")]
html_css_files = ["site.css"]
html_copy_source = False
html_show_sourcelink = False


def _plotly_where_drawn(app, pagename, templatename, context, doctree):
    """One <script src="_static/plotly.min.js"> on each page that draws a plotly figure, none elsewhere."""
    if "plotly-graph-div" in (context.get("body") or ""):
        app.add_js_file("plotly.min.js", priority=200)


def _copy_mathjax(app, exception):
    """MathJax 2 into _static/mathjax/ (English only: the other translations are 2 MB nobody here loads)."""
    if exception is None and app.builder.format == "html":
        skip = lambda folder, names: [n for n in names if Path(folder).name == "localization" and n != "en"]
        shutil.copytree(MATHJAX_DIR, Path(app.outdir) / "_static" / "mathjax", ignore=skip, dirs_exist_ok=True)


def _no_widget_state():
    """MyST-NB runs nbclient with its default store_widget_state=True, which would put every widget's state (20 MB
    in notebook 03) into the cache and onto the page; jupyter-cache passes extra keyword arguments to nbclient."""
    import myst_nb.core.execute.cache as nb_cache

    if not isinstance(nb_cache.single_nb_execution, functools.partial):
        nb_cache.single_nb_execution = functools.partial(nb_cache.single_nb_execution, store_widget_state=False)


def setup(app):
    _no_widget_state()
    app.connect("html-page-context", _plotly_where_drawn)
    app.connect("build-finished", _copy_mathjax)
