"""Notebook 04's readings and folded answers: every number formatted from the run (a :class:`~.comparing.
MethodComparison`), each at most 120 words, so that a reading changes when the run does."""
from __future__ import annotations

from typing import Optional

from ..methods import faithfulness as fa
from .comparing import MethodComparison, _first_at, curve_facts, differing_sizes


def _size(x: Optional[float]) -> str:
    return "never" if x is None else f"{x:.1%}"


def curve_table(c: MethodComparison, level: float = 0.8):
    """Each curve in numbers: where it first reaches f ≥ ``level``, f at 1% and at 10%, CPR and CMD (edges in both
    rankings, nodes by |score|, the random band's mean over seeds)."""
    import pandas as pd

    rows = []
    groups = [("edges", "signed", c.signed_edge_curves), ("edges", "|score|", c.edge_curves), ("nodes", "|score|", c.node_curves)]
    for kind, ranking, curves in groups:
        for name, cur in curves.items():
            rows.append({"circuit of": kind, "method": name, "ranking": ranking, f"first f ≥ {level}": _size(_first_at(cur, level)),
                         "f at 1%": cur.at(0.01), "f at 10%": cur.at(0.1), "CPR": cur.cpr(), "CMD": cur.cmd()})
    for kind, rand in (("edges", c.random_edges), ("nodes", c.random_nodes)):
        firsts = [_first_at(r, level) for r in rand]
        rows.append({"circuit of": kind, "method": f"random ({len(rand)} seeds, mean)", "ranking": "random",
                     f"first f ≥ {level}": ", ".join(_size(x) for x in firsts),
                     **{k: sum(getattr(r, a)(*x) for r in rand) / len(rand) for k, a, x in
                        (("f at 1%", "at", (0.01,)), ("f at 10%", "at", (0.1,)), ("CPR", "cpr", ()), ("CMD", "cmd", ()))}})
    return pd.DataFrame(rows).set_index(["circuit of", "method", "ranking"]).round(3)


def curve_reading(c: MethodComparison, level: float = 0.8) -> str:
    """The faithfulness curves in a few sentences (:func:`curve_table` has every number)."""
    e, g = c.signed_edge_curves["EAP"], c.signed_edge_curves["EAP-IG"]
    facts = curve_facts(c, level)
    pp = c.pp_point
    return (f"Signed top edges reach f ≥ {level} at {_size(_first_at(e, level))} of the edges (EAP) and "
            f"{_size(_first_at(g, level))} (EAP-IG); at 1% of the edges f is {e.at(0.01):.2f} and {g.at(0.01):.2f}. Up to "
            f"10%, EAP-IG's |score| curve is above EAP's at {facts['ig_above']} of {facts['n_small']} sizes, below at "
            f"{facts['ig_below']}. Random circuits reach f ≥ {level} at {facts['random_mean_first_at']:.0%} on average. "
            f"Path-patching circuit ({pp['n_edges']} edges, {pp['fraction_edges']:.1%}): f = {pp['f']:.2f}; "
            + (f"size-matched random: {', '.join(f'{v:.2f}' for v in pp['random_f'])}. " if pp["random_f"]
               else "no size-matched control fits outside it. ")
            + "**Paper** (MIB): EAP-IG above EAP on most tasks and models.")


def window_reading(c: MethodComparison) -> str:
    """Where the methods differ (:func:`differing_sizes`), edges and nodes, and what MIB's full-range CPR says there."""
    parts = []
    for kind in ("edges", "nodes"):
        w = differing_sizes(c, kind)
        full = ", ".join(f"{m} {v:.3f}" for m, v in w["full_cpr"].items())
        if w["degenerate"]:
            parts.append(f"**{kind}**: every method within {w['within']} of f = 1 from the smallest size "
                         f"({w['saturated']:.1%}) on: no window where they differ, no ranking on this model "
                         f"(full-range CPR {full}).")
            continue
        win = ", ".join(f"{m} {v:.2f}" for m, v in w["cpr"].items())
        methods = [v for m, v in w["cpr"].items() if not m.startswith("random")]
        spread = max(methods) - min(methods)
        if w["saturated"] >= 1.0:
            parts.append(f"**{kind}**: not all curves settle within {w['within']} of f = 1 before every {kind[:-1]} "
                         f"is in: MIB's full range is the window, CPR {win}.")
            continue
        parts.append(f"**{kind}**: every method within {w['within']} of f = 1 from {w['saturated']:.1%} of the "
                     f"{kind} on. Below ({len(w['sizes'])} sizes), CPR per unit width: {win}"
                     + (f"; they differ by {spread:.3f}: a tie" if spread < 0.01 else "")
                     + f". Full range: {full}.")
    return " ".join(parts)


