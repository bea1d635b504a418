"""Notebook 04: one task, several circuit-finding methods, one yardstick (faithfulness curves).

:func:`compare_methods` runs every method on the same model and task and scores each circuit the same way
(:mod:`tutorial_lib.methods.faithfulness`):

* **path patching** -- the search of notebook 01 on greater-than (:func:`greater_than_circuit_search`), and on
  other tasks :func:`path_patching_search` (senders at END into the logits, then every sender, at every
  position, into the inputs of what step 1 found). A *node* circuit: one point on the curves;
* **EAP** -- edge scores averaged over the examples, edges ranked two ways (:class:`~tutorial_lib.methods.
  faithfulness.Ranking`): *signed* (the edges the task needs most first; MIB reads CPR from this curve) and
  *absolute* (by |mean score|; MIB reads CMD from this curve);
* **EAP-IG** -- the same with integrated gradients (``ig_steps`` points from corrupted to clean);
* **exact node patching** -- each head and MLP patched alone from the corrupted run: each node's own effect,
  which EAP's node scores estimate to first order (not a ground truth for circuits: nodes interact, and a node
  whose effect is taken over by a backup looks unimportant alone);
* **random** -- random edge (and node) rankings, several seeds: the band a method must clear.

Node rankings of EAP and EAP-IG use the signed node score (the sum of a node's outgoing edge scores: the
linear estimate of patching that node), ranked by |mean|, so that they are comparable with exact patching. The
nodes are ``embed`` and every head and MLP (:func:`~tutorial_lib.methods.faithfulness.node_names`): the embedding
is ranked like any other node, and a node circuit holds its edges only once it is chosen; the path-patching
circuit holds it (every path it patched starts there). The overlaps of section 4 compare heads and MLPs only.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Optional, Sequence

import torch
from torch import Tensor

from ..core.circuits import jaccard  # the course's one Jaccard; notebooks import it from here too
from ..core.components import sort_key
from ..core.controls import size_matched_random
from ..methods import faithfulness as fa
from ..methods.attribution import EAPGraph, eap_scores, exact_node_effects
from ..methods.path_discovery import discover_step, head_inputs
from ..methods.path_patching import top_senders
from .greater_than import greater_than_circuit_search

EDGE_METHODS = ("EAP", "EAP-IG")
NODE_METHODS = ("EAP", "EAP-IG", "exact node patching")


def path_patching_search(model, task, threshold: float, progress: bool = False) -> list[str]:
    """A two-step path-patching search for any task: senders at END into ``logits``; then every sender (all
    positions) into the q/k/v inputs of the heads and the inputs of the MLPs found. Keeps senders whose
    noising effect lowers the metric by at least ``threshold``. Returns the components (no ``embed``)."""
    step1 = discover_step(model, task, "logits", "END", progress=progress)
    found = [c for c in top_senders(step1, threshold=threshold, sign="negative") if c != "embed"]
    receivers = head_inputs([c for c in found if c.startswith("a")]) + [c for c in found if c.startswith("m")]
    if receivers:
        step2 = discover_step(model, task, receivers, None, progress=progress, head_output_position=None)
        found += [c for c in top_senders(step2, threshold=threshold, sign="negative") if c != "embed"]
    return sorted(set(found), key=sort_key)


PATH_SEARCH_PROMPTS = dict(full=200, cpu=50, quick=8)  # notebook 01's path_task: the first n of its 200 prompts
PATH_SEARCH_LABEL = "prompts for the path-patching search"


def notebook01_search_task(model, n: int, seed: int = 0):
    """Notebook 01's path-patching prompts: the first ``n`` of its 200 greater-than prompts (``seed`` 0). Pick ``n``
    as notebook 01 does, ``course.sizes.pick(PATH_SEARCH_LABEL, **PATH_SEARCH_PROMPTS, model=model)`` (notebook 03's
    section on greater-than uses the same), so that every notebook reporting notebook 01's search reports the same
    circuit."""
    from ..tasks.greater_than import make_greater_than

    if n < 1:
        raise ValueError(f"n must be a positive number of prompts, got {n!r}")
    return make_greater_than(model.tokenizer, n=max(200, n), seed=seed).subset(range(n))


def path_patching_circuit(model, task, threshold: Optional[float] = None, progress: bool = False) -> tuple[list, str]:
    """The path-patching circuit of ``task`` and how it was found: notebook 01's four-step search on
    greater-than (its threshold, 0.005 of probability difference), :func:`path_patching_search` otherwise
    (threshold: 5% of the clean-minus-corrupted metric)."""
    if task.name.startswith("greater"):
        t = 0.005 if threshold is None else threshold
        search = greater_than_circuit_search(model, task, threshold=t, progress=progress)
        return [c for c in search.circuit.nodes if c != "embed"], f"notebook 01's four-step search, threshold {t}"
    if threshold is None:
        with torch.no_grad():
            gap = float(task.metric(model(task.clean)).mean() - task.metric(model(task.corrupt)).mean())
        threshold = 0.05 * abs(gap)
    return path_patching_search(model, task, threshold, progress), f"two-step search, threshold {threshold:.3g}"


@dataclass
class MethodComparison:
    """Everything notebook 04 shows: scores per method, curves, random bands and the path-patching point."""

    task: str
    metric: str
    graph: EAPGraph
    edge_scores: dict  # method -> [n_senders, n_receivers] mean edge score
    node_scores: dict  # method -> [n_nodes] mean (signed) node score: embed, then every head and MLP
    pp_nodes: list  # the path-patching circuit's heads and MLPs (its node circuit adds embed)
    pp_how: str
    edge_curves: dict  # method -> FaithfulnessCurve over edges, absolute ranking (MIB's CMD)
    node_curves: dict  # method -> FaithfulnessCurve over nodes, absolute ranking
    random_edges: list
    random_nodes: list
    pp_point: dict
    settings: dict = field(default_factory=dict)
    seconds: dict = field(default_factory=dict)
    signed_edge_curves: dict = field(default_factory=dict)  # method -> curve over edges, signed ranking (MIB's CPR)
    node_scores_each: dict = field(default_factory=dict)  # method -> [n_examples, n_nodes]: node_scores per example

    @property
    def components(self) -> list:
        """Heads and MLPs (what the overlaps of section 4 compare)."""
        return self.graph.components

    @property
    def nodes(self) -> list:
        """The nodes a node circuit is chosen from: ``embed``, then every head and MLP."""
        return fa.node_names(self.graph)

    def curves(self, kind: str = "edges", ranking: str = "absolute") -> dict:
        """The curves of one ``kind`` (``"edges"`` or ``"nodes"``) and ``ranking`` (``"signed"``: edges only)."""
        r = fa.Ranking.of(ranking)
        if kind not in ("edges", "nodes"):
            raise ValueError(f"kind must be 'edges' or 'nodes', got {kind!r}")
        if kind == "nodes" and r is fa.Ranking.SIGNED:
            raise ValueError("node curves are ranked by |score| only (ranking='absolute')")
        if kind == "nodes":
            return self.node_curves
        return self.signed_edge_curves if r is fa.Ranking.SIGNED else self.edge_curves

    def cpr_curves(self, kind: str = "edges") -> dict:
        """The curves CPR is read from: edges ranked signed (MIB's convention), nodes by |score|."""
        return self.curves(kind, "signed" if kind == "edges" else "absolute")

    def mib(self, method: str) -> fa.MIBAreas:
        """One method's MIB numbers: ``.cpr()`` from the signed edge ranking, ``.cmd()`` from the absolute one."""
        return fa.MIBAreas(self.signed_edge_curves[method], self.edge_curves[method])

    def table(self):
        """Every curve's CPR and CMD (linear and log x-axis), by kind of circuit, method and ranking; random
        circuits as mean ± sd over seeds (their order is random in either ranking). MIB's pair is the CPR of the
        signed row and the CMD of the absolute row (:meth:`mib_table`)."""
        import pandas as pd

        rows = []
        for kind, groups, rand in (("edges", (self.signed_edge_curves, self.edge_curves), self.random_edges),
                                   ("nodes", (self.node_curves,), self.random_nodes)):
            for curves in groups:
                for name, c in curves.items():
                    rows.append({"method": name, "circuit of": kind, "ranking": c.ranking, "CPR": c.cpr(),
                                 "CMD": c.cmd(), "CPR (log x)": c.cpr("log"), "CMD (log x)": c.cmd("log")})
            vals = {k: [getattr(c, k.split()[0].lower())("log" if "log" in k else "linear") for c in rand]
                    for k in ("CPR", "CMD", "CPR (log x)", "CMD (log x)")}
            rows.append({"method": f"random ({len(rand)} seeds)", "circuit of": kind, "ranking": "random",
                         **{k: sum(v) / len(v) for k, v in vals.items()},
                         "sd of CPR over seeds": _sd(vals["CPR"])})
        return pd.DataFrame(rows).set_index(["circuit of", "method", "ranking"]).round(3)

    def mib_table(self):
        """MIB's two numbers per edge method -- CPR from the signed ranking, CMD from the absolute one -- and the
        random circuits' (mean and range over seeds), linear x-axis as MIB integrates."""
        import pandas as pd

        rows = [{"method": m, "CPR (signed ranking)": self.mib(m).cpr(), "CMD (absolute ranking)": self.mib(m).cmd()}
                for m in self.edge_curves]
        cprs, cmds = [r.cpr() for r in self.random_edges], [r.cmd() for r in self.random_edges]
        rows.append({"method": f"random ({len(cprs)} seeds): mean", "CPR (signed ranking)": sum(cprs) / len(cprs),
                     "CMD (absolute ranking)": sum(cmds) / len(cmds)})
        rows.append({"method": "random: best seed", "CPR (signed ranking)": max(cprs), "CMD (absolute ranking)": min(cmds)})
        return pd.DataFrame(rows).set_index("method").round(3)

    def node_sets(self, k: int) -> dict:
        """The top-``k`` heads and MLPs of every node ranking (``embed`` left out), and the path-patching circuit."""
        out = {m: _top(self.components, s[1:], k) for m, s in self.node_scores.items()}
        out["path patching"] = list(self.pp_nodes)
        return out

    def jaccard(self, k: Optional[int] = None):
        """Pairwise Jaccard overlap of the methods' node sets of size ``k`` (default: the path-patching
        circuit's size), and what two random sets of that size share on average (:func:`expected_jaccard`)."""
        import pandas as pd

        k = k or max(1, len(self.pp_nodes))
        sets = self.node_sets(k)
        if len(self.pp_nodes) != k:
            sets.pop("path patching")
        names = list(sets)
        table = pd.DataFrame([[jaccard(sets[a], sets[b]) for b in names] for a in names], index=names, columns=names)
        return table.round(3), expected_jaccard(len(self.components), k, k)

    def overlap_with_exact(self, k: Optional[int] = None):
        """Each method's top-``k`` heads and MLPs against exact node patching's (default ``k``: the path-patching
        circuit's size): Jaccard, its mean for two random sets of those sizes, the exact p of an overlap at least as
        large (:func:`overlap_p`), and the components each set has that the other lacks."""
        import pandas as pd

        k = k or max(1, len(self.pp_nodes))
        sets, n = self.node_sets(k), len(self.components)
        ref = set(sets.pop("exact node patching"))
        rows = []
        for m, nodes in sets.items():
            j = jaccard(nodes, ref)
            rows.append({"method": m, "k": len(nodes), "Jaccard": j, "chance": expected_jaccard(n, len(nodes), len(ref)),
                         "p": overlap_p(n, len(nodes), len(ref), j),
                         "only in the method's set": ", ".join(sorted(set(nodes) - ref, key=sort_key)) or "-",
                         "only in exact patching's": ", ".join(sorted(ref - set(nodes), key=sort_key)) or "-"})
        return pd.DataFrame(rows).set_index("method").round(3)

    def overlap_by_size(self):
        """Jaccard of EAP's and EAP-IG's top-k heads and MLPs with exact node patching's, at every k."""
        import pandas as pd

        exact = self.node_scores["exact node patching"][1:]
        rows = [{"k": k, **{m: jaccard(_top(self.components, self.node_scores[m][1:], k), _top(self.components, exact, k))
                             for m in EDGE_METHODS}} for k in range(1, len(self.components) + 1)]
        return pd.DataFrame(rows).set_index("k")

    def kept_by_all(self, k: Optional[int] = None) -> list:
        """Components in every method's top-``k`` set (and in the path-patching circuit)."""
        k = k or max(1, len(self.pp_nodes))
        sets = [set(v) for v in self.node_sets(k).values()]
        return sorted(set.intersection(*sets), key=sort_key)

    def ranking(self, x_scale: str = "linear", kind: str = "edges", tie: float = 0.005) -> list[list[str]]:
        """The methods' curves of one ``kind`` (``"edges"`` or ``"nodes"``: their x-axes differ, so their areas
        are not compared with each other) from the highest CPR to the lowest (:meth:`cpr_curves`: edges in the
        signed ranking), as groups: a curve whose CPR is within ``tie`` of its group's best joins that group."""
        curves = self.cpr_curves(kind)
        order = sorted(curves, key=lambda n: -curves[n].cpr(x_scale))
        groups: list[list[str]] = []
        for n in order:
            if groups and curves[groups[-1][0]].cpr(x_scale) - curves[n].cpr(x_scale) < tie:
                groups[-1].append(n)
            else:
                groups.append([n])
        return groups

    def axis_note(self) -> str:
        """Per kind of circuit: the ranking by CPR on the linear and the log x-axis (ties: CPR within 0.005),
        whether it changes, and how far the best method is from the random band on each axis (Markdown, under 120
        words; the notebook says what a tie is and which ranking each CPR comes from)."""
        def fmt(groups):
            return " > ".join(" = ".join(g) for g in groups)

        lines = []
        for kind, rand in (("edges", self.random_edges), ("nodes", self.random_nodes)):
            lin, log = self.ranking("linear", kind), self.ranking("log", kind)
            best = self.cpr_curves(kind)[lin[0][0]]
            r_lin = sum(r.cpr() for r in rand) / len(rand)
            r_log = sum(r.cpr("log") for r in rand) / len(rand)
            same = [sorted(g) for g in lin] == [sorted(g) for g in log]
            lines.append(
                f"* **{kind}** — linear axis: {fmt(lin)}; log axis: {fmt(log)}"
                + (" (the same). " if same else " (**it changes with the axis**). ")
                + f"{lin[0][0]} against the random band: CPR {best.cpr():.2f} vs {r_lin:.2f} linear "
                f"(difference {best.cpr() - r_lin:.2f}), {best.cpr('log'):.2f} vs {r_log:.2f} log "
                f"(difference {best.cpr('log') - r_log:.2f}; ratio {_ratio(best.cpr(), r_lin)} → "
                f"{_ratio(best.cpr('log'), r_log)}).")
        return "\n".join(lines)

    def circuit(self, method: str, fraction: float, kind: str = "edges", ranking: str = "absolute") -> Tensor:
        """The edge mask of one method's circuit at one size (``kind="nodes"``: a node circuit), in ``ranking``.
        The path-patching circuit is the node circuit of ``embed`` and its components, whatever the size."""
        if method == "path patching":
            return pp_circuit(self.graph, self.pp_nodes)
        if kind == "edges":
            return fa.top_edges(self.graph, self.edge_scores[method], [fraction], ranking)[0]
        return fa.top_nodes(self.graph, self.node_scores[method], [fraction], ranking)[0][0]


def pp_circuit(graph: EAPGraph, pp_nodes: Sequence[str]) -> Tensor:
    """The edges of the path-patching circuit: the node circuit of ``embed`` and ``pp_nodes`` (the search patched
    paths from the input, so every one of them starts at the embedding)."""
    return fa.node_circuit(graph, ["embed", *pp_nodes])


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.0f}×" if b > 1e-9 else "∞"


