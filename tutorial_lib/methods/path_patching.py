"""Path patching with MLPs: which senders change which receivers, recomputing only what a path changes.

Path patching (Goldowsky-Dill et al. 2023; Wang et al. 2022; used by Hanna, Liu & Variengien 2023 to
find the greater-than circuit) asks how much the metric moves when the *new* value of some
**senders** reaches some **receivers** along the direct residual-stream paths only:

* ``baseline`` run: the clean tokens (``direction="noising"``, the default) — or the corrupted ones
  (``"denoising"``). ``new`` run: the other one.
* each sender ``s`` (a head, an MLP or ``embed``) contributes ``Δ_s = new_out_s − baseline_out_s``,
  restricted to ``sender_positions`` (e.g. the END position of each prompt);
* each receiver sees ``baseline_input + Σ Δ_s`` over the senders that sit *before* it (a sender in the
  same layer as a head receiver has no path to it): with ``receivers_mode="independent"`` (the default,
  as in Wang et al. and Goldowsky-Dill et al.) nothing else, so no receiver sees another receiver's
  change; with ``"joint"`` also ``+ (changes of earlier receivers)``, so a path sender -> a5.h1 ->
  a9.h1.k is patched too (see :class:`ReceiversMode`). In both, every receiver's changed output is added
  to the residual stream the logits and the later layers read. Receivers
  are ``"logits"`` (the final residual stream, *through ln_final recomputed on the patched residual*),
  an MLP's input (``"m8"`` = the input of MLP 8, through ``ln2`` recomputed) or one input of a head
  (``"a5.h1.q"``, ``".k"``, ``".v"``; a bare ``"a5.h1"`` means all three), again with ``ln1``
  recomputed. Every head input of a receiving layer that is not a receiver keeps its baseline value, and
  with ``head_output_positions`` (e.g. END) the head's changed output is kept only where it is read.

Every family of the course runs exactly (tested against a hooked reference on each): under grouped-query
attention a head is a *query* head with its own k and v inputs (MIB's convention; the layer runs ungrouped);
where a norm sits on the attention's summed output (Gemma 2's ``ln1_post``, OLMo-2's ``ln1``) it is recomputed on
the patched sum, also when several heads of a layer are senders together; with parallel attention + MLP
(Pythia) an MLP reads the layer's input, so its own layer's heads have no path to it; QK-norm, soft caps and
local windows are the attention module's own (the receiving layer's attention is run by the model's module).
* every other component up to (and including the layer part of) the last receiver is frozen at its
  baseline output; everything after the last receiver is recomputed normally (so a change of ``m10``
  reaches the logits directly *and* through ``m11``).

LayerNorm convention: like the paper's code (whose receivers contain their LayerNorm), the receiver's
LayerNorm scale is recomputed from the patched residual — not frozen at its baseline value.

Speed: one baseline cache and one new cache, then for each sender only the receivers and what follows
them are computed, batched over senders along a new axis, and only at the positions a path can change
(with causal attention nothing before the first patched position moves; cached keys and values stand
in for it). ``logit_positions`` (e.g. each prompt's END) further restricts the unembedding, and the
logits kept in memory, to the positions the metric reads; other positions are filled with NaN so a
metric that reads them fails loudly instead of silently.

>>> res = path_patch_sweep(model, task.clean, task.corrupt, ["logits"], task.metric,
...                        sender_positions=task.end_pos, logit_positions=task.end_pos)  # doctest: +SKIP
>>> res.plot().show()                                                                 # doctest: +SKIP
>>> top_senders(res, k=8)                                                             # doctest: +SKIP
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping, Optional, Sequence

import torch
from jaxtyping import Float, Int
from torch import Tensor

from ..core.components import Component, all_components, parse, parse_many, sort_key
from ..core.forward import Metric, PositionSpec, Runs, check_pair, evaluate_runs, make_caches, position_mask
from ._path_engine import (  # noqa: F401  (ReceiversMode & co. are part of this module's API)
    ReceiversMode,
    ReceiversModeLike,
    _final_resid_with_paths_patched,
    _site_order,
    as_receivers_mode,
    parse_receivers,
)
from .patching import DIRECTIONS, metric_label


def _first_position(masks: Iterable[Tensor]) -> Optional[int]:
    any_pos = None
    for m in masks:
        col = m.any(0)
        any_pos = col if any_pos is None else (any_pos | col)
    if any_pos is None or not any_pos.any():
        return None
    return int(any_pos.nonzero()[0, 0])


def _masks(spec, names: list[Component], tokens, what: str) -> dict[Component, Tensor]:
    if isinstance(spec, Mapping):
        keyed = {parse(k): v for k, v in spec.items()}
        unknown = [str(k) for k in keyed if k not in names]
        if unknown:
            raise ValueError(f"{what} names {unknown}, which are not among {[str(n) for n in names]}")
        return {n: position_mask(keyed.get(n), tokens, f"{what}[{n}]") for n in names}
    m = position_mask(spec, tokens, what)
    return {n: m for n in names}


def _patch_runs(model, clean, corrupt, runs: Runs, receivers, metric: Metric, sender_positions,
                receiver_positions, direction: str, logit_positions, chunk_size, progress: bool,
                head_output_positions=None, mode: ReceiversModeLike = ReceiversMode.INDEPENDENT):
    """Metric per run and example ([n_runs, batch]) plus the baseline and new runs' metrics."""
    if direction not in DIRECTIONS:
        raise ValueError(f"unknown direction {direction!r}; accepted: {DIRECTIONS}")
    mode = as_receivers_mode(mode)
    check_pair(clean, corrupt)
    recv = parse_receivers(receivers, model)
    base_tokens, new_tokens = (clean, corrupt) if direction == "noising" else (corrupt, clean)
    base, new = make_caches(model, base_tokens, new_tokens, logit_positions)
    all_senders = sorted({s for run in runs for s in run}, key=sort_key)
    dt = base.final.dtype
    s_masks = {k: v.to(dt) for k, v in _masks(sender_positions, all_senders, base.tokens, "sender_positions").items()}
    r_masks = {k: v.to(dt) for k, v in _masks(receiver_positions, recv, base.tokens, "receiver_positions").items()}
    heads = sorted({r.node for r in recv if r.kind == "head"}, key=sort_key)
    o_masks = {k: v.to(dt) for k, v in _masks(head_output_positions, heads, base.tokens,
                                               "head_output_positions").items()}
    p0 = _first_position([s_masks[s] for s in all_senders])
    if p0 is not None:
        p0 = max(p0, _first_position(r_masks.values()) or 0)

    def final_fn(chunk, p0):
        return _final_resid_with_paths_patched(model, base, new, chunk, recv, s_masks, r_masks, o_masks, p0, mode)

    # a run whose senders all sit at or after the last receiver has no path: it is the baseline exactly
    last = max(_site_order(r, bool(model.cfg.parallel_attn_mlp)) for r in recv)
    live = [i for i, run in enumerate(runs) if any(s.order < last for s in run)]
    vals = base.metric(metric).unsqueeze(0).repeat(len(runs), 1)
    if live:
        got = evaluate_runs(model, base, [runs[i] for i in live], final_fn, p0, metric, logit_positions,
                            chunk_size, progress, desc="path patching")
        vals[live] = got
    return vals, base.metric(metric), new.metric(metric)


