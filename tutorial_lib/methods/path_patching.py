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
  recomputed. The inputs of a receiving head that are not receivers keep their baseline value, and
  with ``head_output_positions`` (e.g. END) the head's changed output is kept only where it is read.
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
from enum import Enum
from typing import Iterable, Mapping, Optional, Sequence, Union

import torch
from jaxtyping import Float, Int
from torch import Tensor

from ..core.components import Component, all_components, parse, parse_many, sort_key
from ..core.forward import (
    Metric,
    PositionSpec,
    Runs,
    check_pair,
    evaluate_runs,
    make_caches,
    position_mask,
    repeat_batch,
    run_downstream,
)
from .patching import DIRECTIONS, metric_label


class ReceiversMode(str, Enum):
    """What a receiver's input is when there are several receivers at different depths.

    * ``INDEPENDENT`` (``"independent"``, the default; Wang et al. 2022, Goldowsky-Dill et al. 2023, and the
      greater-than paper's step into the circuit heads): each receiver's input is its baseline input plus
      only the direct sender -> receiver paths, ``baseline_input + Σ Δ_s``. No receiver sees another
      receiver's change. The receivers' changed outputs are still all added to the residual stream that
      the logits (and everything after the last receiver) read.
    * ``JOINT`` (``"joint"``): a receiver's input also holds the changed outputs of the receivers before
      it, ``baseline_input + (changes of earlier receivers) + Σ Δ_s`` (e.g. a5.h1's change at END reaches
      a9.h1's keys and values when both are receivers), so paths sender -> receiver -> later receiver
      are patched too.

    The two agree when all receivers read the residual stream at one place (the heads of one layer, one
    MLP, the logits, or the logits plus one layer's receivers: the logits always read every receiver's
    change).
    """

    INDEPENDENT = "independent"
    JOINT = "joint"


ReceiversModeLike = Union[ReceiversMode, str]


def as_receivers_mode(mode: ReceiversModeLike) -> ReceiversMode:
    """``mode`` as a :class:`ReceiversMode`; a ``ValueError`` names a bad value and what is accepted."""
    try:
        return ReceiversMode(mode)
    except ValueError:
        raise ValueError(f"unknown receivers_mode {mode!r}; accepted: "
                         f"{[m.value for m in ReceiversMode]}") from None


# ----------------------------------------------------------------------------------------- receivers
def parse_receivers(receivers, model) -> list[Component]:
    """Receiver names as components in residual order; a bare head (``"a5.h1"``) means its q, k and v inputs."""
    if isinstance(receivers, (str, Component)):
        receivers = [receivers]
    out: list[Component] = []
    for r in parse_many(list(receivers), model):
        if r.kind == "embed":
            raise ValueError("'embed' cannot be a receiver (it has no input); accepted receivers: 'logits', "
                             "'m<layer>' (an MLP's input), 'a<layer>.h<head>.q|k|v' (a head's input)")
        if r.kind == "head" and r.input is None:  # a bare head: all three of its inputs
            out += [Component("head", r.layer, r.head, x) for x in "qkv"]
        else:
            out.append(r)
    if not out:
        raise ValueError("receivers is empty; give at least one of 'logits', 'm<layer>', 'a<L>.h<H>.q|k|v'")
    return sorted(set(out), key=sort_key)


def _site_order(r: Component) -> float:
    return r.order  # heads of layer L: L; MLP L: L + 0.5; logits: inf


def _sites(receivers: list[Component]) -> list[tuple[float, list[Component]]]:
    """Receivers grouped by where they read the residual stream, in residual order."""
    groups: dict[float, list[Component]] = {}
    for r in receivers:
        groups.setdefault(_site_order(r), []).append(r)
    return sorted(groups.items())


# ----------------------------------------------------------------------------------------- engine
def _sender_delta(c: Component, model, base, new, p0: int) -> Float[Tensor, "batch pos d_model"]:
    """new_out − baseline_out of one sender, as it is written into the residual stream (positions p0:)."""
    if c.kind == "embed":
        return new.resid_pre[0][:, p0:] - base.resid_pre[0][:, p0:]
    if c.kind == "mlp":
        return new.mlp_out[c.layer][:, p0:] - base.mlp_out[c.layer][:, p0:]
    dz = new.z[c.layer][:, p0:, c.head] - base.z[c.layer][:, p0:, c.head]
    return dz @ model.blocks[c.layer].attn.W_O[c.head]


