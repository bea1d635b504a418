"""Step 3 of the spectral recipe: verify a candidate head circuit by group ablation against controls.

Zero the candidate heads' slices of the attention output (``hook_z``, at every position) and measure
induction on the target ``B``: top-1 and top-5 accuracy, loss (cross-entropy of ``B``) and the logit
of ``B``. One number alone says little -- ablating any few heads of a small model hurts -- so the
same is done for two controls (:mod:`tutorial_lib.core.controls`):

* **layer-matched random**: as many heads in each layer as the candidate has there, none of them
  candidates, drawn with ``n_control_seeds`` seeds (``seed, seed+1, ...``). With few heads per layer
  several seeds can draw the same set (4 heads per layer, 2 of them candidates: one possible set),
  so the control's mean, spread and permutation test count each *distinct* draw once;
* **upper bound**: every head of the layers the candidate touches.

The claim is causal when the candidate's ablation lowers top-1 accuracy more than *every* control
draw does and a paired permutation test (per-example loss, candidate vs the mean over the distinct
control draws) gives ``p < alpha``. ``gap_closed`` = candidate drop ÷ upper-bound drop says how close it comes to
the upper bound. (Xu 2026's anchor, as the course's paper notes give it from the public code: GPT-2
124M, top-6 heads ablated: induction top-1 16.1% → 0.85%, matched random 10.6%.)

Every family the papers used is ablated exactly, because nothing here adds or subtracts a head's share of the
residual stream: a head is a *query* head, its ``hook_z`` slice is set (to 0 here; to a mean or another prompt's
value through :func:`tutorial_lib.core.circuits.ablation_hooks`) and the model's own forward does the rest -- its
``W_O`` slice, Gemma 2's ``ln1_post`` and OLMo-2's post-norm ``ln1`` recomputed on the changed sum, the soft caps,
local windows, parallel MLPs and experts downstream. Under grouped-query attention (Llama 3.2, Gemma 2, Qwen3)
ablating one query head leaves the other heads of its key/value group untouched (their keys and values are not
touched). ``tests/test_head_ablation.py`` checks zero, mean and resample ablation and the induction metrics on a
tiny model of each family against ablation through ``hook_result`` and shows that the shortcuts fail: subtracting
``z_h @ W_O[h]`` from the attention output (wrong under sandwich and post norms) and ablating through the
key/value heads (wrong under grouped-query attention).

>>> res = verify_circuit(model, ["a1.h0", "a1.h3"], probe, n_control_seeds=5)  # doctest: +SKIP
>>> print(res.verdict)                                                          # doctest: +SKIP
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import torch
import torch.nn.functional as F
from jaxtyping import Float, Int
from torch import Tensor

from ..core.circuits import Circuit, ablation_hooks
from ..core.components import parse_many
from ..core.controls import layer_matched_random, layer_upper_bound, paired_permutation_test
from .selectivity import PlantedPairProbe, selectivity

METRICS = ("top1", "top5", "loss", "logit_b")


@dataclass(frozen=True)
class InductionEval:
    """Where induction is read: ``logits[b, positions[b, j]]`` should predict ``targets[b, j]``."""

    tokens: Int[Tensor, "n pos"]
    positions: Int[Tensor, "n k"]
    targets: Int[Tensor, "n k"]

    def __post_init__(self):
        n, T = self.tokens.shape
        if self.positions.shape != self.targets.shape or self.positions.shape[0] != n or self.positions.ndim != 2:
            raise ValueError(f"positions and targets must both be [{n}, k], got {tuple(self.positions.shape)} and {tuple(self.targets.shape)}")
        if (self.positions < 0).any() or (self.positions >= T).any():
            raise ValueError(f"positions must lie in 0..{T - 1}")

    @classmethod
    def from_probe(cls, probe: PlantedPairProbe) -> "InductionEval":
        """Read the final position of a planted-pair probe; the target is ``B``."""
        return cls(probe.tokens, torch.full((probe.n, 1), probe.query_pos), probe.targets.cpu()[:, None])

    @classmethod
    def repeated(cls, tokens: Int[Tensor, "n pos"], period: int, start: int = 0) -> "InductionEval":
        """Repeated-segment data: ``tokens[:, start:start+period]`` is repeated right after itself.

        Reads every position of the second copy except its last (positions ``start+period ...
        start+2·period−2``), each predicting the next token, which the first copy gives away.
        """
        n, T = tokens.shape
        if period < 2 or start < 0 or start + 2 * period > T:
            raise ValueError(f"need period >= 2 and start + 2*period <= seq_len={T}, got period={period}, start={start}")
        first, second = tokens[:, start : start + period], tokens[:, start + period : start + 2 * period]
        if not torch.equal(first, second):
            raise ValueError(f"tokens[:, {start}:{start + period}] is not repeated at {start + period}:{start + 2 * period}")
        pos = torch.arange(start + period, start + 2 * period - 1)
        return cls(tokens, pos.expand(n, -1).clone(), tokens[:, pos + 1].cpu())


def _as_eval(data) -> InductionEval:
    if isinstance(data, InductionEval):
        return data
    if isinstance(data, PlantedPairProbe):
        return InductionEval.from_probe(data)
    raise ValueError(f"expected a PlantedPairProbe or an InductionEval, got {type(data).__name__}")


def induction_metrics(
    logits: Float[Tensor, "n pos d_vocab"], data: "InductionEval | PlantedPairProbe"
) -> dict[str, Float[Tensor, "n"]]:
    """Per-example top-1 / top-5 accuracy, loss and logit of the target, averaged over read positions.

    A target tied with other tokens is ranked below them (constant logits give accuracy 0).
    """
    ev = _as_eval(data)
    rows = torch.arange(logits.shape[0], device=logits.device)[:, None]
    lg = logits[rows, ev.positions.to(logits.device)].float()  # [n, k, vocab]
    tgt = ev.targets.to(logits.device)
    logit_b = lg.gather(-1, tgt[..., None])[..., 0]
    # tokens that beat the target; ties count against it, so constant logits never score as correct
    rank_above = (lg >= logit_b[..., None]).sum(-1) - 1
    loss = F.cross_entropy(lg.flatten(0, 1), tgt.flatten(), reduction="none").view_as(logit_b)
    return {
        "top1": (rank_above < 1).float().mean(1).cpu(),
        "top5": (rank_above < 5).float().mean(1).cpu(),
        "loss": loss.mean(1).cpu(),
        "logit_b": logit_b.mean(1).cpu(),
    }


def evaluate_induction(
    model, data: "InductionEval | PlantedPairProbe", heads: Sequence[str] = (), fwd_hooks: Sequence = (), batch_size: int = 64
) -> dict[str, Float[Tensor, "n"]]:
    """Per-example induction metrics with ``heads`` zero-ablated (and any extra ``fwd_hooks`` active)."""
    ev = _as_eval(data)
    hooks = list(fwd_hooks) + (ablation_hooks(model, list(heads), "zero") if len(heads) else [])
    dev = next(model.parameters()).device
    parts = []
    with torch.no_grad(), model.hooks(fwd_hooks=hooks):
        for s in range(0, ev.tokens.shape[0], batch_size):
            sub = InductionEval(ev.tokens[s : s + batch_size], ev.positions[s : s + batch_size], ev.targets[s : s + batch_size])
            parts.append(induction_metrics(model(sub.tokens.to(dev)), sub))
    return {m: torch.cat([p[m] for p in parts]) for m in METRICS}


def _means(per_example: dict) -> dict[str, float]:
    return {m: float(v.mean()) for m, v in per_example.items()}


@dataclass
class VerificationResult:
    """Group ablation of a candidate circuit next to its controls (all numbers are means over examples)."""

    heads: list[str]
    baseline: dict[str, float]
    candidate: dict[str, float]
    controls: list[dict[str, float]]
    control_sets: list[list[str]]
    upper_bound: dict[str, float]
    upper_bound_heads: list[str]
    p_value: float
    alpha: float = 0.05
    n_examples: int = 0
    per_example: dict = field(default_factory=dict, repr=False)
    control_seeds: list = field(default_factory=list)  # the seed of each control draw (default: 0, 1, ...)

    def distinct_controls(self) -> list[tuple[list[str], dict[str, float], list[int]]]:
        """Each distinct control set once, in order of first appearance: ``(heads, metrics, seeds that drew it)``.

        Seeds that draw the same heads measure the same thing (the ablation is deterministic), so
        they are one draw, not several.
        """
        seeds = list(self.control_seeds) or list(range(len(self.control_sets)))
        out: dict[tuple, tuple] = {}
        for s, c, sd in zip(self.control_sets, self.controls, seeds):
            out.setdefault(tuple(s), (list(s), c, []))[2].append(sd)
        return list(out.values())

    @property
    def n_distinct_controls(self) -> int:
        return len(self.distinct_controls())

    @property
    def possible_controls_by_layer(self) -> dict[int, int]:
        """Per layer the candidate touches, how many different draws exist there: C(heads outside the candidate,
        candidates there). A layer with 1 is forced: every control draws the same heads in it."""
        from math import comb

        cand = Counter(c.layer for c in parse_many(self.heads))
        layer_size = Counter(c.layer for c in parse_many(self.upper_bound_heads))
        return {layer: comb(layer_size[layer] - k, k) for layer, k in sorted(cand.items())}

    @property
    def n_possible_controls(self) -> int:
        """How many different layer-matched sets exist: the product of :attr:`possible_controls_by_layer`."""
        return int(np.prod(list(self.possible_controls_by_layer.values()) or [1]))

    def control_mean(self, metric: str = "top1") -> float:
        """Mean over the distinct control draws (a set drawn by several seeds counts once)."""
        return float(np.mean([c[metric] for _, c, _ in self.distinct_controls()]))

    def control_std(self, metric: str = "top1") -> float:
        """Standard deviation (ddof 1) over the distinct control draws; 0 with fewer than two."""
        vals = [c[metric] for _, c, _ in self.distinct_controls()]
        return float(np.std(vals, ddof=1)) if len(vals) > 1 else 0.0

    def drop(self, which: str = "candidate", metric: str = "top1") -> float:
        """Baseline minus ablated value for ``"candidate"``, ``"control"`` (mean) or ``"upper bound"``."""
        val = {"candidate": lambda: self.candidate[metric], "control": lambda: self.control_mean(metric),
               "upper bound": lambda: self.upper_bound[metric]}
        if which not in val:
            raise ValueError(f"which must be one of {list(val)}, got {which!r}")
        return self.baseline[metric] - val[which]()

    @property
    def gap_closed(self) -> float:
        """Candidate top-1 drop ÷ upper-bound top-1 drop (``nan`` if the upper bound drops nothing)."""
        ub = self.drop("upper bound")
        return self.drop("candidate") / ub if ub > 0 else float("nan")

    @property
    def causal(self) -> bool:
        """Candidate top-1 drop beats every control draw's, and the loss permutation test has p < alpha."""
        worst_control = max(self.baseline["top1"] - c["top1"] for c in self.controls)
        return self.drop("candidate") > worst_control and self.p_value < self.alpha

    @property
    def verdict(self) -> str:
        b, c, u = self.baseline["top1"], self.candidate["top1"], self.upper_bound["top1"]
        rm, rs, k = self.control_mean(), self.control_std(), len(self.controls)
        distinct, possible = self.n_distinct_controls, self.n_possible_controls
        seeds = f"{k} seed{'s' if k != 1 else ''}"
        if distinct > 1:
            ctrl = (f"the layer-matched random control ({distinct} distinct draws from {seeds}, out of {possible} "
                    f"possible) leaves {100 * rm:.1f}% ± {100 * rs:.1f}% (mean ± std over the distinct draws)")
        else:
            ctrl = (f"the layer-matched random control (1 distinct draw from {seeds}; {possible} possible) leaves "
                    f"{100 * rm:.1f}% (a single draw: no spread to report)")
        facts = (
            f"Ablating the {len(self.heads)} candidate head(s) {', '.join(self.heads)} takes induction top-1 from "
            f"{100 * b:.1f}% to {100 * c:.1f}%; {ctrl}, and the upper bound (all {len(self.upper_bound_heads)} heads of "
            f"those layers) {100 * u:.1f}% (permutation test on loss, p = {self.p_value:.3g})."
        )
        if self.causal:
            return facts + (f" Causal: the candidate drops accuracy far more than matched random, closing "
                            f"{100 * self.gap_closed:.0f}% of the gap to the upper bound.")
        return facts + " Not shown causal: the candidate's drop does not clearly exceed the matched-random control."

    def table(self) -> str:
        """A plain-text table of every condition, each distinct control draw once, then which heads each
        control draw ablated and which seeds drew it."""
        distinct = self.distinct_controls()
        rows = [("none", self.baseline), ("candidate", self.candidate)]
        rows += [(f"matched random #{i} ({len(sd)} seed{'s' if len(sd) != 1 else ''})", c)
                 for i, (_, c, sd) in enumerate(distinct, 1)]
        rows += [("upper bound", self.upper_bound)]
        w = max(22, max(len(n) for n, _ in rows) + 2)
        lines = [f"{'condition':<{w}}" + "".join(f"{m:>10}" for m in METRICS)]
        lines += [f"{n:<{w}}" + "".join(f"{r[m]:>10.4f}" for m in METRICS) for n, r in rows]
        lines.append(f"matched random draws: {len(distinct)} distinct from {len(self.controls)} seed(s), "
                     f"out of {self.n_possible_controls} possible")
        lines += [f"  #{i}: {', '.join(hs)}  (seed{'s' if len(sd) != 1 else ''} {', '.join(map(str, sd))})"
                  for i, (hs, _, sd) in enumerate(distinct, 1)]
        lines.append(f"candidate: {', '.join(self.heads)}")
        return "\n".join(lines)