# ----------------------------------------------------------------------------------------- public API
def path_patch(
    model,
    clean: Int[Tensor, "batch pos"],
    corrupt: Int[Tensor, "batch pos"],
    senders: "str | Sequence[str]",
    receivers: "str | Sequence[str]",
    metric: Metric,
    sender_positions: PositionSpec = None,
    receiver_positions: PositionSpec = None,
    direction: str = "noising",
    logit_positions: Optional[Int[Tensor, "batch"]] = None,
    head_output_positions: PositionSpec = None,
    receivers_mode: ReceiversModeLike = ReceiversMode.INDEPENDENT,
) -> dict:
    """Patch the paths from ``senders`` (together) to ``receivers``; return per-example metrics.

    Args:
        model: a TransformerLens ``HookedTransformer`` of any family the course supports
            (:func:`tutorial_lib.core.supported.architecture_problems` lists what is refused).
        clean, corrupt: token tensors of the same shape ``[batch, pos]``.
        senders: component names: heads ``"a5.h1"``, MLPs ``"m3"``, ``"embed"``.
        receivers: ``"logits"``, MLP inputs ``"m8"``, head inputs ``"a5.h1.q"`` (see module docstring).
        metric: ``metric(logits[batch, pos, vocab]) -> Tensor[batch]`` (e.g. ``task.metric``).
        sender_positions: ``None`` (every position), a ``[batch]`` tensor of positions (e.g.
            ``task.end_pos``), a ``[batch, pos]`` boolean mask, or a dict sender name -> one of those
            (senders missing from the dict use every position).
        receiver_positions: the same forms, restricting where sender deltas enter each receiver.
        head_output_positions: for head receivers, the positions where the head's changed output is
            kept (elsewhere it stays at baseline); the same forms, a dict keyed by head (``"a5.h1"``).
            The paper's step "senders at YY -> k/v of the circuit heads" reads the heads at END:
            ``sender_positions=yy, head_output_positions=end``.
        direction: ``"noising"`` (clean baseline, senders take corrupted values) or ``"denoising"``.
        logit_positions: positions the metric reads (``[batch]``); speeds up the unembedding and keeps only
            those positions' logits in memory (the metric sees NaN elsewhere).
        receivers_mode: ``"independent"`` (default, as in the papers: no receiver sees another receiver's
            change) or ``"joint"`` (a receiver's input holds the changes of the receivers before it); see
            :class:`ReceiversMode`. Matters only for receivers that read the residual stream at different
            depths (e.g. the keys of a5.h1 and of a9.h1).

    Returns:
        ``{"patched": Tensor[batch], "baseline": Tensor[batch], "new": Tensor[batch],
        "effect": float}`` where ``effect = mean(patched − baseline)``.

    >>> out = path_patch(model, clean, corrupt, ["a9.h1"], "logits", task.metric,
    ...                  sender_positions=task.end_pos)                       # doctest: +SKIP
    """
    sends = [c for c in parse_many(senders, model)]
    for s in sends:
        if s.kind == "logits" or s.input:
            raise ValueError(f"sender {str(s)!r} is not a component output; senders are heads, MLPs or 'embed'")
    vals, base, new = _patch_runs(model, clean, corrupt, [sends], receivers, metric, sender_positions,
                                  receiver_positions, direction, logit_positions, None, False,
                                  head_output_positions, receivers_mode)
    return {"patched": vals[0], "baseline": base, "new": new, "effect": float((vals[0] - base).mean())}


