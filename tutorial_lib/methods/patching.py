"""Activation patching sweeps, on the forward engine of :mod:`tutorial_lib.core.forward`.

Activation patching replaces one component's output in one run by its value in another run and
measures the metric. With ``direction="noising"`` (default) the clean run is the baseline and each
head / MLP in turn takes its value from the corrupted run; with ``"denoising"`` the corrupted run is
the baseline and each component takes its clean value.

>>> res = patch_heads(model, task.clean, task.corrupt, task.metric, logit_positions=task.end_pos,
...                   metric_name="probability difference")          # doctest: +SKIP
>>> res.values.shape, res.plot()                                     # doctest: +SKIP
(torch.Size([12, 12]), Figure(...))

Results are :class:`PatchingResult` objects: ``values`` is ``mean(patched) − mean(baseline)`` per
component, or, with ``normalize=True``, ``(mean(patched) − corrupt) / (clean − corrupt)`` where
``clean`` / ``corrupt`` are the unpatched runs' mean metrics (1 = behaves like the clean run,
0 = like the corrupted run).

How it is fast (the engine is :mod:`tutorial_lib.core.forward`): patching a component changes the residual stream only from that component on, and
(causal attention) only from the first patched position on. The engine caches both runs once, adds
the component's change ``Δ = new_out − baseline_out`` to the cached residual stream, then recomputes
only the later layers at the later positions (cached keys and values stand in for earlier
positions), batched over many components at once. ``logit_positions`` (e.g. ``task.end_pos``)
restricts the unembedding to the positions the metric reads; the others are NaN, so a metric that
reads them raises instead of returning a wrong number.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Sequence

import torch
from jaxtyping import Float, Int
from torch import Tensor
from ..core.progress import tqdm

from ..core.components import Component, parse
from ..core.forward import (
    Metric,
    check_pair,
    evaluate_runs,
    first_differing_position,
    heads_change,
    make_caches,
    position_mask,
    resid_after_attention_change,
    run_downstream,
)

DIRECTIONS = ("noising", "denoising")


# ======================================================================= activation patching
@dataclass
class PatchingResult:
    """Labelled result of an activation-patching sweep.

    ``values`` is ``[n_layers, n_heads]`` (heads), ``[n_layers]`` (MLPs), ``[n_layers, pos]`` (MLPs or
    the residual stream position by position) or ``[n_layers, n_heads, pos]`` (heads by position);
    ``row_labels`` / ``col_labels`` name its first two axes. ``per_example`` (sweeps over all positions at once):
    each example's change of the metric from the baseline, ``[n_layers(, n_heads), batch]``, unnormalised, for
    intervals over the examples (e.g. :func:`tutorial_lib.studies.fair.tied_with_best`).
    """

    values: Tensor
    row_labels: list
    col_labels: Optional[list]
    kind: str
    metric_name: str
    clean: float
    corrupt: float
    normalized: bool
    direction: str
    per_example: Optional[Tensor] = field(default=None, repr=False)

    @property
    def units(self) -> str:
        return "(patched − corrupt) / (clean − corrupt)" if self.normalized else f"Δ {self.metric_name}"

    def plot(self, title: Optional[str] = None):
        """Plotly figure: a diverging heatmap centred on 0 (a bar chart for a 1-D result)."""
        from ..viz.patching import plot_patching

        return plot_patching(self, title)


def _head_run_final(model, base, new, layer_of, p0, mask):
    """final_fn for patching head outputs: each run's head takes its new ``z`` (where ``mask`` is 1), the layer's
    attention output is recomputed from the patched ``z`` (:func:`~tutorial_lib.core.forward.heads_change`: its
    output norm too, where the family has one), then the rest of the layer and the later layers."""
    def final_fn(part, p0_):
        layer = layer_of(part[0])
        dz = (new.z[layer][:, p0_:] - base.z[layer][:, p0_:]) * mask[:, p0_:, None, None]
        runs_dz = torch.zeros(len(part), *dz.shape, device=dz.device, dtype=dz.dtype)
        for i, c in enumerate(part):
            runs_dz[i, :, :, c.head] = dz[:, :, c.head]
        delta = heads_change(model, base, layer, runs_dz, p0_)
        resid = resid_after_attention_change(model, base, layer, delta.reshape(-1, *delta.shape[2:]), p0_)
        return run_downstream(model, base, resid, layer + 1, p0_, len(part))
    return final_fn


def metric_label(metric: Metric, metric_name: Optional[str] = None) -> str:
    """The name to print for ``metric``: ``metric_name`` if given, else the ``metric_name`` of the task
    whose bound method ``metric`` is (``task.metric`` -> e.g. ``"probability difference"``), else
    ``"metric"``."""
    if metric_name:
        return metric_name
    name = getattr(getattr(metric, "__self__", None), "metric_name", None)
    return name if isinstance(name, str) and name else "metric"


def _sweep(model, clean, corrupt, metric, kind, by_position, direction, normalize, positions, logit_positions,
           chunk_size, progress, metric_name, position_labels):
    metric_name = metric_label(metric, metric_name)
    if direction not in DIRECTIONS:
        raise ValueError(f"unknown direction {direction!r}; accepted: {DIRECTIONS}")
    check_pair(clean, corrupt)
    cfg = model.cfg
    if kind == "mlps" and cfg.attn_only:
        raise ValueError("the model is attention-only: it has no MLPs to patch")
    clean_c, corrupt_c = make_caches(model, clean, corrupt, logit_positions)
    base, new = (clean_c, corrupt_c) if direction == "noising" else (corrupt_c, clean_c)
    B, P = base.tokens.shape
    dev = base.tokens.device
    pos_list = list(range(P)) if by_position else [None]
    n_h = cfg.n_heads if kind == "heads" else 1
    shape = (cfg.n_layers, n_h, len(pos_list))
    vals = torch.zeros(shape)
    each = None if by_position else torch.zeros(cfg.n_layers, n_h, B, device="cpu")
    # Before the first token where the two runs differ, every activation is the same in both (causal
    # attention), so a patch there changes nothing: those positions keep the baseline metric and the
    # recomputation starts at the first differing position. Exact, and it halves greater-than's sweeps.
    first_diff = first_differing_position(base.tokens, new.tokens)
    baseline_mean = float(base.metric(metric).mean())
    for pi, p in enumerate(tqdm(pos_list, desc=f"patching {kind}", disable=not progress or not by_position)):
        if p is None:
            mask = position_mask(positions, base.tokens, "positions")
        else:
            mask = torch.zeros(B, P, device=dev)
            mask[:, p] = 1.0
        if first_diff is None:
            mask.zero_()
        else:
            mask[:, :first_diff] = 0.0
        p0 = int(mask.any(0).nonzero()[0, 0]) if mask.any() else None
        if p0 is None:  # nothing differs where this run patches
            vals[:, :, pi] = baseline_mean
            if each is not None:
                each[:] = base.metric(metric).float().cpu()
            continue
        mask = mask.to(base.final.dtype)
        for layer in tqdm(range(cfg.n_layers), desc=f"patching {kind}", disable=not progress or by_position,
                          leave=False):
            if kind == "heads":
                runs = [Component("head", layer, h) for h in range(cfg.n_heads)]
                fn = _head_run_final(model, base, new, lambda c: c.layer, p0, mask)
            else:
                runs = [Component("mlp", layer)] if kind == "mlps" else [Component("resid", layer)]
                fn = _single_final(model, base, new, kind, layer, mask)
            res = evaluate_runs(model, base, runs, fn, p0, metric, logit_positions, chunk_size)
            vals[layer, :, pi] = res.mean(1).cpu()
            if each is not None:
                each[layer] = res.float().cpu()
    clean_m, corrupt_m = float(clean_c.metric(metric).mean()), float(corrupt_c.metric(metric).mean())
    if normalize:
        if abs(clean_m - corrupt_m) < 1e-12:
            raise ValueError("clean and corrupt metrics are equal; cannot normalise")
        vals = (vals - corrupt_m) / (clean_m - corrupt_m)
    else:
        vals = vals - float(base.metric(metric).mean())
    if not by_position:
        vals = vals[..., 0]
    if kind != "heads":
        vals = vals[:, 0]
    rows = [f"a{l}" if kind == "heads" else (f"m{l}" if kind == "mlps" else f"resid_pre {l}") for l in range(cfg.n_layers)]
    if by_position:
        cols = list(position_labels) if position_labels is not None else [str(p) for p in range(P)]
    else:
        cols = [f"h{h}" for h in range(cfg.n_heads)] if kind == "heads" else None
    if each is not None:
        each = each - base.metric(metric).float().cpu()
        each = each if kind == "heads" else each[:, 0]
    return PatchingResult(vals, rows, cols, kind, metric_name, clean_m, corrupt_m, normalize, direction, each)


def _single_final(model, base, new, kind, layer, mask):
    def final_fn(part, p0_):
        sl = slice(p0_, None)
        m = mask[:, sl, None]
        if kind == "mlps":
            resid = base.resid_post[layer][:, sl] + m * (new.mlp_out[layer][:, sl] - base.mlp_out[layer][:, sl])
            return run_downstream(model, base, resid, layer + 1, p0_, 1)
        resid = base.resid_pre[layer][:, sl] + m * (new.resid_pre[layer][:, sl] - base.resid_pre[layer][:, sl])
        return run_downstream(model, base, resid, layer, p0_, 1)
    return final_fn


_DOC = """

    Args:
        model: a TransformerLens ``HookedTransformer`` of any family the course supports: a patched head's
            layer recomputes its attention output (and its output norm, Gemma 2 / OLMo-2) from the heads' ``z``.
        clean, corrupt: token tensors of the same shape ``[batch, pos]``.
        metric: ``metric(logits[batch, pos, vocab]) -> Tensor[batch]`` (e.g. ``task.metric``).
        by_position: patch one position at a time (adds a ``pos`` axis) instead of all positions.
        direction: ``"noising"`` (clean baseline) or ``"denoising"`` (corrupted baseline).
        normalize: report ``(patched − corrupt) / (clean − corrupt)`` instead of ``patched − baseline``.
        positions: where to patch when ``by_position=False``: ``None`` (all), ``[batch]`` positions
            or a ``[batch, pos]`` mask.
        logit_positions: the positions the metric reads (e.g. ``task.end_pos``), for speed.
        metric_name: the metric's name in titles and colour bars (default: ``task.metric_name`` when
            ``metric`` is ``task.metric``, else ``"metric"``).
        position_labels: names for the position axis (e.g. the tokens of the first prompt).
    """


def patch_heads(model, clean: Int[Tensor, "batch pos"], corrupt: Int[Tensor, "batch pos"], metric: Metric,
                by_position: bool = False, direction: str = "noising", normalize: bool = False,
                positions=None, logit_positions=None, chunk_size=None, progress: bool = True,
                metric_name: Optional[str] = None, position_labels=None) -> PatchingResult:
    """Patch every head's output (``hook_z`` slice): ``values`` is ``[n_layers, n_heads(, pos)]``."""
    return _sweep(model, clean, corrupt, metric, "heads", by_position, direction, normalize, positions,
                  logit_positions, chunk_size, progress, metric_name, position_labels)


