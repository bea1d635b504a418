# The course website's first (hidden) cell: scripts/build_site.py puts this text at the top of every notebook it
# stages, with COLAB_URL filled in, so it runs before the notebook's own setup() cell. Its text is part of each
# notebook's cache key (jupyter-cache hashes the code cells), so a change here executes the notebooks again.
#
# 1. Plotly figures are emitted as their <div> and a call to Plotly.newPlot, without plotly.js and without MathJax
#    (include_plotlyjs=False, include_mathjax=False): the page loads one local copy, _static/plotly.min.js.
#    setup() picks "plotly_mimetype+notebook" under a kernel; the "notebook" name is given that renderer here
#    (the stock one embeds all of plotly.js, about 4.8 MB, in the first output of every notebook).
# 2. An ipywidgets widget (the ablation panel, the comparison panel) is also given a text/html form: a static
#    snapshot of it as first drawn -- its figures, readout, buttons -- with a link to run it in Colab. The site
#    shows that form instead of the live widget; no widget state is stored (see site/conf.py).
import html as _html

import plotly.io as _pio
from plotly.io._base_renderers import HtmlRenderer as _HtmlRenderer

COLAB_URL = None  # filled in by scripts/build_site.py


def _figure_html(fig) -> str:
    return _pio.to_html(fig, include_plotlyjs=False, include_mathjax=False, full_html=False,
                        default_width="100%", default_height=525, validate=False)


class _SiteRenderer(_HtmlRenderer):
    """text/html: the figure's div and script, no plotly.js, no global init."""

    def __init__(self):
        super().__init__(connected=False, full_html=False, global_init=False, include_plotlyjs=False)

    def to_mimebundle(self, fig_dict):
        return {"text/html": _figure_html(fig_dict)}


_pio.renderers["notebook"] = _SiteRenderer()
_pio.renderers["notebook_connected"] = _SiteRenderer()


def _snapshot(w) -> str:
    """Static HTML for one widget and its children, as it is drawn now."""
    import ipywidgets as W
    from plotly.basedatatypes import BaseFigure

    if isinstance(w, BaseFigure):
        return _figure_html(w)
    if isinstance(w, (W.HTML, W.HTMLMath)):
        return f"<div>{w.value}</div>"
    if isinstance(w, W.Label):
        return f"<span class='snap-label'>{_html.escape(str(w.value))}</span>"
    if isinstance(w, (W.ToggleButton, W.Button)):
        on = " snap-on" if getattr(w, "value", False) else ""
        state = "disabled" if getattr(w, "disabled", False) else ""
        return f"<span class='snap-button{on} {state}'>{_html.escape(w.description)}</span>"
    if isinstance(w, W.Box):
        kind = "snap-hbox" if isinstance(w, W.HBox) else "snap-vbox"
        return f"<div class='{kind}'>" + "".join(_snapshot(c) for c in w.children) + "</div>"
    if isinstance(w, W.Output):
        parts = []
        for out in w.outputs:
            data = out.get("data", {})
            if "text/html" in data:
                parts.append(data["text/html"])
            elif "text/plain" in data or "text" in out:
                parts.append(f"<pre>{_html.escape(data.get('text/plain', out.get('text', '')))}</pre>")
        return "<div>" + "".join(parts) + "</div>"
    label = getattr(w, "label", None) or getattr(w, "value", "")
    desc = getattr(w, "description", "") or ""
    return f"<span class='snap-control'>{_html.escape(str(desc))} <b>{_html.escape(str(label))}</b></span>"


def _widget_html(w) -> str:
    link = (f"<a href='{COLAB_URL}'>run this notebook in Colab</a>" if COLAB_URL else "run this notebook")
    return ("<div class='widget-snapshot'><p class='snap-note'>A static snapshot of an interactive panel, as first "
            f"drawn. To click it, {link} or in JupyterLab.</p>" + _snapshot(w) + "</div>")


try:
    import ipywidgets as _W

    get_ipython().display_formatter.formatters["text/html"].for_type(_W.Widget, _widget_html)  # noqa: F821
except ImportError:
    pass
