"""Figures and the panel of notebook 04: faithfulness curves with a random band, a circuit drawn as a graph.

Everything is plotly (no graphviz): nodes by layer (embed at the bottom, logits at the top, heads left to right,
each layer's MLP on the right), edges as line segments coloured by method.
"""
from __future__ import annotations

from typing import Optional, Sequence

import plotly.graph_objects as go

METHOD_COLOURS = {"EAP": "#1f77b4", "EAP-IG": "#d62728", "exact node patching": "#2ca02c",
                  "path patching": "#ff7f0e", "random": "#7f7f7f"}


def _colour(method: str) -> str:
    return METHOD_COLOURS.get(method, "#9467bd")


def _curve_label(name: str, c, kind: str, ranking: str) -> str:
    """A curve's legend entry: the area MIB reads from this ranking first (CPR from the signed edge ranking, CMD
    from the absolute one), the other in brackets, so the legend never mixes MIB's two conventions up."""
    if kind == "edges" and ranking == "signed":
        return f"{name}: CPR {c.cpr():.2f} (MIB's; CMD of this ranking {c.cmd():.2f})"
    if kind == "edges":
        return f"{name}: CMD {c.cmd():.2f} (MIB's; CPR of this ranking {c.cpr():.2f})"
    return f"{name}: CPR {c.cpr():.2f}, CMD {c.cmd():.2f}"


def plot_faithfulness(comparison, kind: str = "edges", log_x: bool = True, title: Optional[str] = None,
                      marker_at: Optional[float] = None, ranking: str = "absolute") -> go.Figure:
    """f against circuit size for every method, the random circuits as a band (min to max over seeds, mean
    dashed) and the path-patching circuit as a point. ``log_x``: a log x-axis (the empty circuit, at 0, is
    left out of the plot but not out of the areas). ``marker_at``: mark every curve at this size. ``ranking``:
    the methods' circuits ranked by ``"absolute"`` score (MIB reads CMD from these) or ``"signed"`` (edges only;
    MIB reads CPR from these); the title says which."""
    curves, rand = comparison.curves(kind, ranking), (comparison.random_edges if kind == "edges" else comparison.random_nodes)
    fig = go.Figure()
    x = rand[0].fractions
    keep = [i for i, v in enumerate(x) if v > 0 or not log_x]
    xs = [x[i] for i in keep]
    lo = [min(c.f[i] for c in rand) for i in keep]
    hi = [max(c.f[i] for c in rand) for i in keep]
    mean = [sum(c.f[i] for c in rand) / len(rand) for i in keep]
    fig.add_trace(go.Scatter(x=xs + xs[::-1], y=hi + lo[::-1], fill="toself", fillcolor="rgba(127,127,127,0.25)",
                             line=dict(width=0), name=f"random circuits ({len(rand)} seeds, min-max)", hoverinfo="skip"))
    fig.add_trace(go.Scatter(x=xs, y=mean, mode="lines", line=dict(color=_colour("random"), dash="dash"),
                             name="random circuits (mean)"))
    for name, c in curves.items():
        fig.add_trace(go.Scatter(x=[c.fractions[i] for i in keep], y=[c.f[i] for i in keep], mode="lines+markers",
                                 line=dict(color=_colour(name)), marker=dict(size=5),
                                 name=_curve_label(name, c, kind, ranking)))
        if marker_at is not None:
            i = min(range(len(c.fractions)), key=lambda j: abs(c.fractions[j] - marker_at))
            fig.add_trace(go.Scatter(x=[c.fractions[i]], y=[c.f[i]], mode="markers", showlegend=False,
                                     marker=dict(size=13, color=_colour(name), line=dict(color="black", width=1.5))))
    pp = comparison.pp_point
    px = pp["fraction_edges"] if kind == "edges" else pp["fraction_nodes"]
    fig.add_trace(go.Scatter(x=[px], y=[pp["f"]], mode="markers", marker=dict(symbol="star", size=16, color=_colour("path patching"),
                                                                             line=dict(color="black", width=1)),
                             name=f"path-patching circuit ({pp['n_nodes']} nodes, {pp['n_edges']} edges): f = {pp['f']:.2f}"))
    fig.add_hline(y=1, line_dash="dot", line_color="black", annotation_text="full model", annotation_position="bottom right")
    fig.add_hline(y=0, line_dash="dot", line_color="black", annotation_text="corrupted run", annotation_position="top right")
    what = "edges" if kind == "edges" else "nodes (embed, heads and MLPs)"
    how = ("ranked by signed score: MIB's ranking for CPR" if ranking == "signed" else
           "ranked by |score|" + (": MIB's ranking for CMD" if kind == "edges" else ""))
    fig.update_layout(title=title or f"Faithfulness on {comparison.task}: circuits of growing size<br><sup>{what}, {how}</sup>",
                      xaxis_title=f"fraction of {what} in the circuit" + (" (log scale)" if log_x else ""),
                      yaxis_title="faithfulness f = (m(C) − m(∅)) / (m(M) − m(∅))",
                      width=820, height=600, legend=dict(orientation="h", x=0, y=-0.22, yanchor="top", font=dict(size=11)),
                      margin=dict(b=170))
    if log_x:
        fig.update_xaxes(type="log")
    return fig


