"""Activation patching sweeps, and the small engine that ``path_patching``, ``circuit_eval`` and ``lens`` share.

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

How it is fast: patching a component changes the residual stream only from that component on, and
(causal attention) only from the first patched position on. The engine caches both runs once, adds
the component's change ``Δ = new_out − baseline_out`` to the cached residual stream, then recomputes
only the later layers at the later positions (cached keys and values stand in for earlier
positions), batched over many components at once. ``logit_positions`` (e.g. ``task.end_pos``)
restricts the unembedding to the positions the metric reads; the others are NaN, so a metric that
reads them raises instead of returning a wrong number.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping, Optional, Sequence, Union

import torch
from jaxtyping import Float, Int
from torch import Tensor
from tqdm.auto import tqdm

from .components import Component

Metric = Callable[[Tensor], Tensor]
PositionSpec = Union[None, Tensor, Mapping[str, Tensor]]
Runs = list  # list of runs; a run is a list of Components patched together
DIRECTIONS = ("noising", "denoising")
BAR_COLOUR = "slategray"  # bar charts of effects: one plain colour, the axis gives the value
_BUDGET_BYTES = 2**28  # ~256 MB of activations per chunk of runs


# ======================================================================= input checks and positions
def check_pair(clean: Tensor, corrupt: Tensor) -> None:
    """Raise ``ValueError`` unless clean and corrupt are integer token tensors of the same shape."""
    for name, t in (("clean", clean), ("corrupt", corrupt)):
        if not isinstance(t, Tensor) or t.ndim != 2 or t.dtype in (torch.float32, torch.float64):
            raise ValueError(f"{name} tokens must be an integer tensor [batch, pos]; got {type(t).__name__} "
                             f"{tuple(getattr(t, 'shape', ()))}")
    if clean.shape != corrupt.shape:
        raise ValueError(f"clean tokens {tuple(clean.shape)} and corrupt tokens {tuple(corrupt.shape)} differ "
                         "in shape; patching needs prompts aligned position by position")


def position_mask(spec, tokens: Int[Tensor, "batch pos"], what: str = "positions") -> Float[Tensor, "batch pos"]:
    """A float mask ``[batch, pos]`` from ``None`` (all), an int, a ``[batch]`` position tensor or a mask."""
    B, P = tokens.shape
    dev = tokens.device
    if spec is None:
        return torch.ones(B, P, device=dev)
    if isinstance(spec, int):
        spec = torch.full((B,), spec)
    spec = torch.as_tensor(spec).to(dev)
    if spec.dtype == torch.bool and spec.shape == (B, P):
        return spec.float()
    if spec.ndim == 1 and spec.shape[0] == B and not spec.is_floating_point():
        if ((spec < -P) | (spec >= P)).any():
            raise ValueError(f"{what}: positions {spec.tolist()} out of range for sequences of length {P}")
        m = torch.zeros(B, P, device=dev)
        m[torch.arange(B, device=dev), spec % P] = 1.0
        return m
    raise ValueError(f"{what}: expected None, an int, a [batch={B}] integer tensor of positions or a "
                     f"[batch, pos]={B, P} boolean mask; got shape {tuple(spec.shape)} dtype {spec.dtype}")


def check_supported(model) -> None:
    """Raise ``ValueError`` if the fast engine does not handle this architecture."""
    cfg = model.cfg
    problems = []
    if cfg.positional_embedding_type not in ("standard", "rotary"):
        problems.append(f"positional_embedding_type={cfg.positional_embedding_type!r} (accepted: 'standard', "
                        "'rotary')")
    if getattr(cfg, "parallel_attn_mlp", False):
        problems.append("parallel_attn_mlp=True")
    if getattr(cfg, "n_key_value_heads", None) is not None:
        problems.append("grouped-query attention (n_key_value_heads)")
    if getattr(cfg, "use_normalization_before_and_after", False):
        problems.append("use_normalization_before_and_after=True")
    for attr in ("attn_scores_soft_cap", "output_logits_soft_cap"):
        if (getattr(cfg, attr, -1.0) or -1.0) > 0:
            problems.append(f"{attr}={getattr(cfg, attr)}")
    if getattr(cfg, "attention_dir", "causal") != "causal":
        problems.append("bidirectional attention")
    if getattr(model, "tokenizer", None) is not None and getattr(model.tokenizer, "padding_side", "right") == "left":
        problems.append("a left-padding tokenizer (the model would build an attention mask)")
    if problems:
        raise ValueError("the patching engine supports GPT-2-style models only; this model has " + "; ".join(problems))


# ======================================================================= caches
class RunCache:
    """The activations of one run that the engine reads, indexed by layer."""

    def __init__(self, model, tokens: Int[Tensor, "batch pos"]):
        n = model.cfg.n_layers
        want = {"hook_z", "hook_q", "hook_k", "hook_v", "hook_mlp_out", "hook_resid_pre", "hook_resid_mid",
                "hook_resid_post"}
        with torch.no_grad():
            self.logits, cache = model.run_with_cache(tokens, names_filter=lambda s: s.split(".")[-1] in want)
        self.tokens = tokens
        get = lambda name: [cache[f"blocks.{l}.{name}"] if f"blocks.{l}.{name}" in cache else None for l in range(n)]
        self.z, self.q, self.k, self.v = get("attn.hook_z"), get("attn.hook_q"), get("attn.hook_k"), get("attn.hook_v")
        self.mlp_out, self.resid_pre = get("hook_mlp_out"), get("hook_resid_pre")
        self.resid_mid, self.resid_post = get("hook_resid_mid"), get("hook_resid_post")
        self.final = self.resid_post[-1]
        self._metric: dict = {}

    def metric(self, metric: Metric) -> Float[Tensor, "batch"]:
        if metric not in self._metric:
            value = _call_metric(metric, self.logits, self.tokens.shape[0])
            check_finite(value, metric, "on the unpatched run")
            self._metric[metric] = value
        return self._metric[metric]


def make_caches(model, base_tokens, new_tokens) -> tuple[RunCache, RunCache]:
    """Cache the baseline and the new run (tokens moved to the model's device)."""
    check_supported(model)
    dev = model.cfg.device
    return RunCache(model, base_tokens.to(dev)), RunCache(model, new_tokens.to(dev))


def first_differing_position(a: Int[Tensor, "batch pos"], b: Int[Tensor, "batch pos"]) -> Optional[int]:
    """The first position where the two token tensors differ in any example (None if identical)."""
    diff = (a != b).any(0).nonzero()
    return int(diff[0, 0]) if len(diff) else None


def _metric_name(metric) -> str:
    return getattr(metric, "__qualname__", None) or getattr(metric, "__name__", None) or repr(metric)


def _call_metric(metric: Metric, logits: Tensor, batch: int) -> Tensor:
    with torch.no_grad():
        out = metric(logits)
    if not isinstance(out, Tensor) or out.shape != (batch,):
        raise ValueError(f"metric must return a tensor [batch={batch}] (one value per example); got "
                         f"{type(out).__name__} {tuple(getattr(out, 'shape', ()))} from {_metric_name(metric)}")
    return out.detach().clone()


def check_finite(values: Tensor, metric, where: str) -> None:
    """Raise ``ValueError`` naming the metric and the run if ``values`` holds NaN or inf."""
    bad = ~torch.isfinite(values)
    if bad.any():
        kinds = " and ".join(k for k, m in (("NaN", torch.isnan(values)), ("inf", torch.isinf(values))) if m.any())
        raise ValueError(f"metric {_metric_name(metric)} returned {kinds} for {int(bad.sum())} of {values.numel()} "
                         f"examples {where}; a sweep over it would be meaningless (check the metric for a log of 0, "
                         "a division by zero, or positions it reads)")


# ======================================================================= recompute from a layer on
def run_downstream(model, base: RunCache, resid: Tensor, start: int, p0: int, n_rep: int) -> Tensor:
    """Run blocks ``start..`` on ``resid`` (positions ``p0:`` of ``n_rep`` stacked copies of the batch).

    Positions before ``p0`` are unchanged, so their keys and values come from the baseline cache.
    """
    from transformer_lens.cache.key_value_cache_entry import TransformerLensKeyValueCacheEntry as Entry

    B = base.tokens.shape[0]
    rep = lambda t: t.unsqueeze(0).expand(n_rep, *t.shape).reshape(n_rep * B, *t.shape[1:])
    for layer in range(start, model.cfg.n_layers):
        entry = None
        if p0 > 0:
            entry = Entry(rep(base.k[layer][:, :p0]), rep(base.v[layer][:, :p0]), frozen=True)
        resid = model.blocks[layer](resid, past_kv_cache_entry=entry)
    return resid


def apply_ln_final_and_unembed(model, resid: Float[Tensor, "... d_model"]) -> Float[Tensor, "... d_vocab"]:
    """``unembed(ln_final(resid))`` as in the model's forward (LayerNorm recomputed on ``resid``)."""
    if model.cfg.normalization_type is not None:
        resid = model.ln_final(resid)
    return model.unembed(resid)


def _auto_chunk(model, base: RunCache, p0: int, logit_rows: int, n_runs: int) -> int:
    B, P = base.tokens.shape
    cfg = model.cfg
    per_run = B * (P - p0) * max(cfg.d_model * 6, (cfg.d_mlp or 0) * 2, cfg.n_heads * (P - p0)) * 4
    per_run += logit_rows * cfg.d_vocab * 4 * 2
    return max(1, min(n_runs, _BUDGET_BYTES // max(per_run, 1)))


def evaluate_runs(model, base: RunCache, runs: Sequence, final_fn: Callable, p0: Optional[int], metric: Metric,
                  logit_positions=None, chunk_size: Optional[int] = None, progress: bool = False,
                  desc: str = "patching") -> Float[Tensor, "n_runs batch"]:
    """Metric of every run: ``final_fn(chunk_of_runs, p0)`` gives the final residual at positions p0:."""
    B, P = base.tokens.shape
    dev = base.tokens.device
    baseline = base.metric(metric)
    if p0 is None or not runs:  # nothing is patched anywhere
        return baseline.unsqueeze(0).repeat(len(runs), 1)
    lp = None
    if logit_positions is not None:
        lp = torch.as_tensor(logit_positions).to(dev).long() % P
        if lp.shape != (B,):
            raise ValueError(f"logit_positions must be a [batch={B}] tensor of positions; got {tuple(lp.shape)}")
    rows = B if lp is not None else B * (P - p0)
    chunk = chunk_size or _auto_chunk(model, base, p0, rows, len(runs))
    ar = torch.arange(B, device=dev)
    if lp is not None:
        buf = torch.full_like(base.logits, float("nan"))
        base_rows = base.logits[ar, lp]
    else:
        buf = base.logits.clone()
    out = []
    with torch.no_grad():
        for i in tqdm(range(0, len(runs), chunk), desc=desc, disable=not progress, leave=False):
            part = runs[i:i + chunk]
            c = len(part)
            final = final_fn(part, p0).reshape(c, B, P - p0, -1)
            if lp is not None:
                sel = final[:, ar, (lp - p0).clamp(min=0)]  # [c, B, d]
                logits = apply_ln_final_and_unembed(model, sel)
                logits = torch.where((lp >= p0)[None, :, None], logits, base_rows[None])
            else:
                logits = apply_ln_final_and_unembed(model, final)
            for r in range(c):
                if lp is not None:
                    buf[ar, lp] = logits[r]
                else:
                    buf[:, p0:] = logits[r]
                val = _call_metric(metric, buf, B)
                if lp is not None and torch.isnan(val).any():
                    raise ValueError("the metric read logits outside logit_positions (they are NaN there); "
                                     "pass the positions your metric reads, or logit_positions=None")
                check_finite(val, metric, f"when patching {part[r]}")
                out.append(val)
    return torch.stack(out)


# ======================================================================= activation patching
@dataclass
class PatchingResult:
    """Labelled result of an activation-patching sweep.

    ``values`` is ``[n_layers, n_heads]`` (heads), ``[n_layers]`` (MLPs), ``[n_layers, pos]`` (MLPs or
    the residual stream position by position) or ``[n_layers, n_heads, pos]`` (heads by position);
    ``row_labels`` / ``col_labels`` name its first two axes.
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

    @property
    def units(self) -> str:
        return "(patched − corrupt) / (clean − corrupt)" if self.normalized else f"Δ {self.metric_name}"

    def plot(self, title: Optional[str] = None):
        """Plotly figure: a diverging heatmap centred on 0 (a bar chart for a 1-D result)."""
        import plotly.graph_objects as go

        title = title or f"Activation patching ({self.direction}) of {self.kind}: {self.metric_name}"
        v = self.values.detach().cpu().float()
        if v.ndim == 1:  # one bar per layer, in one plain colour: the y axis already gives the value
            fig = go.Figure(go.Bar(x=self.row_labels, y=v.tolist(), marker_color=BAR_COLOUR,
                                   hovertemplate="%{x}: %{y:.4f}<extra></extra>"))
            xlab = {"mlps": "MLP", "resid": "residual stream before layer"}.get(self.kind, "layer")
            fig.update_layout(title=title, xaxis_title=xlab, yaxis_title=self.units)
            fig.add_hline(y=0, line_color="black", line_width=1)
            return fig
        rows, cols = list(self.row_labels), list(self.col_labels)
        if v.ndim == 3:  # heads by position: one row per head
            rows = [f"{r}.h{h}" for r in self.row_labels for h in range(v.shape[1])]
            v = v.reshape(-1, v.shape[-1])
            cols = list(self.col_labels)
        ylab = "layer" if len(rows) == len(self.row_labels) else "head"
        xlab = "head" if self.kind == "heads" and self.values.ndim == 2 else "position"
        return heatmap(v, rows, cols, title, xlab, ylab, self.units)


def heatmap(values, rows, cols, title, xlab, ylab, units, reverse_y: bool = True):
    """A diverging (red-blue, centred on 0) plotly heatmap with axis and colorbar titles.

    ``reverse_y``: the first row at the top (layers, heads); ``False`` puts it at the bottom (for a
    quantity such as YY that should increase upward).
    """
    import plotly.graph_objects as go

    v = torch.as_tensor(values).float()
    fig = go.Figure(go.Heatmap(z=v.tolist(), x=[str(c) for c in cols], y=[str(r) for r in rows],
                               colorscale="RdBu", zmid=0, colorbar=dict(title=units)))
    fig.update_layout(title=title, xaxis_title=xlab, yaxis_title=ylab)
    if reverse_y:
        fig.update_yaxes(autorange="reversed")
    return fig


def _head_run_final(model, base, new, layer_of, p0, mask):
    """final_fn for patching head outputs: Δ added after layer L's attention, rest recomputed."""
    def final_fn(part, p0_):
        B = base.tokens.shape[0]
        layer = layer_of(part[0])
        blk = model.blocks[layer]
        dz = new.z[layer][:, p0_:] - base.z[layer][:, p0_:]
        deltas = torch.stack([dz[:, :, c.head] @ blk.attn.W_O[c.head] for c in part])  # [c, B, P', d]
        deltas = deltas * mask[None, :, p0_:, None]
        rep = lambda t: t.unsqueeze(0).expand(len(part), *t.shape).reshape(len(part) * B, *t.shape[1:])
        if model.cfg.attn_only:
            resid = rep(base.resid_post[layer][:, p0_:]) + deltas.reshape(-1, *deltas.shape[2:])
        else:
            resid = rep(base.resid_mid[layer][:, p0_:]) + deltas.reshape(-1, *deltas.shape[2:])
            resid = resid + blk.apply_mlp(blk.ln2(resid))
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
    clean_c, corrupt_c = make_caches(model, clean, corrupt)
    base, new = (clean_c, corrupt_c) if direction == "noising" else (corrupt_c, clean_c)
    B, P = base.tokens.shape
    dev = base.tokens.device
    pos_list = list(range(P)) if by_position else [None]
    n_h = cfg.n_heads if kind == "heads" else 1
    shape = (cfg.n_layers, n_h, len(pos_list))
    vals = torch.zeros(shape)
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
    return PatchingResult(vals, rows, cols, kind, metric_name, clean_m, corrupt_m, normalize, direction)


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
        model: a TransformerLens ``HookedTransformer`` (GPT-2-style; learned or rotary positions).
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
    from .components import parse

    check_pair(clean, corrupt)
    base, new = make_caches(model, clean, corrupt)
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