def patch_mlps(model, clean: Int[Tensor, "batch pos"], corrupt: Int[Tensor, "batch pos"], metric: Metric,
               by_position: bool = False, direction: str = "noising", normalize: bool = False,
               positions=None, logit_positions=None, chunk_size=None, progress: bool = True,
               metric_name: Optional[str] = None, position_labels=None) -> PatchingResult:
    """Patch every MLP's output (``hook_mlp_out``): ``values`` is ``[n_layers(, pos)]``."""
    return _sweep(model, clean, corrupt, metric, "mlps", by_position, direction, normalize, positions,
                  logit_positions, chunk_size, progress, metric_name, position_labels)


def patch_resid(model, clean: Int[Tensor, "batch pos"], corrupt: Int[Tensor, "batch pos"], metric: Metric,
                direction: str = "noising", normalize: bool = False, logit_positions=None, chunk_size=None,
                progress: bool = True, metric_name: Optional[str] = None, position_labels=None) -> PatchingResult:
    """Patch the residual stream entering each layer, one position at a time: ``[n_layers, pos]``."""
    return _sweep(model, clean, corrupt, metric, "resid", True, direction, normalize, None,
                  logit_positions, chunk_size, progress, metric_name, position_labels)


for _f in (patch_heads, patch_mlps, patch_resid):
    _f.__doc__ += _DOC


