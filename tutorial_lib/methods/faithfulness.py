"""How faithful is a circuit? Edge patching, faithfulness curves, CPR and CMD (MIB's circuit-localisation track).

A *circuit* here is a set of edges of the graph that EAP scores (:class:`~tutorial_lib.methods.attribution.EAPGraph`):
senders ``embed``, every head ``a{l}.h{h}`` and every MLP ``m{l}``; receivers the q, k and v inputs of every
head, every MLP's input and ``logits``. To run "only the circuit", every edge *outside* it carries the
corrupted run's value of its sender into its receiver; the circuit's edges carry the value the sender has
in this patched run itself (so a circuit edge downstream of a corrupted one sees the change)::

    input of receiver r = Σ over senders s upstream of r of   out_s(patched run)   if (s -> r) in C
                                                              out_s(corrupted run) otherwise
                        = residual of the patched run at r  -  Σ_{(s -> r) not in C} (out_s(patched) - out_s(corrupted))

Then with ``m(.)`` the task's metric averaged over the examples (Mueller et al. 2025, MIB)::

    f(C) = (m(C) - m(∅)) / (m(M) - m(∅))

``m(M)`` is the clean run (every edge in: nothing is patched) and ``m(∅)`` the corrupted run (every edge out:
each receiver sees only corrupted values, so every activation is the corrupted run's). Both are exact by
construction, so f(full) = 1 and f(empty) = 0 up to float rounding; the tests check it.

Why not path patching? Path patching (:mod:`.path_patching`) freezes every path but the patched one at its
clean value; here nothing is frozen: the whole model runs, and only the edges outside the circuit are cut.
The two agree in one case, which the tests use as an independent check: a circuit that is *every edge but
one* ``s -> r`` is exactly path patching from sender ``s`` into receiver ``r``.

The **curve** puts circuits of growing size (top-k edges of a ranking, k from 0.1% to 100% of the edges, or
top-k nodes) against f. A ranking orders the scores one of two ways (:class:`Ranking`): ``"signed"``, the
edges the task needs most first, or ``"absolute"``, the largest effects of either sign first. MIB's circuit
track reads CPR from the signed ranking (the circuit that best *performs* the task) and CMD from the absolute
one (the circuit closest to the *model*); :func:`mib_curves` computes both and :class:`MIBAreas` reads each
area from its own ranking (mixing them up gave a CMD of 0.72 against the paper's 0.38: MIB-circuit-track
issue #19).

A **node circuit** is a set of nodes -- ``embed``, heads, MLPs -- and holds every edge between two of its nodes:
``s -> r`` with ``s`` in the set and ``r`` an input of a node in the set or ``logits``. ``logits`` is where every
circuit is read, so it is always a receiver; ``embed`` is a node like any other, in the circuit only when it is
chosen (ranked high enough, or listed). So the node circuit of size 0 is the empty edge set, f = 0 exactly, and a
node circuit without ``embed`` has no path from the input at all: every one of its receivers sees the corrupted
run, and its f is 0 too. **CPR** (integrated circuit performance ratio) is the area under f, higher is better;
**CMD** (integrated circuit-model distance) the area under |1 - f|, lower is better. Both use the trapezoid
rule over the x-axis "fraction of edges kept" on a linear scale from 0 to 1, as MIB does. On that axis the
points below 10% of the edges, where circuits differ most, fill a tenth of the width; :func:`area` with
``x_scale="log"`` integrates over log10(fraction) instead (from the smallest size to 1, normalised to a width of
one), which weighs small circuits more. The notebook shows how much the ranking of methods depends on it.

Speed: one forward pass per batch of circuits -- ``chunk`` circuits times the examples run side by side, and
the correction at each receiver is one batched matrix product over all senders (no hook per edge), computed
only from the first position where the clean and corrupted prompts differ (before it every run is identical).
``benchmarks/faithfulness_curve.py`` times a whole curve against a reference that loops over edges.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Optional, Sequence, Union

import torch
from torch import Tensor

from ..core.components import parse
from ..tasks.base import TaskData
from ._edge_engine import patched_metric  # noqa: F401  (the edge-patching engine lives there)
from .attribution import EAPGraph, MetricArg

#: MIB's circuit sizes (fraction of edges) plus the points between them that a 20-point curve adds
DEFAULT_FRACTIONS = (0.0, 0.001, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15,
                     0.2, 0.3, 0.4, 0.5, 0.7, 0.85, 1.0)
#: the sizes MIB's circuit track evaluates (fraction of edges), plus 0: the short curve for large models on a CPU
MIB_FRACTIONS = (0.0, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0)


# ----------------------------------------------------------------------------------------- circuits
def full_circuit(graph: EAPGraph) -> Tensor:
    """Every edge of the graph."""
    return graph.edge_mask()


def edge_index(graph: EAPGraph, name: str) -> tuple[int, int]:
    """``(sender, receiver)`` indices of an edge named ``"a0.h1->a2.h3.q"`` (or ``"embed->m0"``, ``"m3->logits"``)."""
    if "->" not in name:
        raise ValueError(f"an edge is named 'sender->receiver' (e.g. 'a0.h1->a2.h3.q'), got {name!r}")
    s, r = (x.strip() for x in name.split("->", 1))
    if s not in graph.senders:
        raise ValueError(f"unknown sender {s!r} in edge {name!r}; senders: 'embed', 'a<l>.h<h>', 'm<l>' "
                         f"(this model: layers 0..{graph.n_layers - 1}, heads 0..{graph.n_heads - 1})")
    if r not in graph.receivers:
        raise ValueError(f"unknown receiver {r!r} in edge {name!r}; receivers: 'a<l>.h<h>.q|k|v', 'm<l>', 'logits'")
    i, j = graph.senders.index(s), graph.receivers.index(r)
    if not bool(graph.edge_mask()[i, j]):
        raise ValueError(f"{name!r} is not an edge: {s} does not sit before {r} in the residual stream")
    return i, j


def edge_names(graph: EAPGraph, mask: Tensor) -> list[str]:
    """Names ``"sender->receiver"`` of the edges where ``mask`` is True (residual order)."""
    m = mask.bool() & graph.edge_mask()
    return [f"{graph.senders[i]}->{graph.receivers[j]}" for i, j in m.nonzero().tolist()]


def receiver_node(name: str) -> str:
    return name.rsplit(".", 1)[0] if name.endswith((".q", ".k", ".v")) else name


def node_names(graph: EAPGraph) -> list[str]:
    """The nodes a node circuit is chosen from, in residual order: ``embed``, then every head and MLP (the
    graph's senders). ``logits`` is not among them: it is in every circuit (see :func:`node_circuit`)."""
    return list(graph.senders)


def node_circuit(graph: EAPGraph, nodes: Sequence[str]) -> Tensor:
    """The edges among ``nodes``: ``s -> r`` is kept when ``s`` is one of ``nodes`` and ``r`` is ``logits`` or an
    input (q, k, v, MLP input) of one of ``nodes``.

    ``logits`` is always a receiver (every circuit is read there; listing it changes nothing). ``embed`` is a node
    like any other: its edges are in only when ``"embed"`` is listed. No nodes: no edges (f = 0 exactly).

    >>> names = edge_names(graph, node_circuit(graph, ["embed", "a0.h1"]))  # doctest: +SKIP
    ['embed->a0.h1.q', 'embed->a0.h1.k', 'embed->a0.h1.v', 'embed->logits', 'a0.h1->logits']
    """
    keep = {str(parse(n)) if n not in ("embed", "logits") else n for n in nodes}
    unknown = sorted(keep - set(graph.senders) - {"logits"})
    if unknown:
        raise ValueError(f"unknown components {unknown}; accepted: 'embed', the heads and MLPs of this model "
                         f"({graph.components[0]} ... {graph.components[-1]}), and 'logits' (always in)")
    keep.add("logits")
    s_in = torch.tensor([s in keep for s in graph.senders])
    r_in = torch.tensor([receiver_node(r) in keep for r in graph.receivers])
    return s_in[:, None] & r_in[None, :] & graph.edge_mask()


def n_edges(graph: EAPGraph) -> int:
    return int(graph.edge_mask().sum())


def size_to_count(fraction: float, total: int) -> int:
    """Number of items in a circuit of ``fraction`` of ``total``: ``round(fraction * total)``, at least 1
    for a fraction above 0."""
    if not 0 <= fraction <= 1:
        raise ValueError(f"a circuit size is a fraction in [0, 1], got {fraction!r}")
    return 0 if fraction == 0 else max(1, int(round(fraction * total)))


class Ranking(str, Enum):
    """How scores order edges (or nodes) into circuits of growing size.

    The course's EAP, EAP-IG and exact-patching scores estimate ``m(the edge cut) - m(clean)``: an edge the task
    needs has a *negative* score, one that works against the task a positive score.

    * ``SIGNED`` -- the edges the task needs most first: ascending score (most negative first); edges that work
      against the task come last. MIB's ranking for **CPR**, the circuit that best performs the task. (MIB's scores
      carry the opposite sign -- they attribute a loss -- and it sorts them descending: the same order.)
    * ``ABSOLUTE`` -- the largest effects of either sign first: descending ``|score|``. MIB's ranking for **CMD**,
      the circuit closest to the model, which must keep what works against the task too.
    """

    SIGNED = "signed"
    ABSOLUTE = "absolute"

    @classmethod
    def of(cls, value: Union["Ranking", str]) -> "Ranking":
        try:
            return cls(value)
        except ValueError:
            raise ValueError(f"ranking must be one of {[r.value for r in cls]} (or a Ranking), got {value!r}") from None


def rank_order(scores: Tensor, ranking: Union[Ranking, str] = Ranking.ABSOLUTE, valid: Optional[Tensor] = None) -> Tensor:
    """Indices of the flattened ``scores`` from first to last in ``ranking``; entries where ``valid`` is False
    go last. Ties keep index order.

    >>> rank_order(torch.tensor([0.5, -0.9, -0.2]), "signed").tolist()
    [1, 2, 0]
    >>> rank_order(torch.tensor([0.5, -0.9, -0.2]), "absolute").tolist()
    [1, 0, 2]
    """
    key = scores.float().flatten()
    key = key.abs() if Ranking.of(ranking) is Ranking.ABSOLUTE else -key
    if valid is not None:
        key = key.masked_fill(~valid.flatten(), -math.inf)
    return key.argsort(descending=True, stable=True)


def top_edges(graph: EAPGraph, scores: Tensor, fractions: Sequence[float],
              ranking: Union[Ranking, str] = Ranking.ABSOLUTE) -> Tensor:
    """Circuits of the top-k edges of ``scores`` (``[n_senders, n_receivers]``) in ``ranking`` (:class:`Ranking`:
    ``"absolute"``, by ``|score|``, the default; ``"signed"``, most negative first) at each size: ``[len, S, R]``."""
    edge = graph.edge_mask()
    if tuple(scores.shape) != tuple(edge.shape):
        raise ValueError(f"edge scores must be [{edge.shape[0]} senders, {edge.shape[1]} receivers], got {tuple(scores.shape)}")
    order = rank_order(scores, ranking, edge)
    total = int(edge.sum())
    out = torch.zeros(len(fractions), edge.numel(), dtype=torch.bool)
    for i, f in enumerate(fractions):
        out[i, order[:size_to_count(f, total)]] = True
    return out.view(len(fractions), *edge.shape)


def top_nodes(graph: EAPGraph, scores: Tensor, fractions: Sequence[float],
              ranking: Union[Ranking, str] = Ranking.ABSOLUTE) -> tuple[Tensor, list]:
    """Node circuits (:func:`node_circuit`) of the top-k nodes of ``scores`` -- one per node of
    :func:`node_names`: ``embed``, then every head and MLP -- in ``ranking`` at each size: the edge masks
    ``[len, S, R]`` and the node lists. Size 0 is the empty circuit."""
    names = node_names(graph)
    if tuple(scores.shape) != (len(names),):
        hint = (" (the embedding is a node too: put its score first)" if tuple(scores.shape) == (len(names) - 1,)
                else "")
        raise ValueError(f"node scores must have one value per node, 'embed' then every head and MLP ({len(names)}), "
                         f"got shape {tuple(scores.shape)}{hint}")
    order = rank_order(scores, ranking).tolist()
    lists = [[names[i] for i in order[:size_to_count(f, len(names))]] for f in fractions]
    return torch.stack([node_circuit(graph, nodes) for nodes in lists]), lists


def random_scores(graph: EAPGraph, seed: int, nodes: bool = False) -> Tensor:
    """Scores that rank edges (or the nodes of :func:`node_names`) in a uniformly random order, in either
    :class:`Ranking`: random circuits of every size."""
    g = torch.Generator().manual_seed(seed)
    shape = (len(node_names(graph)),) if nodes else tuple(graph.edge_mask().shape)
    return torch.rand(shape, generator=g)


# ----------------------------------------------------------------------------------------- areas
def area(x: Sequence[float], y: Sequence[float], x_scale: str = "linear") -> float:
    """Trapezoid area under ``y(x)``. ``x_scale="log"``: over log10(x) for x > 0, divided by the width of that
    range (so that a curve equal to 1 everywhere has area 1 on both scales)."""
    x, y = torch.as_tensor(x, dtype=torch.float64), torch.as_tensor(y, dtype=torch.float64)
    if x.shape != y.shape or x.ndim != 1 or len(x) < 2:
        raise ValueError(f"x and y must be 1-D of the same length >= 2, got {tuple(x.shape)} and {tuple(y.shape)}")
    if bool((x[1:] <= x[:-1]).any()):
        raise ValueError("x must be strictly increasing (circuit sizes from small to large)")
    if x_scale == "log":
        keep = x > 0
        x, y = torch.log10(x[keep]), y[keep]
        return float(torch.trapezoid(y, x) / (x[-1] - x[0]))
    if x_scale != "linear":
        raise ValueError(f"x_scale must be 'linear' or 'log', got {x_scale!r}")
    return float(torch.trapezoid(y, x))


def cpr(x, f, x_scale: str = "linear") -> float:
    """Integrated circuit performance ratio: the area under the faithfulness curve (higher is better)."""
    return area(x, f, x_scale)


def cmd(x, f, x_scale: str = "linear") -> float:
    """Integrated circuit-model distance: the area under |1 - f| (lower is better)."""
    return area(x, [abs(1 - v) for v in torch.as_tensor(f, dtype=torch.float64).tolist()], x_scale)


# ----------------------------------------------------------------------------------------- curves
@dataclass
class FaithfulnessCurve:
    """One method's curve: ``f[i]`` at circuit size ``fractions[i]`` (of the edges, or of the nodes)."""

    method: str
    fractions: list
    f: list
    metric: list  # m(C) at each size
    m_full: float
    m_empty: float
    kind: str = "edges"  # what the x-axis counts: "edges" or "nodes"
    n_edges: list = field(default_factory=list)  # edges in each circuit
    nodes: list = field(default_factory=list)  # node circuits: the nodes at each size
    settings: dict = field(default_factory=dict)
    ranking: str = "absolute"  # how the scores were ordered into circuits (Ranking's value)

    def cpr(self, x_scale: str = "linear") -> float:
        return cpr(self.fractions, self.f, x_scale)

    def cmd(self, x_scale: str = "linear") -> float:
        return cmd(self.fractions, self.f, x_scale)

    def at(self, fraction: float) -> float:
        """f at the size closest to ``fraction``."""
        i = min(range(len(self.fractions)), key=lambda j: abs(self.fractions[j] - fraction))
        return self.f[i]


def faithfulness(m: Tensor | float, m_full: float, m_empty: float) -> Tensor:
    """``(m - m_empty) / (m_full - m_empty)``; raises when the full and empty runs score the same, equal up to
    float32 rounding *relative to their size*: the two runs take different code paths (identical inputs differed
    by ~5e-7 on a CPU), and a real gap can be small in absolute terms (a random-weight GPT-2-shaped model's
    clean and corrupted runs scored 0.001838 and 0.00183)."""
    gap, scale = abs(m_full - m_empty), max(abs(m_full), abs(m_empty))
    if not math.isfinite(m_full - m_empty) or gap <= 1e-5 * scale or gap < 1e-12:
        raise ValueError(f"the clean run ({m_full:.4g}) and the corrupted run ({m_empty:.4g}) score the same on this "
                         "metric: faithfulness is undefined; pick a task or metric where corrupting changes it")
    return (torch.as_tensor(m) - m_empty) / (m_full - m_empty)


def curve_from_masks(model, task: TaskData, method: str, masks: Tensor, fractions: Sequence[float],
                     metric: MetricArg = "metric", kind: str = "edges", nodes=None, settings=None,
                     reference: Optional[tuple] = None, batch_size: int = 64,
                     ranking: Union[Ranking, str] = Ranking.ABSOLUTE) -> FaithfulnessCurve:
    """Evaluate circuits ``masks[i]`` (size ``fractions[i]``) and build their curve. ``reference``: the
    ``(m_full, m_empty)`` pair, if already computed (they are two more circuits otherwise). ``ranking``: how the
    masks were ranked, recorded on the curve."""
    graph = EAPGraph.from_model(model)
    if reference is None:
        ends = torch.stack([full_circuit(graph), torch.zeros_like(full_circuit(graph))])
        m_full, m_empty = patched_metric(model, task, ends, metric, batch_size).tolist()
    else:
        m_full, m_empty = reference
    vals = patched_metric(model, task, masks, metric, batch_size)
    f = faithfulness(vals, m_full, m_empty)
    return FaithfulnessCurve(method, [float(x) for x in fractions], f.tolist(), vals.tolist(), m_full, m_empty, kind,
                             [int(x) for x in (masks & graph.edge_mask()).sum((1, 2))], nodes or [], settings or {},
                             Ranking.of(ranking).value)


def edge_curve(model, task, method: str, scores: Tensor, fractions=DEFAULT_FRACTIONS,
               ranking: Union[Ranking, str] = Ranking.ABSOLUTE, **kw) -> FaithfulnessCurve:
    """Faithfulness curve of the top-k edges of ``scores`` (``[n_senders, n_receivers]``) in ``ranking``
    (``"absolute"``: by |score|, the default; ``"signed"``: the edges the task needs most first)."""
    graph = EAPGraph.from_model(model)
    return curve_from_masks(model, task, method, top_edges(graph, scores, fractions, ranking), fractions,
                            ranking=ranking, **kw)


def node_curve(model, task, method: str, scores: Tensor, fractions=DEFAULT_FRACTIONS,
               ranking: Union[Ranking, str] = Ranking.ABSOLUTE, **kw) -> FaithfulnessCurve:
    """Faithfulness curve of the top-k nodes of ``scores`` (one per node of :func:`node_names`: ``embed``, then
    every head and MLP) in ``ranking``; the x-axis counts nodes, and size 0 is the empty circuit."""
    graph = EAPGraph.from_model(model)
    masks, lists = top_nodes(graph, scores, fractions, ranking)
    return curve_from_masks(model, task, method, masks, fractions, kind="nodes", nodes=lists, ranking=ranking, **kw)


@dataclass
class MIBAreas:
    """One method's two numbers as MIB's circuit track defines them: **CPR** is the area under the curve of the
    *signed* ranking (the circuit that best performs the task), **CMD** the area under |1 - f| of the *absolute*
    ranking (the circuit closest to the model)."""

    signed: FaithfulnessCurve
    absolute: FaithfulnessCurve

    def __post_init__(self):
        if (self.signed.ranking, self.absolute.ranking) != ("signed", "absolute"):
            raise ValueError(f"MIBAreas takes a signed and an absolute curve, got {self.signed.ranking!r} and "
                             f"{self.absolute.ranking!r}")

    def cpr(self, x_scale: str = "linear") -> float:
        return self.signed.cpr(x_scale)

    def cmd(self, x_scale: str = "linear") -> float:
        return self.absolute.cmd(x_scale)


def mib_curves(model, task, method: str, scores: Tensor, fractions=DEFAULT_FRACTIONS, **kw) -> MIBAreas:
    """Both edge curves of ``scores`` -- signed and absolute ranking -- as :class:`MIBAreas`: ``.cpr()`` and
    ``.cmd()`` are MIB's CPR and CMD."""
    return MIBAreas(edge_curve(model, task, method, scores, fractions, Ranking.SIGNED, **kw),
                    edge_curve(model, task, method, scores, fractions, Ranking.ABSOLUTE, **kw))


def random_curves(model, task, fractions=DEFAULT_FRACTIONS, seeds: Sequence[int] = (0, 1, 2, 3, 4),
                  nodes: bool = False, **kw) -> list[FaithfulnessCurve]:
    """Curves of random circuits of the same sizes, one per seed (edges, or nodes with ``nodes=True``)."""
    graph = EAPGraph.from_model(model)
    make = node_curve if nodes else edge_curve
    return [make(model, task, f"random (seed {s})", random_scores(graph, s, nodes), fractions, **kw) for s in seeds]


# ----------------------------------------------------------------------------------------- exchange
def circuit_to_json(graph: EAPGraph, mask: Tensor, method: str, settings: Optional[dict] = None,
                    scores: Optional[Tensor] = None, path: Union[str, Path, None] = None) -> dict:
    """A circuit as JSON: its edges ``"sender->receiver"``, its nodes, the edge scores (if given), the method and
    its settings, and the graph's shape. Written to ``path`` if given; :func:`circuit_from_json` reads it back."""
    names = edge_names(graph, mask)
    m = mask.bool() & graph.edge_mask()
    nodes = sorted({graph.senders[i] for i, _ in m.nonzero().tolist()} |
                   {receiver_node(graph.receivers[j]) for _, j in m.nonzero().tolist()},
                   key=lambda n: (n != "embed", n == "logits", graph.senders.index(n) if n in graph.senders else 0))
    doc = {"format": "tutorial_lib circuit v1", "method": method, "settings": settings or {},
           "graph": {"n_layers": graph.n_layers, "n_heads": graph.n_heads, "has_mlp": graph.has_mlp,
                     "n_edges": n_edges(graph)},
           "nodes": nodes, "edges": names}
    if scores is not None:
        doc["scores"] = {name: float(scores[i, j]) for name, (i, j) in zip(names, m.nonzero().tolist())}
    if path is not None:
        Path(path).write_text(json.dumps(doc, indent=1))
    return doc


def circuit_from_json(graph: EAPGraph, doc: Union[dict, str, Path]) -> tuple[Tensor, dict]:
    """Read a circuit written by :func:`circuit_to_json` (a dict, a JSON string or a file): ``(mask, doc)``.
    A circuit saved from another model shape, or naming an edge this graph lacks, is refused."""
    if isinstance(doc, Path) or (isinstance(doc, str) and not doc.lstrip().startswith("{")):
        doc = json.loads(Path(doc).read_text())
    elif isinstance(doc, str):
        doc = json.loads(doc)
    shape = doc.get("graph", {})
    mine = {"n_layers": graph.n_layers, "n_heads": graph.n_heads, "has_mlp": graph.has_mlp}
    other = {k: shape.get(k) for k in mine}
    if other != mine:
        raise ValueError(f"this circuit was saved from a model with {other}, not this one's {mine}")
    mask = torch.zeros(len(graph.senders), len(graph.receivers), dtype=torch.bool)
    for name in doc.get("edges", []):
        mask[edge_index(graph, name)] = True
    return mask, doc


# ----------------------------------------------------------------------------------------- other libraries' names
def to_eap_ig_name(edge: str) -> str:
    """This course's edge name in the EAP-IG library's (and MIB's) spelling: ``embed`` is ``input`` and a head's
    input is written ``<q>``: ``"embed->a2.h3.q"`` -> ``"input->a2.h3<q>"``; ``"m0->logits"`` stays."""
    s, r = edge.split("->", 1)
    s = "input" if s == "embed" else s
    if r.endswith((".q", ".k", ".v")):
        r = f"{r[:-2]}<{r[-1]}>"
    return f"{s}->{r}"


def from_eap_ig_name(edge: str) -> str:
    """The inverse of :func:`to_eap_ig_name`: ``"input->a2.h3<q>"`` -> ``"embed->a2.h3.q"``."""
    if "->" not in edge:
        raise ValueError(f"an EAP-IG edge is named 'parent->child' (e.g. 'input->a0.h1<q>'), got {edge!r}")
    s, r = edge.split("->", 1)
    s = "embed" if s == "input" else s
    if r.endswith(("<q>", "<k>", "<v>")):
        r = f"{r[:-3]}.{r[-2]}"
    return f"{s}->{r}"