def verify_circuit(
    model,
    heads: "Circuit | Sequence[str]",
    probe: "PlantedPairProbe | InductionEval",
    n_control_seeds: int = 5,
    seed: int = 0,
    alpha: float = 0.05,
    n_permutations: int = 10_000,
    batch_size: int = 64,
) -> VerificationResult:
    """Ablate ``heads``, ``n_control_seeds`` layer-matched random sets and the layer upper bound.

    Seeds that draw the same control set are one draw: each distinct set is evaluated once, and the
    control's mean, standard deviation and the permutation test use the distinct draws
    (:meth:`VerificationResult.distinct_controls`); ``controls`` / ``control_sets`` still hold one
    entry per seed.

    Raises ``ValueError`` for non-head components, an empty circuit, or a layer with no unselected
    head to draw a control from.
    """
    names = sorted(heads.nodes) if isinstance(heads, Circuit) else [str(c) for c in parse_many(list(heads))]
    if not names or any(c.kind != "head" for c in parse_many(names)):
        raise ValueError(f"heads must be a non-empty list of attention heads like 'a1.h0', got {names}")
    parse_many(names, model)  # every head must exist in the model
    if n_control_seeds < 1:
        raise ValueError(f"n_control_seeds must be >= 1, got {n_control_seeds}")
    ev = _as_eval(probe)
    base = evaluate_induction(model, ev, batch_size=batch_size)
    cand = evaluate_induction(model, ev, names, batch_size=batch_size)
    seeds = [seed + i for i in range(n_control_seeds)]
    sets = [sorted(layer_matched_random(model, names, seed=s).nodes) for s in seeds]
    # a set drawn by several seeds is evaluated (and counted) once
    evals = {key: evaluate_induction(model, ev, list(key), batch_size=batch_size) for key in dict.fromkeys(map(tuple, sets))}
    ctrls = [evals[tuple(s)] for s in sets]
    ub_heads = sorted(layer_upper_bound(model, names).nodes)
    ub = evaluate_induction(model, ev, ub_heads, batch_size=batch_size)
    ctrl_loss = torch.stack([e["loss"] for e in evals.values()]).mean(0)  # mean over the distinct draws
    p = paired_permutation_test(cand["loss"], ctrl_loss, n_permutations=n_permutations, seed=seed)
    return VerificationResult(
        heads=names, baseline=_means(base), candidate=_means(cand), controls=[_means(c) for c in ctrls],
        control_sets=sets, upper_bound=_means(ub), upper_bound_heads=ub_heads, p_value=p, alpha=alpha,
        n_examples=ev.tokens.shape[0], per_example={"none": base, "candidate": cand, "controls": ctrls, "upper bound": ub},
        control_seeds=seeds,
    )


