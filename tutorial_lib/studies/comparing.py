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
* **exact node patching** -- each head and MLP patched alone from the corrupted run (the ground-truth node
  ranking EAP's node scores estimate);
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

    def jaccard(self, k: Optional[int] = None, seeds: int = 2000):
        """Pairwise Jaccard overlap of the methods' node sets of size ``k`` (default: the path-patching
        circuit's size), and what two random sets of that size share on average."""
        import pandas as pd

        k = k or max(1, len(self.pp_nodes))
        sets = self.node_sets(k)
        if len(self.pp_nodes) != k:
            sets.pop("path patching")
        names = list(sets)
        table = pd.DataFrame([[jaccard(sets[a], sets[b]) for b in names] for a in names], index=names, columns=names)
        return table.round(3), random_jaccard(len(self.components), k, seeds)

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
        whether it changes, and how far the best method is from the random band on each axis (Markdown)."""
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
                f"* **{kind}** — linear axis: {fmt(lin)}; log axis: {fmt(log)}. "
                + ("The ranking is the same on both axes. " if same else "**The ranking changes with the axis.** ")
                + f"{lin[0][0]} against the random band: CPR {best.cpr():.2f} vs {r_lin:.2f} on the linear axis "
                f"(difference {best.cpr() - r_lin:.2f}), {best.cpr('log'):.2f} vs {r_log:.2f} on the log axis "
                f"(difference {best.cpr('log') - r_log:.2f}; ratio {_ratio(best.cpr(), r_lin)} → "
                f"{_ratio(best.cpr('log'), r_log)}).")
        lines.append("A tie is a CPR difference below 0.005. Edge CPRs are those of the signed ranking (MIB's), node "
                     "CPRs those of the |score| ranking. A claim that one method beats another should say which "
                     "axis it integrates over; edge and node curves have different x-axes and are ranked separately.")
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


def claim_facts(c: MethodComparison) -> list[tuple[str, bool, str]]:
    """Notebook 04's claims, read from ``c``: ``(name, holds, message)`` for :func:`tutorial_lib.course.claims.claim`.

    * ``04.eap-cpr-above-random`` / ``04.eap-ig-cpr-above-random``: the method's CPR (signed ranking, MIB's) is above
      the CPR of every random seed's curve;
    * ``04.pp-above-random``: the path-patching circuit's f is above that of every matched random control (embed and
      as many random heads and MLPs, one per seed).
    """
    rand = [r.cpr() for r in c.random_edges]
    out = []
    for m in EDGE_METHODS:
        cpr = c.mib(m).cpr()
        out.append((f"04.{m.lower()}-cpr-above-random", cpr > max(rand),
                    f"{m}'s CPR (signed ranking) {cpr:.3f} is not above every random seed's "
                    f"({', '.join(f'{v:.3f}' for v in rand)})"))
    pp = c.pp_point
    out.append(("04.pp-above-random", pp["f"] > max(pp["random_f"]),
                f"the path-patching circuit's f = {pp['f']:.3f} is not above every matched random circuit's "
                f"({', '.join(f'{v:.3f}' for v in pp['random_f'])}; embed and {pp['n_nodes'] - 1} random heads and MLPs)"))
    return out


def closest_to_exact(c: MethodComparison, k: Optional[int] = None) -> set:
    """The method(s) whose top-``k`` node set overlaps exact node patching's the most (Jaccard; ties: all)."""
    table, _ = c.jaccard(k)
    row = table.loc["exact node patching"].drop("exact node patching")
    return set(row.index[row == row.max()])