def completeness_answer(table) -> str:
    """The answer to "why does m = 1 miss metric(corrupt) − metric(clean), and a larger m get closer?", from the
    completeness table of notebook 04 (index m; columns "sum of embed's edge scores" and the gap)."""
    sums, gap = table["sum of embed's edge scores"], table.iloc[:, 1]
    errs = {m: abs(s - g) / max(abs(g), 1e-9) for m, s, g in zip(table.index, sums, gap)}
    parts = ", ".join(f"m = {m}: {100 * e:.0f}% off" for m, e in errs.items())
    from .words import trend as trend_of

    m_min, m_max = min(errs), max(errs)
    way = trend_of(errs)  # "gets closer" only if every larger m is at least as close (studies.words.trend)
    trend = ("gets closer as m grows" if way == "falls" else
             f"is closer at m = {m_max} than at m = {m_min}, but not at every step" if errs[m_max] < errs[m_min] else
             "does not get closer as m grows on this run (the metric is close to linear along the line)")
    over = [m for m, sm, g in zip(table.index, sums, gap) if abs(sm) > 1.1 * abs(g) and sm * g > 0]
    overshoot = (f" At m = {', '.join(str(m) for m in over)} the sum overshoots: each point stands for a whole piece "
                 "of the line, and the metric changes steeply between points." if over else "")
    return ("Summed over receivers, the embedding's edge scores average the gradient at m points along the line from "
            "corrupted to clean input, times the input difference: a Riemann sum of an integral that equals "
            "metric(corrupt) − metric(clean) exactly. With m = 1 the only point is the clean end, where a saturated "
            f"metric is flat. On this run: {parts}; the sum {trend}.{overshoot}")


def random_band_answer(c: MethodComparison, level: float = 0.8) -> str:
    """The answer to "why do random circuits need so many edges?", from the curves of ``c``."""
    n = fa.n_edges(c.graph)
    pp = c.pp_point
    at = curve_facts(c, level)["random_first_at"]
    late = sum(x is None or x >= 1.0 for x in at)
    x_half = min(c.random_edges[0].fractions, key=lambda x: abs(x - 0.5))  # the grid's size nearest one half
    half = sum(r.at(x_half) for r in c.random_edges) / len(c.random_edges)
    return (f"A circuit keeps the task only if *every* edge of its paths is in: with a fraction x of the edges, a "
            f"path of k edges survives with probability x^k, and the task needs several paths. A saturating metric "
            f"barely moves until most of the signal is back. On this run random "
            f"circuits with {x_half:.0%} of the edges reach f = {half:.2f} on average, and {late} of {len(at)} seeds "
            f"stay below f = {level} until every edge is in; the path-patching circuit has {pp['n_edges']} of the {n} "
            f"edges ({pp['fraction_edges']:.1%}) and f = {pp['f']:.2f}.")


def closest_why(c: MethodComparison, k: Optional[int] = None) -> str:
    """Why the method(s) closest to exact node patching at size ``k`` are, at the level of the prediction: which
    heads and MLPs each top-``k`` set swaps, where exact patching ranks them, and how the overlap goes at every k."""
    k = k or max(1, len(c.pp_nodes))
    table = c.overlap_with_exact(k)
    exact = c.node_scores["exact node patching"][1:]
    order = exact.abs().argsort(descending=True, stable=True).tolist()
    rank = {c.components[i]: r + 1 for r, i in enumerate(order)}
    swaps = []
    for m in ("EAP", "EAP-IG"):
        extra, missing = table.loc[m, "only in the method's set"], table.loc[m, "only in exact patching's"]
        if extra == "-":
            swaps.append(f"{m}'s set is exact patching's")
        else:
            fmt = lambda s: ", ".join(f"{x} (exact rank {rank[x]})" for x in s.split(", "))  # noqa: E731
            swaps.append(f"{m} takes {fmt(extra)} instead of {fmt(missing)}")
    by_k = c.overlap_by_size()
    wins = {m: int((by_k[m] > by_k[o] + 1e-9).sum()) for m, o in (("EAP", "EAP-IG"), ("EAP-IG", "EAP"))}
    return (f"At k = {k}: {'; '.join(swaps)}. A swap near rank {k} moves Jaccard a lot, CPR little. Over k = 1 to "
            f"{len(c.components)}, EAP-IG is closer to exact patching at {wins['EAP-IG']} sizes, EAP at {wins['EAP']}; "
            "node CPR (all sizes): " + ", ".join(f"{m} {cur.cpr():.3f}" for m, cur in c.node_curves.items()) + ".")


def agreement_answer(c: MethodComparison) -> str:
    """The answer to "if the methods agree, is their circuit therefore right?", from ``c``."""
    table = c.overlap_with_exact()
    j = ", ".join(f"{m} {table.loc[m, 'Jaccard']:.2f}" for m in table.index)
    kept = c.kept_by_all()
    e, g = c.edge_curves["EAP"], c.edge_curves["EAP-IG"]
    return (f"No. Agreement says the methods read one signal: at k = {len(c.pp_nodes)} every method keeps "
            f"{', '.join(kept) or 'no common component'}; overlap with exact node patching {j} (chance "
            f"{float(table['chance'].iloc[0]):.2f}). They share gradients and one metric: a bias of one is a bias of "
            "all. **Paper** (Hanna et al. 2024): overlap is no substitute for faithfulness. "
            f"Here, at 1% of the edges EAP's top edges have f = {e.at(0.01):.2f}, EAP-IG's {g.at(0.01):.2f}; the "
            f"path-patching circuit has f = {c.pp_point['f']:.2f}. Necessity needs the ablations of notebooks 01–02.")



def folded(table, summary: str):
    """A table folded under ``summary`` (an HTML ``<details>`` block), for the notebook to display."""
    import html

    from IPython.display import HTML

    return HTML(f"<details><summary>{html.escape(summary)}</summary>\n\n{table.to_html()}\n\n</details>")