def patch_each(model, clean: Int[Tensor, "batch pos"], corrupt: Int[Tensor, "batch pos"], metric: Metric,
               components: Sequence[str], logit_positions=None, chunk_size: Optional[int] = None,
               progress: bool = False) -> Float[Tensor, "batch n_components"]:
    """Per-example ``metric(patched) − metric(clean)`` when each component in turn (``"a5.h1"``, ``"m3"``,
    ``"embed"``) takes its corrupted output at every position (noising): the exact effects that EAP's
    node scores estimate, from the fast engine (heads of a layer batched, only later layers recomputed,
    from the first position where the prompts differ).
    """
    check_pair(clean, corrupt)
    base, new = make_caches(model, clean, corrupt, logit_positions)
    B, P = base.tokens.shape
    baseline = base.metric(metric)
    out = torch.zeros(B, len(components))
    first = first_differing_position(base.tokens, new.tokens)
    if first is None:
        return out
    mask = torch.ones(B, P, device=base.tokens.device, dtype=base.final.dtype)
    mask[:, :first] = 0.0
    parsed = [parse(c, model) for c in components]
    groups: dict = {}
    for j, c in enumerate(parsed):
        if c.kind not in ("head", "mlp", "embed"):
            raise ValueError(f"patch_each patches heads, MLPs and the embedding; got {components[j]!r}")
        groups.setdefault((c.kind, c.layer if c.kind != "embed" else 0), []).append(j)
    for (kind, layer), cols in tqdm(list(groups.items()), desc="patching each component", disable=not progress):
        if kind == "head":
            fn = _head_run_final(model, base, new, lambda c: c.layer, first, mask)
            runs = [parsed[j] for j in cols]
        else:
            fn = _single_final(model, base, new, "mlps" if kind == "mlp" else "resid", layer, mask)
            runs = [parsed[cols[0]]]
        vals = evaluate_runs(model, base, runs, fn, first, metric, logit_positions, chunk_size)  # [runs, B]
        for r, j in enumerate(cols if kind == "head" else cols[:1]):
            out[:, j] = (vals[r] - baseline).float().cpu()
        if kind != "head":
            for j in cols[1:]:
                out[:, j] = out[:, cols[0]]
    return out

