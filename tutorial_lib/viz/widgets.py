"""The ablation panel: switch heads and MLPs off and watch the task metric respond.

Every notebook builds one with its own ``evaluate`` function::

    def evaluate(ablated: frozenset[str]) -> dict:
        ...            # run the model with `ablated` zero-ablated
        return {"metrics": {"prob diff": 0.71}, "x": years, "y": curve}

    panel = AblationPanel(model, evaluate, presets={"circuit": circuit})
    panel          # displays: a grid of toggle buttons, a readout, and a plot

The plot shows the unablated model's curve (grey) next to the current one (blue); ``x``/``y`` can be a
curve (probability difference over YY) or bars (accuracy per task). Tests and notebooks can drive the
panel without a browser: ``panel.set_ablated({"a1.h2"})`` and read ``panel.result``.

Both widget generations are supported, because the install cell never replaces what Colab has: ipywidgets 7.7
with plotly 5.24 (Colab's preinstalled pair; ``FigureWidget`` is then plotly's own ipywidgets widget) and
ipywidgets 8 with plotly 6 or 7 (``FigureWidget`` is then an anywidget). The panel therefore uses only what both
have: ``ToggleButton`` / ``Button`` / ``HTML`` / ``HBox`` / ``VBox`` / ``Layout``, ``observe(names="value")``,
``on_click``, ``add_class``, and the figure's ``data[i].y`` inside ``batch_update()``
(``tests/test_widgets.py`` drives the panel under both).

The figure is a child of the panel's ``VBox``, never drawn inside an ipywidgets ``Output``: on Colab a plotly
figure displayed into an ``Output`` widget fails with "Plotly is not defined" (googlecolab/colabtools #5889),
because the output is rendered in a frame that has not loaded plotly.js. Nor is anything else displayed into
an ``Output``: the readout is an ``HTML`` widget whose value is replaced.
"""
from __future__ import annotations

from typing import Callable, Iterable, Optional

import plotly.graph_objects as go

from ..core.components import all_heads, all_mlps, parse_many


class AblationPanel:
    """Toggle buttons for every head and MLP of ``model``, a metric readout and a plot."""

    def __init__(
        self,
        model,
        evaluate: Callable[[frozenset], dict],
        presets: Optional[dict] = None,
        plot: str = "line",
        title: str = "Ablation panel",
        x_title: str = "x",
        y_title: str = "metric",
        components: Optional[Iterable[str]] = None,
    ):
        import ipywidgets as W

        if plot not in ("line", "bar"):
            raise ValueError(f"plot must be 'line' or 'bar', got {plot!r}")
        self.model, self.evaluate, self.plot_kind = model, evaluate, plot
        self.presets = {k: frozenset(str(c) for c in parse_many(list(getattr(v, "nodes", v)), model))
                        for k, v in (presets or {}).items()}
        allowed = set(components) if components is not None else None
        self.ablated: frozenset = frozenset()
        self.baseline = evaluate(frozenset())
        self.result = self.baseline

        n_layers, n_heads = model.cfg.n_layers, model.cfg.n_heads
        self.buttons: dict[str, W.ToggleButton] = {}
        rows = []
        mlps = set(all_mlps(model))
        for l in range(n_layers):
            row = [W.Label(f"layer {l}", layout=W.Layout(width="60px"))]
            names = [f"a{l}.h{h}" for h in range(n_heads)] + ([f"m{l}"] if f"m{l}" in mlps else [])
            for name in names:
                b = W.ToggleButton(value=False, description=name, tooltip=f"ablate {name}",
                                   layout=W.Layout(width="68px", height="28px"),
                                   disabled=allowed is not None and name not in allowed)
                b.observe(self._on_toggle, names="value")
                self.buttons[name] = b
                row.append(b)
            rows.append(W.HBox(row))
        self.reset_button = W.Button(description="reset", button_style="info", layout=W.Layout(width="90px"))
        self.reset_button.on_click(lambda _: self.set_ablated(frozenset()))
        self.preset_buttons: dict[str, W.Button] = {}
        for key, comps in self.presets.items():
            pb = W.Button(description=f"ablate {key}", layout=W.Layout(width="auto"))
            pb.on_click(lambda _, c=comps: self.set_ablated(c))
            self.preset_buttons[key] = pb
        self.readout = W.HTML()
        self.readout.add_class("ablation-readout")
        self.figure = go.FigureWidget()
        self.figure.update_layout(title=title, xaxis_title=x_title, yaxis_title=y_title,
                                  width=640, height=360, margin=dict(t=50, b=50, l=60, r=20),
                                  legend=dict(orientation="h", y=1.12))
        trace = go.Bar if plot == "bar" else go.Scatter
        extra = {} if plot == "bar" else {"mode": "lines+markers"}
        if "x" in self.baseline:
            self.figure.add_trace(trace(x=list(self.baseline["x"]), y=list(self.baseline["y"]), name="no ablation",
                                        marker_color="lightgrey", **extra))
            self.figure.add_trace(trace(x=list(self.baseline["x"]), y=list(self.baseline["y"]), name="with ablation",
                                        marker_color="#1f77b4", **extra))
        self._busy = False
        self._render_readout()
        self.widget = W.VBox([W.HTML(f"<b>{title}</b> — click a component to switch it off"),
                              W.VBox(rows), W.HBox([self.reset_button, *self.preset_buttons.values()]),
                              self.readout, self.figure])  # the figure a direct child, not in an Output (above)
        self.widget.add_class("ablation-panel")

    # ------------------------------------------------------------------ state
    def _on_toggle(self, change) -> None:
        change["owner"].button_style = "danger" if change["new"] else ""
        if self._busy:
            return
        self._apply(frozenset(n for n, b in self.buttons.items() if b.value))

    def set_ablated(self, components: Iterable[str]) -> dict:
        """Ablate exactly ``components`` (updates the buttons, readout and plot); returns the result."""
        comps = frozenset(str(c) for c in parse_many(list(components), self.model))
        self._busy = True
        try:
            for n, b in self.buttons.items():
                b.value = n in comps
        finally:
            self._busy = False
        return self._apply(comps)

    def toggle(self, name: str) -> dict:
        """Flip one component, as a click would."""
        name = str(parse_many([name], self.model)[0])
        return self.set_ablated(self.ablated ^ {name})

    def _apply(self, comps: frozenset) -> dict:
        self.ablated = comps
        self.result = self.evaluate(comps)
        self._render_readout()
        if "x" in self.result and len(self.figure.data) == 2:
            with self.figure.batch_update():
                self.figure.data[1].y = list(self.result["y"])
        return self.result

    def _render_readout(self) -> None:
        parts = []
        for k, v in self.result["metrics"].items():
            base = self.baseline["metrics"].get(k)
            rel = f" ({v / base:.0%} of unablated)" if base not in (None, 0) else ""
            parts.append(f"<b>{k}</b>: {v:.3f}{rel}")
        ablated = ", ".join(sorted(self.ablated)) or "nothing"
        self.readout.value = " &nbsp;|&nbsp; ".join(parts) + f"<br><small>ablated: {ablated}</small>"

    def _ipython_display_(self):
        from IPython.display import display

        display(self.widget)