def _first_at(curve, level: float) -> Optional[float]:
    """The smallest size at which the curve reaches ``level`` (None if it never does)."""
    return next((x for x, f in zip(curve.fractions, curve.f) if f >= level), None)


def curve_facts(c: MethodComparison, level: float = 0.8) -> dict:
    """The facts the predictions of notebook 04 are checked against, read from ``c``.

    ``ig_above`` / ``ig_below``: at how many of the ``n_small`` edge sizes in (0, 10%] EAP-IG's curve lies
    above / below EAP's (edges ranked by |score|: the first figure); ``ig_above_at_most``: above at more sizes than below; ``random_first_at``: per random
    seed, the smallest fraction of edges where f ≥ ``level`` (None: never); ``random_mean_first_at``: their mean,
    a seed that never reaches ``level`` counted as 1.
    """
    e, g = c.edge_curves["EAP"], c.edge_curves["EAP-IG"]
    small = [i for i, x in enumerate(e.fractions) if 0 < x <= 0.1]
    above = sum(g.f[i] > e.f[i] + 1e-6 for i in small)
    below = sum(g.f[i] < e.f[i] - 1e-6 for i in small)
    first = [_first_at(r, level) for r in c.random_edges]
    reached = [1.0 if x is None else x for x in first]  # never: counted as the whole model
    return {"ig_above": above, "ig_below": below, "n_small": len(small), "ig_above_at_most": above > below,
            "random_first_at": first, "random_mean_first_at": sum(reached) / len(reached), "level": level}