def _node_xy(graph) -> dict:
    """Plot coordinates of every node: heads at x = 0..H-1, the layer's MLP at x = H, on row 2l + 1 (heads)
    and 2l + 2 (MLP); embed at the bottom, logits at the top, both centred."""
    H, L = graph.n_heads, graph.n_layers
    pos = {"embed": ((H - 1) / 2, 0.0), "logits": ((H - 1) / 2, 2.0 * L + 1)}
    for l in range(L):
        for h in range(H):
            pos[f"a{l}.h{h}"] = (float(h), 2.0 * l + 1)
        if graph.has_mlp:
            pos[f"m{l}"] = (float(H), 2.0 * l + 2)
    return pos


def plot_circuit_graph(graph, circuits: dict, title: str = "Circuits as graphs (edges coloured by method)",
                       highlight: Sequence[str] = (), max_edges: int = 400) -> go.Figure:
    """Draw one or more circuits (``{method: edge mask [n_senders, n_receivers]}``) on one layered graph.

    Edges into a head's q, k and v inputs end at the head (one line per sender and head, its label naming the
    inputs). Nodes that any circuit touches are filled; ``highlight`` ones get a thick outline.
    """
    from ..methods.faithfulness import receiver_node

    pos = _node_xy(graph)
    fig = go.Figure()
    touched = set()
    offsets = {m: (i - (len(circuits) - 1) / 2) * 0.08 for i, m in enumerate(circuits)}
    for method, mask in circuits.items():
        m = mask.bool() & graph.edge_mask()
        pairs: dict = {}
        for i, j in m.nonzero().tolist():
            s, r = graph.senders[i], graph.receivers[j]
            pairs.setdefault((s, receiver_node(r)), []).append(r.rsplit(".", 1)[-1] if r.endswith((".q", ".k", ".v")) else "in")
        if len(pairs) > max_edges:
            raise ValueError(f"{method}'s circuit has {len(pairs)} sender-node pairs; draw at most {max_edges} "
                             "(choose a smaller circuit size)")
        xs, ys = [], []
        dx = offsets[method]
        for (s, r) in pairs:
            (x0, y0), (x1, y1) = pos[s], pos[r]
            xs += [x0 + dx, x1 + dx, None]
            ys += [y0, y1, None]
            touched |= {s, r}
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", line=dict(color=_colour(method), width=1.5),
                                 opacity=0.7, name=f"{method} ({int(m.sum())} edges)", hoverinfo="skip"))
    names = list(pos)
    fig.add_trace(go.Scatter(
        x=[pos[n][0] for n in names], y=[pos[n][1] for n in names], mode="markers+text", text=names,
        textposition="top center", textfont=dict(size=9), showlegend=False, hovertext=names, hoverinfo="text",
        marker=dict(size=[16 if n in highlight else 11 for n in names],
                    color=["#444" if n in touched else "white" for n in names],
                    symbol=["square" if n.startswith("m") else "circle" for n in names],
                    line=dict(color=["#ff7f0e" if n in highlight else "#444" for n in names],
                              width=[4 if n in highlight else 1 for n in names]))))
    L = graph.n_layers
    fig.update_yaxes(tickvals=[0] + [2 * l + 1 for l in range(L)] + [2 * L + 1],
                     ticktext=["embed"] + [f"layer {l}" for l in range(L)] + ["logits"], zeroline=False)
    fig.update_xaxes(showticklabels=False, zeroline=False, showgrid=False)
    fig.update_layout(title=title, width=820, height=120 + 70 * (2 * L + 2), legend=dict(orientation="h", y=-0.05),
                      plot_bgcolor="white")
    return fig