@dataclass
class PathPatchingResult:
    """Per-sender effects of one path-patching sweep (``effect = mean(patched − baseline)``).

    ``heads[l, h]`` is the effect of sender ``a{l}.h{h}``, ``mlps[l]`` of ``m{l}``, ``embed`` of the
    embedding (NaN where that sender was not swept). ``per_example[name]`` holds the patched metric
    of every example.
    """

    heads: Float[Tensor, "n_layers n_heads"]
    mlps: Optional[Float[Tensor, "n_layers"]]
    embed: float
    receivers: list[str]
    metric_name: str
    baseline: float
    new: float
    direction: str
    positions: str = "all"
    per_example: dict = field(default_factory=dict, repr=False)
    baseline_examples: Optional[Tensor] = field(default=None, repr=False)
    scale: float = 1.0  # effects are divided by this (see normalized())
    receivers_mode: str = ReceiversMode.INDEPENDENT.value  # see ReceiversMode
    parallel: bool = False  # the model's attention and MLP read the same residual stream (Pythia)

    @property
    def effects(self) -> dict[str, float]:
        """``{sender name: effect}`` for every swept sender, in residual order."""
        return {k: float((v - self.baseline_examples).mean()) / self.scale for k, v in self.per_example.items()}

    def normalized(self) -> "PathPatchingResult":
        """Effects divided by ``new − baseline`` (the change when the whole model takes the new input)."""
        scale = self.new - self.baseline
        if abs(scale) < 1e-12:
            raise ValueError("new and baseline metrics are equal; cannot normalise")
        mlps = None if self.mlps is None else self.mlps / scale
        return PathPatchingResult(self.heads / scale, mlps, self.embed / scale, self.receivers,
                                  f"{self.metric_name} (fraction of new − baseline)", self.baseline,
                                  self.new, self.direction, self.positions, self.per_example,
                                  self.baseline_examples, self.scale * scale, self.receivers_mode, self.parallel)

    def reaches(self, sender: str) -> bool:
        """Whether ``sender`` writes to the residual stream before some receiver reads it (a later or
        same-layer MLP cannot reach an MLP receiver; a head cannot reach a head of its own layer, nor, where
        attention and MLP run in parallel, the MLP of its own layer): the engine's own site order."""
        last = max(_site_order(parse(r), self.parallel) for r in self.receivers)
        return parse(sender).order < last

    def plot(self, title: Optional[str] = None):
        """A layer × head heatmap of head effects beside a bar chart of MLP (and embed) effects (see
        :func:`tutorial_lib.viz.patching.plot_path_patching`)."""
        from ..viz.patching import plot_path_patching

        return plot_path_patching(self, title)