def claim_facts(c: MethodComparison, model=None) -> list:
    """Notebook 04's claims, read from ``c``, as :class:`~tutorial_lib.methods.power.ClaimSpec` for
    :func:`tutorial_lib.course.claims.check`:

    * ``04.eap-cpr-above-random`` / ``04.eap-ig-cpr-above-random``: the method's CPR (signed ranking, MIB's) is above
      the CPR of every random seed's curve. Power: the random seeds' CPR sits away from 0 (random circuits that stay
      at f = 0 until the whole model leave nothing to beat), and at least 2 seeds.
    * ``04.pp-above-random``: the path-patching circuit's f is above that of every matched random control (embed and
      as many heads and MLPs drawn from outside it, one per seed: core.controls.size_matched_random). Power: the
      controls' f sits away from 0 and from 1, and (with ``model``) enough type-matched draws exist.
    """
    from ..core.controls import possible_draws
    from ..methods.power import ClaimSpec, Power, away_from_bounds, enough_draws, not_saturated

    rand = [r.cpr() for r in c.random_edges]
    mean_rand = sum(rand) / len(rand)
    # the random curves below the whole model: at f ~ 0 until the last size, they leave nothing to beat
    below = [i for i, x in enumerate(c.random_edges[0].fractions) if x < 1.0]
    mean_f = [sum(r.f[i] for r in c.random_edges) / len(rand) for i in below]
    out = []
    for m in EDGE_METHODS:
        cpr = c.mib(m).cpr()
        out.append(ClaimSpec(f"04.{m.lower()}-cpr-above-random", f"{m}'s CPR (signed ranking) {cpr:.3f} is above every "
                             f"random seed's ({', '.join(f'{v:.3f}' for v in rand)})", cpr > max(rand),
                             [Power(len(rand) >= 2, f"{len(rand)} random seed(s) (needs >= 2)"),
                              away_from_bounds(mean_rand, 0.0, 1.0, what="the random seeds' mean CPR"),
                              not_saturated(mean_f, 0.0, 1.0, what="random circuits' mean f below the whole model")]))
    pp = c.pp_point
    if not pp["random_f"]:  # no size-matched control fits outside the circuit
        out.append(ClaimSpec("04.pp-above-random", "the path-patching circuit against matched random circuits", False,
                             [Power(False, "no size-matched control fits outside the path-patching circuit")]))
        return out
    rf = pp["random_f"]
    power = [away_from_bounds(sum(rf) / len(rf), 0.0, 1.0, what="the matched random circuits' mean f")]
    if model is not None:
        power.insert(0, enough_draws(possible_draws(model, c.pp_nodes, "type"),
                                     what=f"type-matched random sets of {len(c.pp_nodes)} heads and MLPs"))
    out.append(ClaimSpec("04.pp-above-random", f"the path-patching circuit's f = {pp['f']:.3f} is above every matched "
                         f"random circuit's ({', '.join(f'{v:.3f}' for v in rf)}; embed and {pp['n_nodes'] - 1} heads and "
                         "MLPs from outside the circuit)", pp["f"] > max(rf), power))
    return out