def curve_summary(c: MethodComparison, level: float = 0.8) -> str:
    """What the faithfulness curves of this run show, in Markdown, every number read from ``c``."""
    def size(x):
        return "never" if x is None else f"{x:.1%}"

    lines = []
    rand = c.random_edges
    facts = curve_facts(c, level)
    r_at = facts["random_first_at"]
    r_txt = ", ".join(size(x) for x in r_at)
    for name, cur in c.edge_curves.items():
        sg = c.signed_edge_curves[name]
        lines.append(f"* **{name}** (edges) reaches f ≥ {level} at {size(_first_at(cur, level))} of the edges ranked by "
                     f"|score| and at {size(_first_at(sg, level))} ranked signed; MIB's CPR (signed ranking) "
                     f"{sg.cpr():.2f}, CMD (|score| ranking) {cur.cmd():.2f}; f at 1%: {cur.at(0.01):.2f} (|score|), "
                     f"{sg.at(0.01):.2f} (signed), at 10%: {cur.at(0.1):.2f} (|score|), {sg.at(0.1):.2f} (signed).")
    lines.append(f"* **Random edge circuits** reach f ≥ {level} at: {r_txt} (one per seed); mean CPR "
                 f"{sum(r.cpr() for r in rand) / len(rand):.2f}, highest {max(r.cpr() for r in rand):.2f}.")
    for name, cur in c.node_curves.items():
        lines.append(f"* **{name}** (nodes, |score| ranking) reaches f ≥ {level} at {size(_first_at(cur, level))} of "
                     f"the nodes (CPR {cur.cpr():.2f}).")
    pp = c.pp_point
    r_f = pp["random_f"]
    lines.append(f"* The **path-patching circuit** (embed and {pp['n_nodes'] - 1} heads and MLPs, {pp['n_edges']} edges "
                 f"= {pp['fraction_edges']:.1%} of the edges) has f = {pp['f']:.2f}; embed and {pp['n_nodes'] - 1} random "
                 f"heads and MLPs have f = {', '.join(f'{v:.2f}' for v in r_f)} (one per seed); with the same number of "
                 "edges, " + " and ".join(f"{m}'s top edges (|score|) have f = {v:.2f}" for m, v in pp["methods_f"].items())
                 + ".")
    lines.append(f"* Up to 10% of the edges, EAP-IG's curve lies above EAP's at {facts['ig_above']} of "
                 f"{facts['n_small']} sizes and below it at {facts['ig_below']}. **Paper** (MIB, Mueller et al. 2025): EAP-IG (integrating over the inputs) ranked "
                 "above plain EAP on most tasks and models; check whether this run agrees.")
    over = max(max(cur.f) for cur in [*c.edge_curves.values(), *c.signed_edge_curves.values(), *c.node_curves.values()])
    if over > 1.05:
        lines.append(f"* Some circuits score above 1 (up to f = {over:.2f}): they leave out components that work "
                     "*against* the task, so the circuit does the task better than the whole model. CMD counts that "
                     "as distance from the model; CPR rewards it.")
    return "\n".join(lines)


def _sd(v: Sequence[float]) -> float:
    m = sum(v) / len(v)
    return math.sqrt(sum((x - m) ** 2 for x in v) / max(1, len(v) - 1))


def _top(components: list, scores: Tensor, k: int) -> list:
    order = scores.abs().argsort(descending=True, stable=True).tolist()
    return sorted((components[i] for i in order[:k]), key=sort_key)