def cross_seed_ablation(
    models: dict, circuits: dict, probes: "dict | PlantedPairProbe | InductionEval", metric: str = "top1", batch_size: int = 64
) -> dict[str, dict[str, float]]:
    """Seed specificity: ablate each seed's circuit in every seed's model (heads matched by name).

    ``models = {"s0": model0, "s1": model1}``, ``circuits = {"s0": ["a1.h2"], "s1": ["a1.h0", "a1.h3"]}``;
    ``probes`` is one probe for all models or ``{model_name: probe}`` (vocabularies may differ).
    Returns ``{model_name: {"none": value, circuit_name: value, ...}}`` for ``metric``. A circuit is
    seed-specific when it hurts its own model (the diagonal) and not the others.
    """
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}; accepted: {METRICS}")
    shapes = {n: (m.cfg.n_layers, m.cfg.n_heads) for n, m in models.items()}
    if len(set(shapes.values())) > 1:
        raise ValueError(f"head names transfer only between models of one shape; got {shapes}")
    out = {}
    for mname, model in models.items():
        pr = probes[mname] if isinstance(probes, dict) else probes
        row = {"none": float(evaluate_induction(model, pr, batch_size=batch_size)[metric].mean())}
        for cname, heads in circuits.items():
            row[cname] = float(evaluate_induction(model, pr, list(heads), batch_size=batch_size)[metric].mean())
        out[mname] = row
    return out