def differing_sizes(c: MethodComparison, kind: str = "edges", within: float = 0.05) -> dict:
    """Where the methods' curves differ: every size below ``saturated``, the smallest size from which every method's
    CPR curve (:meth:`MethodComparison.cpr_curves`) stays within ``within`` of f = 1. ``cpr``: each curve's area over
    that window divided by its width (the random band's mean too), from the grid's points; ``degenerate``: the
    window holds no size between 0 and ``saturated`` (every method saturates at the smallest size)."""
    curves = c.cpr_curves(kind)
    xs = list(next(iter(curves.values())).fractions)
    ok = [all(all(abs(1 - v) <= within for v in cur.f[i:]) for cur in curves.values()) for i in range(len(xs))]
    i_sat = next((i for i in range(len(xs)) if ok[i] and xs[i] > 0), len(xs) - 1)
    sat = xs[i_sat]
    inside = [x for x in xs if 0 < x < sat]
    rand = c.random_edges if kind == "edges" else c.random_nodes

    def window(cur):
        return fa.area(cur.fractions[:i_sat + 1], cur.f[:i_sat + 1]) / sat

    out = {m: window(cur) for m, cur in curves.items()}
    out["random (mean)"] = sum(window(r) for r in rand) / len(rand)
    return {"kind": kind, "within": within, "saturated": sat, "sizes": inside, "degenerate": not inside, "cpr": out,
            "full_cpr": {m: cur.cpr() for m, cur in curves.items()}}