def random_jaccard(n: int, k: int, draws: int = 2000, seed: int = 0) -> float:
    """Mean Jaccard overlap of two random ``k``-subsets of ``n`` items (Monte Carlo, seeded)."""
    g = torch.Generator().manual_seed(seed)
    a = torch.rand(draws, n, generator=g).argsort(1)[:, :k]
    b = torch.rand(draws, n, generator=g).argsort(1)[:, :k]
    ma = torch.zeros(draws, n, dtype=torch.bool).scatter_(1, a, True)
    mb = torch.zeros(draws, n, dtype=torch.bool).scatter_(1, b, True)
    return float(((ma & mb).sum(1) / (ma | mb).sum(1)).mean())


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
    edge_scores, node_scores = {}, {}
    given = dict(scores or {})
    for name, m in (("EAP", 1), ("EAP-IG", ig_steps)):
        t = time.perf_counter()
        s = given.get(name) or eap_scores(model, task, metric=metric, batch_size=max(1, batch_size // m),
                                          progress=False, ig_steps=m)
        if s.edges is None or s.edges.shape[0] != len(task):
            raise ValueError(f"scores[{name!r}] must hold the edge scores of every example of this task "
                             f"({len(task)}); compute them with keep_edges=True on the same task")
        edge_scores[name] = s.edges.mean(0).float()
        # embed's node score is, like every node's, the sum of its outgoing edge scores
        node_scores[name] = torch.cat([edge_scores[name][0].sum()[None], s.signed_nodes.mean(0).float()])
        seconds[name] = time.perf_counter() - t
    t = time.perf_counter()
    node_scores["exact node patching"] = exact_node_effects(model, task, metric=metric,
                                                            components=fa.node_names(graph)).mean(0).float()
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
                            seconds=seconds, signed_edge_curves=signed_curves)


def _pp_point(model, task, graph, pp_nodes, edge_scores, seeds, metric, batch_size, m_full, m_empty) -> dict:
    """The path-patching circuit's faithfulness, each method's top edges at exactly its number of edges (absolute
    ranking), and its matched random control: per seed, ``embed`` and as many random heads and MLPs."""
    pp_mask = pp_circuit(graph, pp_nodes)
    frac_pp = int(pp_mask.sum()) / fa.n_edges(graph)
    comps = graph.components
    rand = [["embed"] + [comps[i] for i in torch.randperm(len(comps), generator=torch.Generator().manual_seed(s))
                         [:len(pp_nodes)].tolist()] for s in seeds]
    at_pp = torch.stack([pp_mask] + [fa.top_edges(graph, edge_scores[n], [frac_pp])[0] for n in EDGE_METHODS]
                        + [fa.node_circuit(graph, r) for r in rand])
    f_at = fa.faithfulness(fa.patched_metric(model, task, at_pp, metric, batch_size), m_full, m_empty).tolist()
    k = 1 + len(EDGE_METHODS)
    return {"nodes": list(pp_nodes), "n_nodes": len(pp_nodes) + 1, "n_edges": int(pp_mask.sum()),
            "fraction_edges": frac_pp, "fraction_nodes": (len(pp_nodes) + 1) / len(fa.node_names(graph)),
            "f": f_at[0],
            # f of each method's top edges at exactly the path-patching circuit's number of edges
            "methods_f": dict(zip(EDGE_METHODS, f_at[1:k])),
            # the matched random control: embed and len(pp_nodes) random heads and MLPs, one per seed
            "random_f": f_at[k:], "random_nodes": rand}


# ---- folded answers of notebook 04 (reading.answer): every number read from the run ----

def completeness_answer(table) -> str:
    """The answer to "why does m = 1 miss metric(corrupt) − metric(clean), and a larger m get closer?", from the
    completeness table of notebook 04 (index m; columns "sum of embed's edge scores" and the gap)."""
    sums, gap = table["sum of embed's edge scores"], table.iloc[:, 1]
    errs = {m: abs(s - g) / max(abs(g), 1e-9) for m, s, g in zip(table.index, sums, gap)}
    parts = ", ".join(f"m = {m}: {100 * e:.0f}% off" for m, e in errs.items())
    m_min, m_max = min(errs), max(errs)
    trend = ("gets closer as m grows" if errs[m_max] < errs[m_min] else
             "does not get closer as m grows on this run (the metric is close to linear along the line)")
    over = [m for m, sm, g in zip(table.index, sums, gap) if abs(sm) > 1.1 * abs(g) and sm * g > 0]
    overshoot = (f" At m = {', '.join(str(m) for m in over)} the sum overshoots: a sum over a few points, each "
                 "the gradient at the right end of its piece of the line, overshoots where the metric changes steeply "
                 "between points; more points shrink the pieces." if over else "")
    return ("Summed over its receivers, the embedding's edge scores are the gradient at each point times the input "
            "difference, averaged over the m points, with x_s^corrupt − x_s^clean as the difference: a Riemann sum of the "
            "integral of the gradient along the straight line, which is exactly metric(corrupt) − metric(clean) (the "
            "fundamental theorem of calculus, along the line). With m = 1 the only point is the clean end, where a "
            "saturated metric is flat; more points sample the part of the line where it changes. "
            f"On this run: {parts}; the sum {trend}.{overshoot}")


