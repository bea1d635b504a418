"""Notebook 05: every method scored against a circuit known by construction (:mod:`tutorial_lib.zoo.answer_key`).

* :func:`verify_key` -- the construction checked by ablation (:mod:`tutorial_lib.core.circuits`, one definition of
  each ablation): ablating the circuit destroys the task; each distractor alone, and ``n_random`` random
  size-matched sets of distractors (:func:`~tutorial_lib.core.controls.size_matched_random`), do not; every
  ground-truth edge cut alone (:func:`~tutorial_lib.methods.edge_ablation.edge_cut_effects`) changes the metric.
* :func:`score_key` -- every method's edge and node rankings (path patching: the |path effect| of each sender into
  each receiver, from :func:`~tutorial_lib.methods.path_patching.path_patch_sweep`; EAP; EAP-IG; exact node
  patching; a node's score is the signed sum of its outgoing edges' for every edge method, ranked by size; on the
  induction key the spectral recipe's steps 2-3: attention-pattern scores, then the group
  ablation against layer-matched random heads), their ROC / AUROC (:mod:`tutorial_lib.methods.recovery`),
  precision at the true size, the faithfulness of each method's top edges at the true circuit's number of edges
  against random rankings, and the path-patching search of notebook 04 (:func:`~.comparing.path_patching_search`)
  as one point on the ROC plane.
* :func:`flip_table` -- which conclusions flip with the ablation, the metric or the corruption.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Optional, Sequence

import torch
from torch import Tensor

from ..core.circuits import ABLATION_MODES, Circuit, resample_sources, run_with_ablation
from ..core.controls import layer_matched_random, size_matched_random
from ..methods import faithfulness as fa
from ..methods import recovery as rc
from ..methods.attribution import EAPGraph, eap_scores, exact_node_effects
from ..methods.edge_ablation import edge_cut_effects
from ..methods.path_discovery import discover_step
from ..tasks.induction import InductionData, induction_attention, previous_token_attention
from .comparing import path_patching_search

EDGE_METHODS = ("path patching", "EAP", "EAP-IG")
NODE_METHODS = ("path patching", "EAP", "EAP-IG", "exact node patching", "spectral steps 2-3")
DESTROYED = 0.2  # the task is destroyed when the metric falls below this fraction of the clean one
HARMLESS = 0.8  # an ablation is harmless when the metric keeps at least this fraction
CHANGES = 0.05  # an edge changes the metric when cutting it moves the metric by this fraction of the clean one
REASONS = ("no difference to patch", "gradient misses it", "ranked below the cut")


def mean_metric(model, task, components=(), mode: str = "resample", metric=None, seed: int = 0) -> float:
    """The mean metric with ``components`` ablated (``mode`` of :data:`~tutorial_lib.core.circuits.ABLATION_MODES`,
    reference: the task's own clean prompts)."""
    metric = getattr(task, metric) if isinstance(metric, str) else (metric or task.metric)
    with torch.no_grad():
        logits = (model(task.clean) if not components else
                  run_with_ablation(model, task.clean, list(components), mode, reference=task.clean, seed=seed))
    return float(metric(logits).mean())


@dataclass
class KeyCheck:
    """What :func:`verify_key` measured (means of the metric; ``edges``: cut alone, change from clean)."""

    clean: float
    circuit: dict  # mode -> metric with the circuit ablated
    distractors: dict  # mode -> {component: metric}
    random_sets: dict  # mode -> [metric per random size-matched set]
    n_distinct_sets: int
    edges: dict  # mode -> {edge "s->r": change of the metric}

    def destroyed(self, mode: str) -> bool:
        return self.circuit[mode] < DESTROYED * self.clean

    def harmless(self, mode: str) -> bool:
        return min(list(self.distractors[mode].values()) + self.random_sets[mode]) >= HARMLESS * self.clean

    def edges_that_matter(self, mode: str) -> list:
        return [e for e, d in self.edges[mode].items() if abs(d) >= CHANGES * abs(self.clean)]


def verify_key(key, task, modes: Sequence[str] = ABLATION_MODES, n_random: int = 20, metric=None,
               edge_modes: Sequence[str] = ("zero", "mean", "resample", "corrupt")) -> KeyCheck:
    """Check the answer key by ablation (see the module docstring); ``metric``: the name of one of the task's
    metrics (``"metric"``, the default, ``"logit_diff"``, ``"answer_logprob"``)."""
    if metric is not None and not isinstance(metric, str):
        raise ValueError(f"verify_key takes the metric's name ('metric', 'logit_diff', 'answer_logprob'), got {metric!r}")
    model, circ = key.model, key.circuit
    clean = mean_metric(model, task, metric=metric)
    controls = [size_matched_random(model, circ, seed=s) for s in range(n_random)]
    out_c, out_d, out_r = {}, {}, {}
    for mode in modes:
        out_c[mode] = mean_metric(model, task, circ, mode, metric)
        out_d[mode] = {d: mean_metric(model, task, [d], mode, metric) for d in key.distractors}
        out_r[mode] = [mean_metric(model, task, c, mode, metric) for c in controls]
    truth = sorted(circ.edges)
    edges = {}
    for mode in edge_modes:
        eff, _ = edge_cut_effects(model, task, mode, metric=metric, edges=truth)
        g = EAPGraph.from_model(model)
        edges[mode] = {f"{s}->{r}": float(eff[g.senders.index(s), g.receivers.index(r)]) for s, r in truth}
    return KeyCheck(clean, out_c, out_d, out_r, len({c.nodes for c in controls}), edges)


# ----------------------------------------------------------------------------------------- the methods
def path_effects(model, task, metric=None) -> Tensor:
    """``[n_senders, n_receivers]``: the path-patching effect of each sender (every position) into each receiver
    alone, one :func:`discover_step` sweep per receiver (heads read at every position)."""
    graph = EAPGraph.from_model(model)
    out = torch.zeros(graph.edge_mask().shape)
    for j, r in enumerate(graph.receivers):
        res = discover_step(model, task, r, None, metric=metric, head_output_position=None, progress=False)
        for i, s in enumerate(graph.senders[:graph.n_upstream[j]]):
            out[i, j] = res.effects[s] if s in res.effects else 0.0
    return out


def _node_from_edges(edge: Tensor) -> Tensor:
    """A component's score from its outgoing edges' scores: their *signed* sum (embed left out), the first-order
    effect of patching the component's whole output, as EAP's node scores are (``EAPScores.signed_nodes``); every
    method's nodes are then ranked by |score|."""
    return edge.sum(1)[1:]


def edge_items(graph: EAPGraph) -> list:
    """The graph's edges as ``"s->r"``, in the order of ``graph.edge_mask()``'s nonzero entries."""
    return [f"{graph.senders[i]}->{graph.receivers[j]}" for i, j in graph.edge_mask().nonzero().tolist()]


def edge_truth(graph: EAPGraph, truth: Circuit) -> Tensor:
    """True on the edges of :func:`edge_items` that ``truth`` holds."""
    names = {f"{s}->{r}" for s, r in truth.edges}
    return torch.tensor([e in names for e in edge_items(graph)])


def induction_data(task) -> InductionData:
    """The induction key's prompts as :class:`InductionData`: the one induction target is each prompt's last
    position, whose earlier occurrence is followed by the answer at ``task.positions["ANSWER_SRC"]``."""
    n, p = task.clean.shape
    loss = torch.zeros(n, p, dtype=torch.bool)
    loss[torch.arange(n), task.end_pos] = True
    target = torch.full((n, p), -1)
    target[torch.arange(n), task.end_pos] = task.positions["ANSWER_SRC"]
    return InductionData(task.clean, loss.clone(), loss, target)


def spectral_steps(key, task, n_controls: int = 10) -> dict:
    """Steps 2-3 of notebook 03's recipe on the induction key: step 2 scores every head by its attention pattern
    (the larger of its previous-token and its induction attention; MLPs score 0: the step does not see them);
    step 3 ablates the heads scoring above 0.5 together (resample) against ``n_controls`` layer-matched random
    sets. Returns ``{"scores": [n_components], "candidate": [...], "candidate_metric", "control_metrics"}``."""
    model = key.model
    graph = EAPGraph.from_model(model)
    att = torch.maximum(previous_token_attention(model, task.clean), induction_attention(model, induction_data(task)))
    scores = torch.tensor([float(att[int(c[1:].split(".h")[0]), int(c.split(".h")[1])]) if c.startswith("a") else 0.0
                           for c in graph.components])
    cand = [c for c, s in zip(graph.components, scores.tolist()) if s > 0.5]
    controls = [mean_metric(model, task, layer_matched_random(model, cand, seed=s)) for s in range(n_controls)] if cand else []
    return {"scores": scores, "candidate": cand, "candidate_metric": mean_metric(model, task, cand) if cand else float("nan"),
            "control_metrics": controls}


@dataclass
class KeyScores:
    """Everything notebook 05 shows for one answer key."""

    key: str
    graph: EAPGraph
    truth: Circuit
    edge_scores: dict  # method -> [n_senders, n_receivers]
    node_scores: dict  # method -> [n_components]
    edge_roc: dict  # method -> ROC
    node_roc: dict
    precision: dict  # (level, method) -> precision at the true size
    faithfulness: dict  # method / "ground truth" -> f of its top-|truth| edges; "random" -> list over seeds
    pp_nodes: list
    pp_point: dict  # level -> (FPR, TPR) of the path-patching search's circuit
    spectral: Optional[dict] = None
    settings: dict = field(default_factory=dict)

    def edge_items(self) -> list:
        return edge_items(self.graph)

    def edge_truth(self) -> Tensor:
        return edge_truth(self.graph, self.truth)

    def flat(self, method: str) -> Tensor:
        return self.edge_scores[method][self.graph.edge_mask()]

    def table(self):
        """AUROC (edges, nodes) and precision at the true size, one row per method."""
        import pandas as pd

        rows = []
        for m in NODE_METHODS:
            if m not in self.node_roc:
                continue
            rows.append({"method": m,
                         "edge AUROC": round(self.edge_roc[m].auroc, 3) if m in self.edge_roc else float("nan"),
                         "edge precision @ true size": round(self.precision.get(("edges", m), float("nan")), 3),
                         "node AUROC": round(self.node_roc[m].auroc, 3),
                         "node precision @ true size": round(self.precision[("nodes", m)], 3),
                         "faithfulness @ true size": round(self.faithfulness.get(m, float("nan")), 3)})
        return pd.DataFrame(rows).set_index("method")

    def ranks_of_truth(self, method: str, ties: str = "mid") -> dict:
        """Each ground-truth edge's rank (1 = first) in ``method``'s |score| ranking. Edges with equal scores share
        a group of ranks, and no order inside it means anything: ``ties="mid"`` gives the group's mid-rank (an edge
        tied at 0 with 15 others in ranks 95-110 gets 102.5), ``ties="range"`` the pair ``(first, last)``."""
        if ties not in ("mid", "range"):
            raise ValueError(f"ties must be 'mid' or 'range', got {ties!r}")
        flat, items = self.flat(method).abs(), self.edge_items()
        out = {}
        for s, r in sorted(self.truth.edges):
            v = flat[items.index(f"{s}->{r}")]
            first, last = int((flat > v).sum()) + 1, int((flat >= v).sum())
            out[f"{s}->{r}"] = (first + last) / 2 if ties == "mid" else (first, last)
        return out


def score_key(key, task, ig_steps: int = 5, metric: str = "metric", n_random: int = 20,
              pp_threshold: Optional[float] = None) -> KeyScores:
    """Run every method on ``key``'s ``task`` and score it against the ground truth (see the module docstring)."""
    model, truth = key.model, key.circuit
    graph = EAPGraph.from_model(model)
    fn = getattr(task, metric) if isinstance(metric, str) else metric
    edge, node = {}, {}
    edge["path patching"] = path_effects(model, task, fn)
    node["path patching"] = _node_from_edges(edge["path patching"])
    for name, m in (("EAP", 1), ("EAP-IG", ig_steps)):
        s = eap_scores(model, task, metric=metric, progress=False, ig_steps=m)
        edge[name] = s.edges.mean(0).float()
        node[name] = s.signed_nodes.mean(0).float()
    node["exact node patching"] = exact_node_effects(model, task, metric=metric).mean(0).float()
    spectral = spectral_steps(key, task) if key.name == "induction" else None
    if spectral is not None:
        node["spectral steps 2-3"] = spectral["scores"]
    e_truth = edge_truth(graph, truth)
    n_truth = torch.tensor([c in truth.nodes for c in graph.components])
    mask = graph.edge_mask()
    edge_roc = {m: rc.roc(edge[m][mask], e_truth) for m in EDGE_METHODS}
    node_roc = {m: rc.roc(node[m], n_truth) for m in node}
    precision = {("edges", m): rc.precision_at(edge[m][mask], e_truth) for m in EDGE_METHODS}
    precision.update({("nodes", m): rc.precision_at(node[m], n_truth) for m in node})
    # faithfulness of each method's top-|truth| edges, of the truth itself, and of random rankings
    frac = len(truth.edges) / fa.n_edges(graph)
    truth_mask = torch.zeros_like(mask)
    for s, r in truth.edges:
        truth_mask[graph.senders.index(s), graph.receivers.index(r)] = True
    masks = torch.stack([truth_mask] + [fa.top_edges(graph, edge[m], [frac])[0] for m in EDGE_METHODS]
                        + [fa.top_edges(graph, fa.random_scores(graph, s), [frac])[0] for s in range(n_random)])
    ends = torch.stack([fa.full_circuit(graph), torch.zeros_like(mask)])
    m_full, m_empty = fa.patched_metric(model, task, ends, metric).tolist()
    f = fa.faithfulness(fa.patched_metric(model, task, masks, metric), m_full, m_empty).tolist()
    faith = {"ground truth": f[0], **dict(zip(EDGE_METHODS, f[1:1 + len(EDGE_METHODS)])), "random": f[1 + len(EDGE_METHODS):]}
    # the path-patching search (notebook 04's) as one point
    if pp_threshold is None:
        with torch.no_grad():
            pp_threshold = 0.05 * abs(float(fn(model(task.clean)).mean() - fn(model(task.corrupt)).mean()))
    pp_task = task if metric == "metric" else _with_metric(task, fn)
    pp_nodes = path_patching_search(model, pp_task, pp_threshold)
    pp_edges = fa.node_circuit(graph, ["embed"] + pp_nodes)[mask]
    pp_point = {"nodes": rc.roc_point(pp_nodes, graph.components, truth.nodes),
                "edges": (float((pp_edges & ~e_truth).sum() / (~e_truth).sum()), float((pp_edges & e_truth).sum() / e_truth.sum()))}
    return KeyScores(key.name, graph, truth, edge, node, edge_roc, node_roc, precision, faith, pp_nodes, pp_point,
                     spectral, {"ig_steps": ig_steps, "metric": metric, "n_examples": len(task), "n_random": n_random,
                                "pp_threshold": pp_threshold, "m_full": m_full, "m_empty": m_empty})


def _with_metric(task, fn):
    t = copy.copy(task)
    t.metric = fn
    return t


# ----------------------------------------------------------------------------------------- what flips
def other_prompt_corruption(task, seed: int = 0):
    """``task`` corrupted another way: each prompt's corrupted version is another prompt of the batch (a
    derangement, :func:`~tutorial_lib.core.circuits.resample_sources`), its wrong answer that prompt's answer."""
    src = resample_sources(len(task), seed)
    t = copy.copy(task)
    t.corrupt, t.corrupt_prompts = task.clean[src], [task.prompts[i] for i in src.tolist()]
    t.wrong = task.answers[src][:, None]
    keep = t.wrong[:, 0] != t.answers
    return t.subset(keep) if not bool(keep.all()) else t


def flip_table(key, task, scores: KeyScores, check: KeyCheck, ig_steps: int = 5):
    """One row per setting, the main one first (resample ablation, logit difference, the task's corruption), then
    one choice changed at a time: zero and mean ablation; the answer's log-probability as the metric; another
    prompt as the corruption. Columns: the construction's three checks (edges cut alone with the row's ablation) and
    the methods' edge AUROCs (the methods patch in the corrupted run: the ablation rows leave them as they are)."""
    import pandas as pd

    def row(setting, chk, mode, sc):
        r = {"setting": setting, "circuit destroys the task": "yes" if chk.destroyed(mode) else "no",
             "distractors harmless": "yes" if chk.harmless(mode) else "no",
             "truth edges that matter": f"{len(chk.edges_that_matter(mode))} of {len(key.circuit.edges)}"}
        r.update({f"{m} edge AUROC": round(sc.edge_roc[m].auroc, 3) for m in EDGE_METHODS})
        r["best at edges"] = max(EDGE_METHODS, key=lambda m: sc.edge_roc[m].auroc)
        return r

    rows = [row("main: resample, logit diff., the task's corruption", check, "resample", scores)]
    for mode in ("zero", "mean"):
        rows.append(row(f"{mode} ablation", check, mode, scores))
    lp = verify_key(key, task, modes=("resample",), n_random=5, metric="answer_logprob", edge_modes=("resample",))
    rows.append(row("metric: log p(answer)", lp, "resample", score_key(key, task, ig_steps, "answer_logprob", n_random=2)))
    other = other_prompt_corruption(task)
    oc = verify_key(key, other, modes=("resample",), n_random=5, edge_modes=("resample",))
    rows.append(row("corruption: another prompt", oc, "resample", score_key(key, other, ig_steps, n_random=2)))
    return pd.DataFrame(rows).set_index("setting")


# ----------------------------------------------------------------------------------------- why missed
def edge_facts(scores: KeyScores, check: KeyCheck, edge: str) -> dict:
    """What explains a method's score for ``edge`` ("s->r"): the change of the mean metric when the edge alone is cut
    to zero (``"cut to zero"``, from :func:`verify_key`) and to its corrupted value (``"path patching"``, its
    path-patching effect), the EAP and EAP-IG scores (means over examples), and the clean metric."""
    s, r = edge.split("->")
    g = scores.graph
    i, j = g.senders.index(s), g.receivers.index(r)
    return {"edge": edge, "clean metric": check.clean, "cut to zero": check.edges["zero"][edge],
            **{m: float(scores.edge_scores[m][i, j]) for m in EDGE_METHODS}}


def why_missed_answer(facts: dict) -> str:
    """The reference answer to notebook 05's exercise 3 (one of :data:`REASONS`) from :func:`edge_facts`, with
    "changes the metric" meaning by at least :data:`CHANGES` of the clean metric: cut to zero the edge changes the
    metric but patched to its corrupted value it does not -> the corruption leaves nothing to patch; path patching
    sees it but EAP's score is under a third of that -> the gradient misses it; otherwise -> ranked below the cut."""
    small = CHANGES * abs(facts["clean metric"])
    if abs(facts["path patching"]) < small:
        return REASONS[0]
    if abs(facts["EAP"]) < abs(facts["path patching"]) / 3:
        return REASONS[1]
    return REASONS[2]