def closest_to_exact(c: MethodComparison, k: Optional[int] = None) -> set:
    """The method(s) whose top-``k`` node set overlaps exact node patching's the most (Jaccard; ties: all)."""
    table, _ = c.jaccard(k)
    row = table.loc["exact node patching"].drop("exact node patching")
    return set(row.index[row == row.max()])


def _sd(v: Sequence[float]) -> float:
    m = sum(v) / len(v)
    return math.sqrt(sum((x - m) ** 2 for x in v) / max(1, len(v) - 1))


def _top(components: list, scores: Tensor, k: int) -> list:
    order = scores.abs().argsort(descending=True, stable=True).tolist()
    return sorted((components[i] for i in order[:k]), key=sort_key)


def expected_jaccard(n: int, a: int, b: int) -> float:
    """Mean Jaccard overlap of two random sets of ``a`` and ``b`` of ``n`` items, drawn uniformly and independently
    (exact: the intersection is hypergeometric). Two empty sets overlap 1."""
    return sum(pr * _j(i, a, b) for i, pr in _intersection_law(n, a, b))


def overlap_p(n: int, a: int, b: int, observed: float) -> float:
    """The chance that two random sets of ``a`` and ``b`` of ``n`` items overlap at least ``observed`` (Jaccard):
    the exact permutation p-value of an overlap against chance."""
    return sum(pr for i, pr in _intersection_law(n, a, b) if _j(i, a, b) >= observed - 1e-12)