def _head_output(model, base, layer: int, head: int, inputs: dict, p0: int, n_rep: int):
    """Change in one head's output when some of its q/k/v inputs are replaced (positions p0:)."""
    blk = model.blocks[layer]
    attn = blk.attn

    def proj(x, W, b):
        return blk.ln1(x) @ W[head] + b[head]

    if "q" in inputs:
        q = proj(inputs["q"], attn.W_Q, attn.b_Q)
    else:
        q = repeat_batch(base.q[layer][:, p0:, head], n_rep)
    kv = []
    for name, W, b, cached in (("k", attn.W_K, attn.b_K, base.k), ("v", attn.W_V, attn.b_V, base.v)):
        if name in inputs:
            fresh = proj(inputs[name], W, b)
            kv.append(torch.cat([repeat_batch(cached[layer][:, :p0, head], n_rep), fresh], dim=1))
        else:
            kv.append(repeat_batch(cached[layer][:, :, head], n_rep))
    k, v = kv
    if model.cfg.positional_embedding_type == "rotary":  # as the model does: after the cache, queries offset by p0
        q = attn.apply_rotary(q[:, :, None], p0)[:, :, 0]
        k = attn.apply_rotary(k[:, :, None], 0)[:, :, 0]
    scores = (q @ k.transpose(-1, -2) / attn.attn_scale)[:, None]  # [N, 1, q, k]
    scores = attn.apply_causal_mask(scores, p0)
    pattern = torch.softmax(scores, dim=-1)[:, 0]
    z = pattern @ v  # [N, q, d_head]
    return (z - repeat_batch(base.z[layer][:, p0:, head], n_rep)) @ attn.W_O[head]


def _final_resid_with_paths_patched(model, base, new, runs: Runs, receivers, sender_masks, receiver_masks,
                                    out_masks, p0: int, mode: ReceiversMode) -> Tensor:
    """The final residual stream (positions p0:) when each run's senders are patched along their direct paths
    into ``receivers`` (``mode`` says whether a receiver's input also holds earlier receivers' changes):
    ``[n_runs * batch, pos - p0, d_model]``, run ``r`` in rows ``r*batch:(r+1)*batch``."""
    B = base.resid_pre[0].shape[0]
    c = len(runs)

    senders = sorted({s for run in runs for s in run}, key=sort_key)
    deltas = {s: _sender_delta(s, model, base, new, p0) * sender_masks[s][:, p0:, None] for s in senders}
    zero = torch.zeros_like(base.resid_pre[0][:, p0:])

    def delta_into(r: Component):
        """Σ of eligible senders' deltas into receiver r, for each run: [c * B, pos, d]."""
        rows = []
        for run in runs:
            tot = zero
            for s in run:
                if s.order < _site_order(r):
                    tot = tot + deltas[s]
            rows.append(tot * receiver_masks[r][:, p0:, None])
        return torch.stack(rows).reshape(c * B, *zero.shape[1:])

    # D: the receivers' changed outputs so far, added to the residual stream every later site reads
    D = torch.zeros(c * B, *zero.shape[1:], device=zero.device, dtype=zero.dtype)
    joint = mode is ReceiversMode.JOINT
    sites = _sites(receivers)
    for order, group in sites:
        if order == float("inf"):  # logits: the final residual, read through ln_final (every receiver's change)
            return repeat_batch(base.final[:, p0:], c) + D + delta_into(group[0])
        layer = group[0].layer
        seen = D if joint else 0.0  # what a receiver's input holds of earlier receivers' changes
        if group[0].kind == "mlp":
            blk = model.blocks[layer]
            x = repeat_batch(base.resid_mid[layer][:, p0:], c) + seen + delta_into(group[0])
            out = blk.apply_mlp(blk.ln2(x))
            D = D + out - repeat_batch(base.mlp_out[layer][:, p0:], c)
        else:
            x_base = repeat_batch(base.resid_pre[layer][:, p0:], c) + seen
            by_head: dict[int, dict] = {}
            for r in group:
                by_head.setdefault(r.head, {})[r.input] = x_base + delta_into(r)
            for head, inputs in by_head.items():
                keep = repeat_batch(out_masks[Component("head", layer, head)][:, p0:, None], c)
                D = D + _head_output(model, base, layer, head, inputs, p0, c) * keep
    # after the last receiver: recompute everything normally
    order, group = sites[-1]
    layer = group[0].layer
    if group[0].kind == "mlp" or model.cfg.attn_only:
        resid, start = repeat_batch(base.resid_post[layer][:, p0:], c) + D, layer + 1
    else:
        blk = model.blocks[layer]
        resid = repeat_batch(base.resid_mid[layer][:, p0:], c) + D
        resid, start = resid + blk.apply_mlp(blk.ln2(resid)), layer + 1
    return run_downstream(model, base, resid, start, p0, c)


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
    last = max(_site_order(r) for r in recv)
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
        model: a TransformerLens ``HookedTransformer`` (GPT-2-style: learned or rotary positions,
            sequential attention then MLP).
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
                                  self.baseline_examples, self.scale * scale, self.receivers_mode)

    def reaches(self, sender: str) -> bool:
        """Whether ``sender`` writes to the residual stream before some receiver reads it (a later or
        same-layer MLP cannot reach an MLP receiver; a head cannot reach a head of its own layer)."""
        last = max(parse(r).order for r in self.receivers)
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
                              per_example, base.detach().cpu(), receivers_mode=mode.value)


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

