"""Notebook glue for the spectral recipe (notebook 03): train-or-load small induction models with a live
:class:`~tutorial_lib.methods.spectral_monitor.SpectralMonitor`, pick candidate circuits, build the ablation panel.

One call trains (or loads from the cache) one run and hands back everything the notebook reads::

    probe = planted_probe()                                   # 256 planted-pair sequences, 48 tokens
    run = train_or_load("small", seed=1, steps=700, probe=probe)
    run.monitor.pr.shape          # [n_checkpoints, n_layers, n_heads]: PR recorded while training
    run.pair["formed"]            # did the textbook previous-token -> induction pair form?
    run.cached, run.cpu_seconds   # True on a re-run (nothing retrained)

The cache key (:func:`tutorial_lib.methods.spectral_monitor.run_key`) hashes the model size, the recipe, the
seed and the checkpoint steps, so changing any of them trains afresh. Set ``TUTORIAL_CACHE`` to move
the cache (``~/.cache/tutorial_lib`` by default).
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Optional, Sequence

import torch
from jaxtyping import Float
from torch import Tensor

from ..methods.head_ablation import evaluate_induction
from ..methods.selectivity import PATTERNS, PlantedPairProbe, classify_heads, collect_query_activations, selectivity
from ..methods.spectral import as_checkpoint_list
from ..methods.spectral_monitor import SpectralMonitor, load_run, run_key
from ..tasks.induction import make_planted_pair_batch
from ..viz.spectral import LiveTrainingFigure, in_notebook
from ..zoo.induction_models import RECIPE, check_induction_pair, make_model, train_induction_model
from ..zoo.train import log_spaced_steps


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
                   "probe_sum": int(probe.tokens.sum())}, seed, ckpt_steps)
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
            fig.update_layout(title=f"Spectral monitor ({name}, from the cache)")
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
                      per_layer: Optional[int] = None, k: Optional[int] = None) -> list[str]:
    """The candidate induction circuit from step 2: induction heads (>= ``induction_threshold``) plus, if
    ``prev_threshold`` is not None, the layer-0 previous-token heads (>= ``prev_threshold``), best first.

    A layer-matched random control must draw as many *other* heads in each layer, so at most
    ``per_layer`` heads per layer are kept (default ``n_heads // 2``, the most selective); ``k`` caps the
    total. Candidates are ordered by their selectivity for the pattern that admitted them.
    """
    H = model.cfg.n_heads
    per_layer = H // 2 if per_layer is None else per_layer
    if not 1 <= per_layer <= H - 1:
        raise ValueError(f"per_layer must be in 1..{H - 1} (a control needs an unselected head), got {per_layer}")
    scored = {}
    s = sel["induction"]
    for l in range(s.shape[0]):
        for h in range(H):
            if float(s[l, h]) >= induction_threshold:
                scored[f"a{l}.h{h}"] = (l, float(s[l, h]))
    if prev_threshold is not None:
        for name in prev_token_heads(sel, prev_threshold):
            l, h = int(name.split(".")[0][1:]), int(name.split(".h")[1])
            scored[name] = (l, max(scored.get(name, (l, 0.0))[1], float(sel["previous-token"][l, h])))
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


def pr_rises_first(timing: dict, heads: Sequence[str]) -> dict[str, Optional[bool]]:
    """For each head: did its PR rise (index) strictly before its selectivity crossed? ``None`` if either never did."""
    out = {}
    for h in heads:
        pr_i, sel_i = timing[h]
        out[h] = None if pr_i is None or sel_i is None else pr_i < sel_i
    return out