def prev_token_dependency(
    model,
    prev_heads: Sequence[str],
    induction_heads: Sequence[str],
    probe: PlantedPairProbe,
    n_control_seeds: int = 3,
    seed: int = 0,
    batch_size: int = 64,
) -> dict:
    """Does induction depend on the previous-token heads? Ablate them and re-measure induction.

    Returns ``{"conditions": {"none": ..., "previous-token heads": ..., "matched random s0": ...}}``
    where each entry holds ``top1`` / ``loss`` (induction accuracy on the probe) and
    ``induction_selectivity`` (``{head: value}`` for ``induction_heads``), plus the control sets.
    With the previous-token heads gone an induction head can no longer find the token after the
    earlier ``A``: its selectivity and the accuracy should collapse; the matched random control's
    should not.
    """
    prev = [str(c) for c in parse_many(list(prev_heads), model)]
    ind = [str(c) for c in parse_many(list(induction_heads), model)]
    if not prev or not ind:
        raise ValueError("prev_heads and induction_heads must both be non-empty")
    sets = {"none": [], "previous-token heads": prev}
    ctrl_sets = [sorted(layer_matched_random(model, prev, seed=seed + i).nodes) for i in range(n_control_seeds)]
    sets.update({f"matched random s{i}": s for i, s in enumerate(ctrl_sets)})
    out = {}
    for name, hs in sets.items():
        hooks = ablation_hooks(model, hs, "zero") if hs else []
        sel = selectivity(model, probe, ("induction",), fwd_hooks=hooks, batch_size=batch_size)["induction"]
        m = evaluate_induction(model, probe, hs, batch_size=batch_size)
        out[name] = {
            "top1": float(m["top1"].mean()), "loss": float(m["loss"].mean()),
            "induction_selectivity": {str(c): float(sel[c.layer, c.head]) for c in parse_many(ind)},
            "ablated": hs,
        }
    return {"conditions": out, "control_sets": ctrl_sets}