def random_band_answer(c: MethodComparison, level: float = 0.8) -> str:
    """The answer to "why do random circuits need so many edges?", from the curves of ``c``."""
    n = fa.n_edges(c.graph)
    pp = c.pp_point
    at = curve_facts(c, level)["random_first_at"]
    before_full = [x for x in at if x is not None and x < 1.0]
    x_half = min(c.random_edges[0].fractions, key=lambda x: abs(x - 0.5))  # the grid's size nearest one half
    half = sum(r.at(x_half) for r in c.random_edges) / len(c.random_edges)
    reach = (f"{len(at) - len(before_full)} of {len(at)} seeds stay below f = {level} until every edge is in (where f = 1 "
             "by definition)" + (f"; {'the other reaches' if len(before_full) == 1 else 'the others reach'} it at "
                                 f"{', '.join(f'{x:.0%}' for x in sorted(before_full))} of the edges"
                                 if before_full else ""))
    return (f"A circuit keeps the task only if *every* edge of the paths the task runs on is in it: a random circuit "
            f"with a fraction x of the edges keeps a given path of k edges with probability x^k (at x = 0.5, a path of 3 "
            f"edges survives one time in 8), and the task needs several such paths at once. The metric adds a second "
            f"reason: a probability that saturates barely moves until most of the signal is back, so a random circuit "
            f"that keeps part of it scores near 0. On this run random circuits with {x_half:.0%} of the edges reach "
            f"f = {half:.2f} on average, and {reach}; the path-patching circuit has {pp['n_edges']} of the {n} edges "
            f"({pp['fraction_edges']:.1%}) and f = {pp['f']:.2f}. That gap, not f itself, is what a method is judged by.")


def agreement_answer(c: MethodComparison) -> str:
    """The answer to "if the methods agree, is their circuit therefore right?", from ``c``."""
    table, chance = c.jaccard()
    others = [m for m in table.columns if m != "exact node patching"]
    j = ", ".join(f"{m} {table.loc['exact node patching', m]:.2f}" for m in others)
    kept = c.kept_by_all()
    e, g = c.edge_curves["EAP"], c.edge_curves["EAP-IG"]
    return (f"No. Agreement says the methods read the same signal: at k = {len(c.pp_nodes)} every method keeps "
            f"{', '.join(kept) or 'no common component'}, and their overlap with exact node patching is {j} (two random "
            f"sets: {chance:.2f}). EAP and EAP-IG share their gradients and all of them read the same metric, so a bias "
            "of one is a bias of all. **Paper** (Hanna, Pezzelle & Belinkov 2024): EAP's and EAP-IG's circuits both "
            "overlap the reference circuits in their nodes, yet EAP-IG's are more faithful; overlap is no substitute for "
            f"faithfulness. On this run, at 1% of the edges EAP's top edges have f = {e.at(0.01):.2f} and EAP-IG's "
            f"f = {g.at(0.01):.2f}. What supports a circuit is its faithfulness (f = {c.pp_point['f']:.2f} for the "
            f"path-patching circuit at {c.pp_point['fraction_edges']:.1%} of the edges, against the random band of "
            "section 3); what would show it *necessary* are the ablations of notebooks 01 and 02, which this notebook "
            "does not run.")