def _j(i: int, a: int, b: int) -> float:
    return 1.0 if a + b - i == 0 else i / (a + b - i)


def _intersection_law(n: int, a: int, b: int) -> list[tuple[int, float]]:
    if not (0 <= a <= n and 0 <= b <= n):
        raise ValueError(f"set sizes must lie in 0..n = {n}, got {a} and {b}")
    return [(i, math.comb(a, i) * math.comb(n - a, b - i) / math.comb(n, b)) for i in range(max(0, a + b - n), min(a, b) + 1)]


def compare_methods(model, task, ig_steps: int = 5, fractions: Sequence[float] = fa.DEFAULT_FRACTIONS,
                    random_seeds: Sequence[int] = range(5), pp_nodes: Optional[list] = None,
                    pp_how: str = "given", metric: str = "metric", batch_size: int = 32,
                    progress: bool = True, scores: Optional[dict] = None) -> MethodComparison:
    """Run every method on ``task`` and compute every curve (see the module docstring).

    ``pp_nodes``: the path-patching circuit, if already found (else :func:`path_patching_circuit` runs).
    ``metric``: what EAP attributes and the curves measure (``"metric"``: the task's own).
    ``scores``: ``{"EAP": EAPScores, "EAP-IG": EAPScores}`` already computed on ``task`` with ``metric`` (the
    notebook computes them in section 1); missing ones are computed here.
    """
    import time

    graph = EAPGraph.from_model(model)
    seconds = {}
    t = time.perf_counter()
    if pp_nodes is None:
        pp_nodes, pp_how = path_patching_circuit(model, task, progress=progress)
    seconds["path patching"] = time.perf_counter() - t
    edge_scores, node_scores, each = {}, {}, {}
    given = dict(scores or {})
    for name, m in (("EAP", 1), ("EAP-IG", ig_steps)):
        t = time.perf_counter()
        s = given.get(name) or eap_scores(model, task, metric=metric, batch_size=max(1, batch_size // m),
                                          progress=False, ig_steps=m)
        if s.edges is None or s.edges.shape[0] != len(task):
            raise ValueError(f"scores[{name!r}] must hold the edge scores of every example of this task "
                             f"({len(task)}); compute them with keep_edges=True on the same task")
        edge_scores[name] = s.edges.mean(0).float()
        node_scores[name] = s.node_vector()  # embed, then every head and MLP: what node_curve ranks
        each[name] = torch.cat([s.signed_embed[:, None], s.signed_nodes], 1).float()  # the same, per example
        seconds[name] = time.perf_counter() - t
    t = time.perf_counter()
    each["exact node patching"] = exact_node_effects(model, task, metric=metric, components=fa.node_names(graph)).float()
    node_scores["exact node patching"] = each["exact node patching"].mean(0)
    seconds["exact node patching"] = time.perf_counter() - t

    t = time.perf_counter()
    ends = torch.stack([fa.full_circuit(graph), torch.zeros_like(fa.full_circuit(graph))])
    m_full, m_empty = fa.patched_metric(model, task, ends, metric, batch_size=batch_size).tolist()
    ref = dict(metric=metric, reference=(m_full, m_empty), batch_size=batch_size)
    edge_curves = {n: fa.edge_curve(model, task, n, edge_scores[n], fractions, "absolute", **ref) for n in EDGE_METHODS}
    signed_curves = {n: fa.edge_curve(model, task, n, edge_scores[n], fractions, "signed", **ref) for n in EDGE_METHODS}
    node_curves = {n: fa.node_curve(model, task, n, node_scores[n], fractions, **ref) for n in NODE_METHODS}
    random_edges = fa.random_curves(model, task, fractions, random_seeds, **ref)
    random_nodes = fa.random_curves(model, task, fractions, random_seeds, nodes=True, **ref)
    pp_point = _pp_point(model, task, graph, pp_nodes, edge_scores, random_seeds, metric, batch_size, m_full, m_empty)
    seconds["faithfulness curves"] = time.perf_counter() - t
    return MethodComparison(task.name, metric, graph, edge_scores, node_scores, list(pp_nodes), pp_how,
                            edge_curves, node_curves, random_edges, random_nodes, pp_point,
                            settings={"ig_steps": ig_steps, "fractions": list(fractions),
                                      "random_seeds": list(random_seeds), "n_examples": len(task),
                                      "m_full": m_full, "m_empty": m_empty},
                            seconds=seconds, signed_edge_curves=signed_curves, node_scores_each=each)


def _pp_point(model, task, graph, pp_nodes, edge_scores, seeds, metric, batch_size, m_full, m_empty) -> dict:
    """The path-patching circuit's faithfulness, each method's top edges at exactly its number of edges (absolute
    ranking), and its matched random control: per seed, ``embed`` and the course's size-matched random circuit
    (:func:`~tutorial_lib.core.controls.size_matched_random`, ``match="auto"``: as many heads and MLPs, drawn
    from outside the circuit)."""
    pp_mask = pp_circuit(graph, pp_nodes)
    frac_pp = int(pp_mask.sum()) / fa.n_edges(graph)
    try:
        rand = [["embed"] + sorted(size_matched_random(model, pp_nodes, seed=s, match="auto").nodes, key=sort_key)
                for s in seeds]
    except ValueError:  # the circuit holds more than half the components: no control outside it
        rand = []
    at_pp = torch.stack([pp_mask] + [fa.top_edges(graph, edge_scores[n], [frac_pp])[0] for n in EDGE_METHODS]
                        + [fa.node_circuit(graph, r) for r in rand])
    f_at = fa.faithfulness(fa.patched_metric(model, task, at_pp, metric, batch_size), m_full, m_empty).tolist()
    k = 1 + len(EDGE_METHODS)
    return {"nodes": list(pp_nodes), "n_nodes": len(pp_nodes) + 1, "n_edges": int(pp_mask.sum()),
            "fraction_edges": frac_pp, "fraction_nodes": (len(pp_nodes) + 1) / len(fa.node_names(graph)),
            "f": f_at[0],
            # f of each method's top edges at exactly the path-patching circuit's number of edges
            "methods_f": dict(zip(EDGE_METHODS, f_at[1:k])),
            # the matched random control: embed and a size-matched random circuit from outside it, one per seed
            "random_f": f_at[k:], "random_nodes": rand}