def control_p(drop: float, control_drops: Sequence[float]) -> float:
    """One-sided p of a set's ablation ``drop`` against control draws' drops: the share of draws that hurt at least as
    much, the set itself counted as one draw (the +1 rule of :func:`tutorial_lib.core.controls.paired_permutation_test`,
    so p is never 0 and is at least ``1 / (len(control_drops) + 1)``).

    >>> control_p(0.9, [0.1, 0.2, 0.95])
    0.5
    """
    k = sum(float(c) >= float(drop) - 1e-12 for c in control_drops)
    return (k + 1) / (len(control_drops) + 1)


def group_ablation_test(model, probe: "PlantedPairProbe", heads: Sequence[str], mode: str = "zero", n_draws: int = 20,
                        seed: int = 0) -> dict:
    """Ablate ``heads`` together (``mode`` of :data:`~tutorial_lib.core.circuits.ABLATION_MODES`, the mean and resample
    values taken on ``probe.tokens``) and compare the rise of the loss on ``B`` with ``n_draws`` layer-matched random
    sets (draw ``i``: :func:`~tutorial_lib.core.controls.layer_matched_random` with ``seed + i``; draws that repeat a set
    are kept, each is one draw). Returns ``{"drop", "controls", "control_drops", "p"}``: drops in nats (ablated loss
    minus clean loss), ``p`` from :func:`control_p`."""
    tokens = probe.tokens.to(next(model.parameters()).device)
    targets = probe.targets.to(tokens.device)

    def loss(hs) -> float:
        hooks = ablation_hooks(model, list(hs), mode, reference=tokens, seed=seed) if len(hs) else []
        with torch.no_grad(), model.hooks(fwd_hooks=hooks):
            logits = model(tokens)
        return float(F.cross_entropy(logits[:, probe.query_pos].float(), targets))

    clean = loss([])
    controls = [sorted(layer_matched_random(model, list(heads), seed=seed + i).nodes) for i in range(n_draws)]
    drop = loss(heads) - clean
    control_drops = [loss(c) - clean for c in controls]
    return {"drop": drop, "controls": controls, "control_drops": control_drops, "p": control_p(drop, control_drops)}