def path_patch_sweep(
    model,
    clean: Int[Tensor, "batch pos"],
    corrupt: Int[Tensor, "batch pos"],
    receivers: "str | Sequence[str]",
    metric: Metric,
    senders: "str | Sequence[str]" = "all",
    sender_positions: PositionSpec = None,
    receiver_positions: PositionSpec = None,
    direction: str = "noising",
    logit_positions: Optional[Int[Tensor, "batch"]] = None,
    chunk_size: Optional[int] = None,
    metric_name: Optional[str] = None,
    progress: bool = True,
    head_output_positions: PositionSpec = None,
    receivers_mode: ReceiversModeLike = ReceiversMode.INDEPENDENT,
) -> PathPatchingResult:
    """Path-patch every sender on its own into ``receivers``; one batched computation per chunk.

    ``senders="all"`` means every head, every MLP and ``embed``; ``"heads"`` / ``"mlps"`` or a list
    of names restricts the sweep. A sender with no direct path to any receiver (e.g. a head in a
    later layer than the receiver) has effect exactly 0. Other arguments as in :func:`path_patch`.

    >>> res = path_patch_sweep(model, task.clean, task.corrupt, "m9", task.metric,
    ...                        sender_positions=task.end_pos, logit_positions=task.end_pos)  # doctest: +SKIP
    >>> res.heads.shape                                                                    # doctest: +SKIP
    torch.Size([12, 12])
    """
    names = _sender_names(model, senders)
    metric_name = metric_label(metric, metric_name)
    mode = as_receivers_mode(receivers_mode)
    runs = [[parse(n)] for n in names]
    vals, base, new = _patch_runs(model, clean, corrupt, runs, receivers, metric, sender_positions,
                                  receiver_positions, direction, logit_positions, chunk_size, progress,
                                  head_output_positions, mode)
    cfg = model.cfg
    heads = torch.full((cfg.n_layers, cfg.n_heads), float("nan"))
    mlps = None if cfg.attn_only else torch.full((cfg.n_layers,), float("nan"))
    embed = float("nan")
    per_example = {}
    for name, row in zip(names, vals):
        eff = float((row - base).mean())
        c = parse(name)
        per_example[name] = row.detach().cpu()
        if c.kind == "head":
            heads[c.layer, c.head] = eff
        elif c.kind == "mlp":
            mlps[c.layer] = eff
        else:
            embed = eff
    pos_label = "all" if sender_positions is None else "selected positions"
    return PathPatchingResult(heads, mlps, embed, [str(r) for r in parse_receivers(receivers, model)],
                              metric_name, float(base.mean()), float(new.mean()), direction, pos_label,
                              per_example, base.detach().cpu(), receivers_mode=mode.value,
                              parallel=bool(model.cfg.parallel_attn_mlp))


def _sender_names(model, senders) -> list[str]:
    if isinstance(senders, str) and senders in ("all", "heads", "mlps"):
        comps = all_components(model, include_embed=True)
        if senders == "heads":
            comps = [c for c in comps if c.startswith("a")]
        elif senders == "mlps":
            comps = [c for c in comps if c.startswith("m")]
        return comps
    out = []
    for c in parse_many(senders, model):
        if c.kind == "logits" or c.input:
            raise ValueError(f"sender {str(c)!r} is not a component output; senders are heads, MLPs, 'embed', "
                             "or one of 'all', 'heads', 'mlps'")
        out.append(str(c))
    if not out:
        raise ValueError("senders is empty")
    return sorted(set(out), key=sort_key)


def top_senders(result: PathPatchingResult, k: Optional[int] = None, threshold: Optional[float] = None,
                sign: str = "abs") -> list[str]:
    """The senders with the largest effects, strongest first.

    Args:
        k: keep at most ``k`` senders.
        threshold: keep senders whose (signed or absolute, see ``sign``) effect reaches this size, in
            metric units (e.g. ``0.02`` = two points of probability difference).
        sign: ``"abs"`` ranks by ``|effect|``; ``"negative"`` keeps only effects below 0 (patching the
            sender hurts, as in the paper's noising plots); ``"positive"`` only effects above 0.
    """
    if sign not in ("abs", "negative", "positive"):
        raise ValueError(f"unknown sign {sign!r}; accepted: 'abs', 'negative', 'positive'")
    score = {"abs": abs, "negative": lambda e: -e, "positive": lambda e: e}[sign]
    items = [(n, score(e)) for n, e in result.effects.items() if e == e]
    items = [(n, s) for n, s in items if s > 0 or sign == "abs"]
    if threshold is not None:
        items = [(n, s) for n, s in items if s >= threshold]
    items.sort(key=lambda t: -t[1])
    return [n for n, _ in (items if k is None else items[:k])]

