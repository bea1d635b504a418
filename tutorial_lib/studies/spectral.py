"""Notebook glue for the spectral recipe (notebook 03): train-or-load small induction models with a live
:class:`~tutorial_lib.methods.spectral_monitor.SpectralMonitor`, pick candidate circuits, build the ablation panel.

One call trains (or loads from the cache) one run and hands back everything the notebook reads::

    probe = planted_probe()                                   # 256 planted-pair sequences, 48 tokens
    run = train_or_load("small", seed=1, steps=700, probe=probe)
    run.monitor.pr.shape          # [n_checkpoints, n_layers, n_heads]: PR recorded while training
    run.pair["formed"]            # did the textbook previous-token -> induction pair form?
    run.cached, run.cpu_seconds   # True on a re-run (nothing retrained)

The cache key (:func:`tutorial_lib.methods.spectral_monitor.run_key`) hashes the model size, the recipe, the
seed, the checkpoint steps and the source of the code that trains and records a run (:data:`TRAINING_CODE`
and the monitor's own modules), so changing any of them -- an edit of the trainer too -- trains afresh. Set ``TUTORIAL_CACHE`` to move
the cache (``~/.cache/tutorial_lib`` by default).

Which conclusions depend on a choice: :func:`flip_table` re-tests the notebook's claims under zero, mean
and resample ablation, with loss or top-1 as the metric, at several filter thresholds, and returns a
:class:`FlipTable` of pass / fail cells::

    flips = flip_table(run.model, probe)   # about 50 forward passes of the probe
    flips.cells                                   # rows (claim, ablation, metric), one column per threshold
    print(flips.summary())                        # where each claim holds, and the numbers where it fails
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Optional, Sequence

import torch
from jaxtyping import Float
from torch import Tensor

from ..core.components import parse
from ..core import minority
from ..core.minority import is_minority
from ..methods.head_ablation import evaluate_induction
from ..methods.selectivity import (PATTERNS, PlantedPairProbe, bos_heads, classify_heads, collect_query_activations,
                                   selectivity)
from ..methods.spectral import as_checkpoint_list
from ..methods.spectral_monitor import SpectralMonitor, load_run, run_key
from ..tasks import induction as induction_task
from ..tasks.induction import make_planted_pair_batch
from ..viz.spectral import LiveTrainingFigure, in_notebook
from ..zoo import fast, induction_models, train
from ..zoo.induction_models import RECIPE, check_induction_pair, make_model, train_induction_model
from ..zoo.train import log_spaced_steps

# the code that makes a cached run (data, model, trainer): part of the cache key, so an edit retrains
TRAINING_CODE = (induction_task, induction_models, train, fast)


@dataclass
class Run:
    """One trained (or cached) induction model and what was recorded while it trained."""

    name: str
    size: str
    seed: int
    steps: int
    model: object
    monitor: SpectralMonitor
    checkpoints: list
    pair: dict
    cached: bool
    cpu_seconds: float
    losses: list = field(default_factory=list)

    @property
    def formed(self) -> bool:
        return bool(self.pair["formed"])

    def summary(self) -> str:
        p = self.pair
        return (f"{self.name}: {'cached' if self.cached else f'trained in {self.cpu_seconds:.0f} s CPU'}; "
                f"prev-token head {p['prev_heads']} (score {p['prev_score']:.2f}), best induction head "
                f"{p['induction_head']} (score {p['induction_score']:.2f}), loss {p['loss']:.3f} nats, "
                f"accuracy {100 * p['accuracy']:.0f}% -> pair formed: {p['formed']}")


def planted_probe(n: int = 256, seq_len: int = 48, seed: int = 0, vocab=128) -> PlantedPairProbe:
    """A planted-pair probe whose earlier ``A`` stays clear of the last 6 positions (invalid rows dropped).

    >>> planted_probe(32, 48).tokens.shape[1]
    48
    """
    batch = make_planted_pair_batch(vocab, n, seq_len=seq_len, seed=seed)
    return PlantedPairProbe.from_tokens(batch.clean, drop_invalid=True)


def train_or_load(size: str, seed: int, steps: int, probe: PlantedPairProbe, n_checkpoints: int = 12,
                  plot: bool = True, root=None, progress: bool = True) -> Run:
    """Train an induction model with a live :class:`SpectralMonitor`, or load the same run from the cache.

    ``size``: ``"small"`` or ``"large"`` (see :mod:`tutorial_lib.zoo.induction_models`); checkpoints
    are ``n_checkpoints`` log-spaced steps. The model returned holds the final weights.
    """
    if not isinstance(steps, int) or steps < 2:
        raise ValueError(f"steps must be an int >= 2, got {steps!r}")
    ckpt_steps = log_spaced_steps(steps, n_checkpoints)
    key = run_key({"size": size, "recipe": asdict(RECIPE), "probe": list(probe.tokens.shape),
                   "probe_sum": int(probe.tokens.sum())}, seed, ckpt_steps, code=TRAINING_CODE)
    name = f"{size} seed {seed}"
    mon = SpectralMonitor.load(key, probe, root=root)
    if mon is not None:
        cached = load_run(key, root)
        model = make_model(size, seed)
        model.load_state_dict(cached["checkpoints"][-1][2])
        model.eval()
        if plot and in_notebook():  # nothing to watch live: show the recorded trajectories once
            from IPython.display import display

            fig = mon.plot()
            fig.update_layout(title=fig.layout.title.text.replace("(live)", f"({name}, from the cache)"))
            display(fig)
        return Run(name, size, seed, steps, model, mon, cached["checkpoints"], check_induction_pair(model), True,
                   0.0, cached["meta"].get("losses", []))
    mon = SpectralMonitor(probe, on_record=LiveTrainingFigure() if plot else None)
    c0 = time.process_time()
    model, res = train_induction_model(size, seed, steps, checkpoints=ckpt_steps, callbacks=[mon], progress=progress)
    cpu = time.process_time() - c0
    model.eval()
    mon.save(key, checkpoints=res, root=root, meta={"size": size, "seed": seed, "steps": steps,
                                                     "losses": [round(float(x), 4) for x in res.losses]})
    return Run(name, size, seed, steps, model, mon, as_checkpoint_list(res), check_induction_pair(model), False, cpu,
               list(res.losses))


def query_attention(model, probe: PlantedPairProbe) -> Float[Tensor, "n n_layers n_heads pos"]:
    """Every head's attention row at the probe's query position (the second ``A``), for every example."""
    rows = []
    collect_query_activations(model, probe.tokens, probe.query_pos, lambda r, z, p: rows.append(p.cpu()), False, True)
    return torch.cat(rows)


def head_classes(model, probe: PlantedPairProbe, class_threshold: float = 30.0, induction_threshold: float = 50.0):
    """``(selectivity dict, classes dict)`` for one model on ``probe``."""
    sel = selectivity(model, probe)
    return sel, classify_heads(sel, class_threshold, induction_threshold)


def candidate_circuit(sel: dict, model, induction_threshold: float = 50.0, prev_threshold: Optional[float] = 30.0,
                      per_layer: Optional[int] = None, k: Optional[int] = None, include_bos_heads: bool = False
                      ) -> list[str]:
    """The candidate induction circuit from step 2: induction heads (>= ``induction_threshold``) plus, if
    ``prev_threshold`` is not None, the layer-0 previous-token heads (>= ``prev_threshold``), best first.
    BOS heads (:func:`~tutorial_lib.methods.selectivity.bos_heads`) are left out unless ``include_bos_heads``.

    A layer-matched random control must draw as many *other* heads in each layer, so at most
    ``per_layer`` heads per layer are kept (default ``n_heads // 2``, the most selective); ``k`` caps the
    total. Candidates are ordered by their selectivity for the pattern that admitted them.
    """
    H = model.cfg.n_heads
    per_layer = H // 2 if per_layer is None else per_layer
    if not 1 <= per_layer <= H - 1:
        raise ValueError(f"per_layer must be in 1..{H - 1} (a control needs an unselected head), got {per_layer}")
    scored = {}
    skip = set() if include_bos_heads else set(bos_heads(sel))
    s = sel["induction"]
    for l in range(s.shape[0]):
        for h in range(H):
            if float(s[l, h]) >= induction_threshold and f"a{l}.h{h}" not in skip:
                scored[f"a{l}.h{h}"] = (l, float(s[l, h]))
    if prev_threshold is not None:
        for name in prev_token_heads(sel, prev_threshold):
            if name in skip:
                continue
            c = parse(name)
            scored[name] = (c.layer, max(scored.get(name, (c.layer, 0.0))[1], float(sel["previous-token"][c.layer, c.head])))
    kept = []
    for l in sorted({l for l, _ in scored.values()}):
        kept += sorted(((v, n) for n, (ll, v) in scored.items() if ll == l), reverse=True)[:per_layer]
    out = [name for _, name in sorted(kept, reverse=True)]
    return out if k is None else out[:k]


def prev_token_heads(sel: dict, threshold: float = 30.0, layer: int = 0, max_heads: Optional[int] = None) -> list[str]:
    """Heads of ``layer`` whose previous-token selectivity is >= ``threshold``, best first (at most ``max_heads``).

    Pass ``max_heads < n_heads`` when a layer-matched control must still find unselected heads.
    """
    s = sel["previous-token"][layer]
    order = s.argsort(descending=True).tolist()
    out = [f"a{layer}.h{h}" for h in order if float(s[h]) >= threshold]
    return out if max_heads is None else out[:max_heads]


def panel_evaluate(model, probe: PlantedPairProbe):
    """An ``evaluate(ablated)`` for :class:`tutorial_lib.viz.widgets.AblationPanel`: induction on the probe.

    Returns metrics ``loss on B (nats)`` and ``top-1 (%)``, and bars of top-1 / top-5 accuracy.
    """
    def evaluate(ablated: frozenset) -> dict:
        heads = sorted(c for c in ablated if ".h" in c)
        m = evaluate_induction(model, probe, heads)
        top1, top5, loss = (float(m[k].mean()) for k in ("top1", "top5", "loss"))
        return {"metrics": {"loss on B (nats)": round(loss, 3), "top-1 (%)": round(100 * top1, 1)},
                "x": ["top-1 accuracy", "top-5 accuracy"], "y": [100 * top1, 100 * top5]}

    return evaluate


def greedy_ablation_path(model, probe: PlantedPairProbe, max_size: int = 4, metric: str = "top1",
                         heads: Optional[Sequence[str]] = None) -> list[tuple[list[str], float]]:
    """Grow a set of zero-ablated heads greedily, each step adding the head that hurts ``metric`` most.

    Returns ``[(heads, value), ...]`` for sizes 0 ... ``max_size`` (value: the mean of ``metric`` on the probe
    with those heads ablated; ``top1`` by default). The first step is every single head's ablation, so
    ``path[1]`` is the most damaging single head. Greedy, not exhaustive: a better set of the same size may
    exist. Costs about ``max_size × n_heads`` forward passes.
    """
    names = list(heads) if heads is not None else [f"a{l}.h{h}" for l in range(model.cfg.n_layers)
                                                   for h in range(model.cfg.n_heads)]
    if not 1 <= max_size <= len(names):
        raise ValueError(f"max_size must be in 1..{len(names)}, got {max_size}")
    sign = 1.0 if metric == "loss" else -1.0  # higher loss / lower accuracy = more damage

    def value(hs):
        return float(evaluate_induction(model, probe, hs, batch_size=probe.n)[metric].mean())

    path = [([], value([]))]
    chosen: list[str] = []
    for _ in range(max_size):
        trials = [(value(chosen + [h]), h) for h in names if h not in chosen]
        v, h = max(trials, key=lambda t: sign * t[0])
        chosen = chosen + [h]
        path.append((chosen, v))
    return path


def pr_rises_first(timing: dict, heads: Sequence[str]) -> dict[str, Optional[bool]]:
    """For each head: did its PR rise (index) strictly before its selectivity crossed? ``None`` if either never did."""
    out = {}
    for h in heads:
        pr_i, sel_i = timing[h]
        out[h] = None if pr_i is None or sel_i is None else pr_i < sel_i
    return out


# --- which conclusions flip: each claim of notebook 03 under every ablation, metric and threshold --------

FLIP_CLAIMS = (
    "the induction filter selects a minority of the heads",
    "the candidate beats every matched-random draw, p < 0.05",
    "the candidate hurts more than the matched-random mean",
    "ablating the previous-token heads destroys induction",
)
FLIP_METRICS = ("loss", "top1")
DEFAULT_FLIP_THRESHOLDS = ((10.0, 6.0), (50.0, 30.0), (200.0, 120.0), (800.0, 480.0))  # the paper's (50×, 30×) scaled by 0.2, 1, 4, 16


def damage(metric: str, base: Tensor, ablated: Tensor) -> Tensor:
    """How much an ablation hurts, per example, in ``metric``'s own units (bigger = worse).

    ``loss``: ablated − base (nats); ``top1`` / ``top5`` / ``logit_b``: base − ablated.
    """
    if metric == "loss":
        return ablated - base
    if metric in ("top1", "top5", "logit_b"):
        return base - ablated
    raise ValueError(f"unknown metric {metric!r}; accepted: ('loss', 'top1', 'top5', 'logit_b')")


def threshold_label(induction: float, prev: float) -> str:
    """The column name of one filter setting in :class:`FlipTable`, e.g. ``"ind ≥ 50×, prev ≥ 30×"``."""
    return f"ind ≥ {induction:g}×, prev ≥ {prev:g}×"


def _describe(r) -> str:
    """One measured cell in words: where it is and the numbers behind its verdict."""
    if r.ablation == "any":
        return f"{r.threshold} ({r.heads} heads selected)"
    unit = " nats" if r.metric == "loss" else ""
    p = "" if r.p != r.p else f", p = {r.p:.2g}"  # r.p != r.p: nan
    return f"{r.ablation} / {r.metric} / {r.threshold}: damage {r.value:.3g}{unit} vs control {r.control:.3g}{unit}{p}"


@dataclass(repr=False)
class FlipTable:
    """Which of notebook 03's conclusions survive a change of ablation, metric or filter threshold.

    ``cells``: a DataFrame, rows ``(claim, ablation, metric)``, one column per threshold setting
    (:func:`threshold_label`), each cell ``"pass"``, ``"fail"`` or ``"n/a"`` (the filter selects no head
    to test). ``measurements``: one row per cell with the numbers behind it (``value`` and ``control``:
    mean damage of the tested heads and of their control; ``base``: the unablated metric; ``p``; the heads).
    """

    cells: object
    measurements: object

    def verdict(self, claim: str, ablation: str, metric: str, threshold: str) -> str:
        """One cell, e.g. ``verdict(FLIP_CLAIMS[1], "zero", "loss", threshold_label(50, 30))``."""
        if claim == FLIP_CLAIMS[0]:
            ablation = metric = "any"
        return str(self.cells.loc[(claim, ablation, metric), threshold])

    def summary(self, brief: bool = False) -> str:
        """One sentence per claim: in how many cells it holds, and (unless ``brief``) where it fails."""
        lines = []
        for claim in self.cells.index.get_level_values(0).unique():
            rows = self.measurements[self.measurements["claim"] == claim]
            tested = rows[rows["verdict"] != "n/a"]
            failed = tested[tested["verdict"] == "fail"]
            where = "; ".join(_describe(r) for r in failed.itertuples())
            untested = len(rows) - len(tested)
            lines.append(f"{claim}: holds in {len(tested) - len(failed)} of {len(tested)} cells"
                         + (f" (fails at {where})" if len(failed) and not brief else "")
                         + (f"; {untested} cell(s) n/a: the filter selects no head to test" if untested and not brief else ""))
        return "\n".join(lines)

    def differences(self, other: "FlipTable", claim: Optional[str] = None) -> list[str]:
        """The cells (``"ablation / metric / threshold"``) whose verdict differs from ``other``'s (same layout),
        for one ``claim`` or all of them."""
        out = []
        for key in self.cells.index:
            if claim is not None and key[0] != claim:
                continue
            for col in self.cells.columns:
                if self.cells.loc[key, col] != other.cells.loc[key, col]:
                    out.append(f"{key[1]} / {key[2]} / {col}" if claim is not None else f"{key[0]}: {key[1]} / {key[2]} / {col}")
        return out

    def notes(self, threshold: Optional[str] = None) -> list[str]:
        """Observations read off the measurements: at ``threshold`` (a column; ``None``: skip this), the candidate's
        margin over the control per ablation and metric; anywhere, the cells where loss passes the causal claim but top-1 fails, and
        the top-1 cells that fail at a floor (candidate and control both leave under 10% of the unablated accuracy)."""
        m = self.measurements
        here = m[(m.claim == FLIP_CLAIMS[1]) & (m.threshold == threshold) & (m.verdict != "n/a")]
        out = []
        for metric, rows in (here.groupby("metric", sort=False) if threshold is not None else ()):
            unit = " nats" if metric == "loss" else ""
            out.append(f"{metric} at {threshold}: the candidate's damage vs the matched-random control's, "
                       + ", ".join(f"{r.ablation} {r.value:.3g} vs {r.control:.3g}{unit}" for r in rows.itertuples()))
        causal = m[(m.claim == FLIP_CLAIMS[1]) & (m.verdict != "n/a")]
        for (abl, thr), rows in causal.groupby(["ablation", "threshold"], sort=False):
            by_metric = {r.metric: r for r in rows.itertuples()}
            if "loss" not in by_metric or "top1" not in by_metric:
                continue
            lo, t1 = by_metric["loss"], by_metric["top1"]
            floor = t1.verdict == "fail" and t1.base > 0 and t1.base - t1.value < 0.1 * t1.base \
                and t1.base - t1.control < 0.1 * t1.base
            if floor:
                out.append(f"{abl} / {thr}: top-1 fails at a floor: the candidate leaves {100 * (t1.base - t1.value):.1f}% "
                           f"and the control {100 * (t1.base - t1.control):.1f}% (of {100 * t1.base:.0f}%), so top-1 cannot "
                           f"tell them apart; loss {'still can' if lo.verdict == 'pass' else 'cannot either'} "
                           f"({lo.value:.3g} vs {lo.control:.3g} nats)")
            elif lo.verdict == "pass" and t1.verdict == "fail":
                out.append(f"{abl} / {thr}: loss passes (damage {lo.value:.3g} vs {lo.control:.3g} nats, p = {lo.p:.2g}) "
                           f"but top-1 fails (damage {t1.value:.3g} vs {t1.control:.3g}): a significant effect, not a large one")
        return out

    def styled(self):
        """``cells`` with pass green and fail red (a pandas Styler)."""
        colour = {"pass": "background-color: #d4edda", "fail": "background-color: #f8d7da", "n/a": "color: #888"}
        styler = self.cells.style
        paint = getattr(styler, "map", None) or styler.applymap  # pandas < 2.1 has only applymap
        return paint(lambda v: colour.get(v, ""))

    def _repr_html_(self) -> str:
        return self.styled().to_html()

    def __str__(self) -> str:
        return self.cells.to_string()

    __repr__ = __str__


def flip_table(model, probe: PlantedPairProbe, thresholds: Sequence[tuple] = DEFAULT_FLIP_THRESHOLDS,
                     modes: Sequence[str] = ("zero", "mean", "resample"), metrics: Sequence[str] = FLIP_METRICS,
                     sel: Optional[dict] = None, n_control_seeds: int = 5, n_permutations: int = 2000,
                     alpha: float = 0.05, seed: int = 0) -> FlipTable:
    """Re-test notebook 03's claims on ``model`` under every ``modes`` × ``metrics`` × ``thresholds``.

    ``thresholds``: ``(induction, previous-token)`` selectivity pairs for the filter; at each, the candidate
    is :func:`candidate_circuit` and the previous-token heads :func:`prev_token_heads` (at most half a layer).
    ``modes``: how a head is ablated -- ``"zero"``, ``"mean"`` (its mean over the probe, per position) or
    ``"resample"`` (its value on another probe sequence, seeded permutation). Each cell uses one metric
    throughout, damage measured by :func:`damage`:

    1. *the filter selects a minority*: :func:`~tutorial_lib.core.minority.is_minority` of the heads that pass the
       induction threshold -- at least one, at most a quarter (the same in every ablation and metric);
    2. *beats every matched-random draw*: the candidate's mean damage exceeds each distinct layer-matched draw's
       (``n_control_seeds`` seeds), and a paired permutation test of its per-example damage against the mean of
       the draws gives ``p < alpha`` (:func:`~tutorial_lib.methods.head_ablation.verify_circuit` uses top-1 for
       the comparison and loss for the test; here both use the cell's metric);
    3. *hurts more than the matched-random mean*: mean damage above the draws' mean damage;
    4. *previous-token heads destroy induction*: their damage exceeds the mean of their layer-matched draws and
       at least half of the upper bound's (every head of their layer). With top-1 and an upper bound near
       chance this is the notebook's "below half of the unablated accuracy".

    Every ablated set is evaluated once per mode and reused. Returns a :class:`FlipTable`.
    """
    import pandas as pd

    from ..core.circuits import ABLATION_MODES, ablation_hooks
    from ..core.controls import layer_matched_random, layer_upper_bound, paired_permutation_test
    from ..methods.selectivity import induction_circuit

    bad = [m for m in modes if m not in ABLATION_MODES]
    if bad or not modes:
        raise ValueError(f"modes must be a non-empty subset of {ABLATION_MODES}, got {list(modes)}")
    bad = [m for m in metrics if m not in ("loss", "top1", "top5", "logit_b")]
    if bad or not metrics:
        raise ValueError(f"metrics must be a non-empty subset of ('loss', 'top1', 'top5', 'logit_b'), got {list(metrics)}")
    if not thresholds or any(len(t) != 2 for t in thresholds):
        raise ValueError(f"thresholds must be (induction, previous-token) pairs, got {thresholds!r}")
    sel = selectivity(model, probe) if sel is None else sel
    H = model.cfg.n_heads
    n_total = sel["induction"].numel()
    dev = next(model.parameters()).device
    reference = probe.tokens.to(dev)
    memo: dict = {}

    def evaluate(mode: str, heads) -> dict:
        key = (mode if heads else "none", tuple(sorted(heads)))
        if key not in memo:
            hooks = ablation_hooks(model, list(key[1]), mode, reference=None if mode == "zero" else reference,
                                   seed=seed) if key[1] else []
            memo[key] = evaluate_induction(model, probe, fwd_hooks=hooks, batch_size=probe.n)
        return memo[key]

    def draws(heads) -> list:
        sets = [tuple(sorted(layer_matched_random(model, heads, seed=seed + i).nodes)) for i in range(n_control_seeds)]
        return list(dict.fromkeys(sets))

    rows = []
    base = evaluate("zero", ())
    for ind_t, prev_t in thresholds:
        label = threshold_label(ind_t, prev_t)
        n_sel = len(induction_circuit(sel, ind_t))
        rows.append({"claim": FLIP_CLAIMS[0], "ablation": "any", "metric": "any", "threshold": label,
                     "heads": f"{n_sel} of {n_total}", "value": n_sel / n_total, "control": minority.MINORITY_FRACTION,
                     "p": float("nan"), "verdict": "pass" if is_minority(n_sel, n_total) else "fail"})
        cand = candidate_circuit(sel, model, ind_t, prev_t)
        prev = prev_token_heads(sel, prev_t, max_heads=H // 2)
        for mode in modes:
            for metric in metrics:
                cell = {"ablation": mode, "metric": metric, "threshold": label}
                if cand:
                    d = damage(metric, base[metric], evaluate(mode, cand)[metric])
                    dc = [damage(metric, base[metric], evaluate(mode, s)[metric]) for s in draws(cand)]
                    dc_mean = torch.stack(dc).mean(0)
                    p = paired_permutation_test(d, dc_mean, n_permutations=n_permutations, seed=seed)
                    every = float(d.mean()) > max(float(x.mean()) for x in dc)
                    common = {**cell, "heads": ", ".join(cand), "value": float(d.mean()), "control": float(dc_mean.mean()),
                              "base": float(base[metric].mean())}
                    rows.append({"claim": FLIP_CLAIMS[1], **common, "p": p,
                                 "verdict": "pass" if every and p < alpha else "fail"})
                    rows.append({"claim": FLIP_CLAIMS[2], **common, "p": float("nan"),
                                 "verdict": "pass" if common["value"] > common["control"] else "fail"})
                else:
                    for c in FLIP_CLAIMS[1:3]:
                        rows.append({"claim": c, **cell, "heads": "", "value": float("nan"), "control": float("nan"),
                                     "p": float("nan"), "verdict": "n/a"})
                if prev:
                    d = float(damage(metric, base[metric], evaluate(mode, prev)[metric]).mean())
                    dc = float(torch.stack([damage(metric, base[metric], evaluate(mode, s)[metric])
                                            for s in draws(prev)]).mean())
                    ub = float(damage(metric, base[metric], evaluate(mode, sorted(layer_upper_bound(model, prev).nodes))[metric]).mean())
                    rows.append({"claim": FLIP_CLAIMS[3], **cell, "heads": ", ".join(prev), "value": d, "control": dc,
                                 "base": float(base[metric].mean()), "p": float("nan"), "upper_bound": ub,
                                 "verdict": "pass" if d > dc and d >= 0.5 * ub else "fail"})
                else:
                    rows.append({"claim": FLIP_CLAIMS[3], **cell, "heads": "", "value": float("nan"),
                                 "control": float("nan"), "p": float("nan"), "verdict": "n/a"})
    meas = pd.DataFrame(rows)
    cols = [threshold_label(i, p) for i, p in thresholds]
    cells = meas.pivot(index=["claim", "ablation", "metric"], columns="threshold", values="verdict")[cols]
    order = [(c, a, m) for c in FLIP_CLAIMS for a, m in ([("any", "any")] if c == FLIP_CLAIMS[0] else
                                                          [(a, m) for a in modes for m in metrics])]
    cells = cells.reindex(order)
    cells.columns.name = None
    return FlipTable(cells=cells, measurements=meas)


def control_induction_heads(result, induction_heads: Sequence[str]) -> tuple[list, list]:
    """The heads the matched-random control drew (every distinct draw), and which of them are induction heads."""
    drawn = sorted({h for hs, _, _ in result.distinct_controls() for h in hs})
    induction = set(induction_heads)
    return drawn, [h for h in drawn if h in induction]


def verification_reading(result, candidate: Sequence[str], classes: dict, class_threshold: float = 30.0) -> str:
    """Notebook 03's "What you should see" under step 3 (the candidate's group ablation), from ``result``."""
    layer0 = [f"{h} '{classes[h]}'" for h in candidate if h.startswith("a0.")]
    return (f"Top-1 on B: {100 * result.baseline['top1']:.0f}% unablated; {100 * result.candidate['top1']:.1f}% without the "
            f"{len(candidate)} candidate heads; {100 * result.control_mean():.1f}% without matched random heads "
            f"({result.n_distinct_controls} distinct draw(s) of {result.n_possible_controls} possible); "
            f"{100 * result.upper_bound['top1']:.1f}% without all {len(result.upper_bound_heads)} heads of those layers "
            f"(p = {result.p_value:.2g}): {100 * result.gap_closed:.0f}% of the gap to the upper bound. Its layer-0 heads "
            f"(previous-token ≥ {class_threshold:g}×) are classed {', '.join(layer0) or 'none (no layer-0 head in the candidate)'}.")