class ComparisonPanel:
    """A slider for the circuit size and a choice of method: the point on every curve, and that method's
    circuit drawn as a graph with its components highlighted. ``panel.show(i, method)`` drives it without a
    browser (tests do); ``panel.state`` holds what it shows."""

    def __init__(self, comparison, kind: str = "edges"):
        import ipywidgets as W

        self.c, self.kind = comparison, kind
        fr = comparison.random_edges[0].fractions
        self.fractions = [f for f in fr if f > 0]
        methods = list(comparison.curves(kind)) + ["path patching"]
        self.slider = W.SelectionSlider(options=[(f"{f:.1%}", f) for f in self.fractions],
                                        value=self.fractions[len(self.fractions) // 3], description="circuit size",
                                        continuous_update=False, layout=W.Layout(width="520px"))
        self.method = W.Dropdown(options=methods, value=methods[0], description="method")
        self.readout = W.HTML()
        self.curves = go.FigureWidget(plot_faithfulness(comparison, kind))
        self.graph = go.FigureWidget()
        self.slider.observe(lambda _: self.show(), names="value")
        self.method.observe(lambda _: self.show(), names="value")
        self.widget = W.VBox([W.HBox([self.slider, self.method]), self.readout, self.curves, self.graph])
        self.state: dict = {}
        self.show()

    def show(self, fraction: Optional[float] = None, method: Optional[str] = None) -> dict:
        if fraction is not None:
            self.slider.value = min(self.fractions, key=lambda f: abs(f - fraction))
        if method is not None:
            self.method.value = method
        f, m = self.slider.value, self.method.value
        curves = self.c.curves(self.kind)
        mask = self.c.circuit(m, f, self.kind)
        from ..methods.faithfulness import receiver_node, edge_names

        nodes = sorted({n for e in edge_names(self.c.graph, mask) for n in (e.split("->")[0], receiver_node(e.split("->")[1]))}
                       - {"logits"})
        values = {name: c.at(f) for name, c in curves.items()}
        self.state = {"fraction": f, "method": m, "f": values, "nodes": nodes, "n_edges": int(mask.sum())}
        fresh = plot_faithfulness(self.c, self.kind, marker_at=f)
        with self.curves.batch_update():
            self.curves.data = []
            for tr in fresh.data:
                self.curves.add_trace(tr)
        big = int(mask.sum()) > 400
        shown = self.c.circuit(m, min(f, 0.05), self.kind) if big else mask
        g = plot_circuit_graph(self.c.graph, {m: shown}, highlight=nodes, max_edges=10**6,
                               title=f"{m}'s circuit at {f:.1%}" + (" (drawn at 5%: too many edges to draw)" if big else ""))
        with self.graph.batch_update():
            self.graph.data = []
            for tr in g.data:
                self.graph.add_trace(tr)
            self.graph.layout = g.layout
        where = "" if m == "path patching" else f" at {f:.1%} of the {self.kind}"
        self.readout.value = (f"<b>{m}</b>{where}: {self.state['n_edges']} edges, nodes {', '.join(nodes) or '—'}"
                              "<br>f at this size: " + ", ".join(f"{k} {v:.2f}" for k, v in values.items()))
        return self.state

    def _ipython_display_(self):
        from IPython.display import display

        display(self.widget)


def plot_overlap_by_size(table, k: Optional[int] = None, chance=None,
                         title: str = "Overlap with exact node patching's top-k heads and MLPs, at every k"):
    """Jaccard of each method's top-k set with exact patching's (``MethodComparison.overlap_by_size()``: index k, one
    column per method) against k; ``chance``: a callable k -> the mean Jaccard of two random k-sets (grey); ``k``:
    the size the prediction is scored at (a dotted line)."""
    fig = go.Figure()
    ks = list(table.index)
    if chance is not None:
        fig.add_trace(go.Scatter(x=ks, y=[chance(x) for x in ks], name="two random k-sets (mean)", mode="lines",
                                 line=dict(color="lightgrey", width=3)))
    for m in table.columns:
        fig.add_trace(go.Scatter(x=ks, y=list(table[m]), name=m, mode="lines+markers", marker=dict(size=4),
                                 line=dict(color=_colour(m))))
    if k is not None:
        fig.add_vline(x=k, line_dash="dot", line_color="grey", annotation_text=f"k = {k}", annotation_position="bottom right")
    fig.update_layout(title=title, xaxis_title="k (heads and MLPs in each set)", yaxis_title="Jaccard with exact patching",
                      yaxis_range=[-0.02, 1.05], template="plotly_white", height=380, width=760)
    return fig
