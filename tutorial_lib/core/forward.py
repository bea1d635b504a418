"""Running part of a model from a cache: the one forward engine that patching, path patching, circuit
evaluation, the lens, EAP and the consistency ablations share.

* :func:`check_supported` / :func:`architecture_problems` -- re-exported from :mod:`tutorial_lib.core.supported`,
  the one list of model architectures each engine handles.
* :class:`RunCache` / :func:`make_caches` -- the activations of a run, by layer, and its logits (only at
  the positions the metric reads, when those are given); :func:`shared_caches` -- within it, one pair per task.
* :func:`repeat_batch` -- ``n`` stacked copies of a batch, the layout of a chunk of runs.
* :func:`run_downstream` -- recompute the blocks from a layer on, from a changed residual stream, with
  cached keys and values standing in for the positions before the change.
* :func:`apply_ln_final_and_unembed` -- the final LayerNorm plus the unembedding (and a logit soft cap)
  exactly as the model's own forward does them.
* :func:`call_metric` / :func:`check_finite` -- a metric must return one finite value per example; the
  error names the metric and the run (the component patched) where it did not.
* :func:`evaluate_runs` -- the metric of many patched runs, batched in chunks that fit in memory.

>>> metric_name(len)
'len'
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Callable, Iterator, Mapping, Optional, Sequence, Union

import torch
from jaxtyping import Float, Int
from torch import Tensor
from . import arch
from .device import work_budget_bytes
from .view import fused_ops
from .supported import ENGINE_NAMES, ENGINES, architecture_problems, check_supported  # noqa: F401  (the one list)
from .progress import tqdm

Metric = Callable[[Tensor], Tensor]
PositionSpec = Union[None, Tensor, Mapping[str, Tensor]]
Runs = list  # list of runs; a run is a list of Components patched together
BUDGET_BYTES = 2**28  # ~256 MB of activations per chunk of runs


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


def first_differing_position(a: Int[Tensor, "batch pos"], b: Int[Tensor, "batch pos"]) -> Optional[int]:
    """The first position where the two token tensors differ in any example (None if identical)."""
    diff = (a != b).any(0).nonzero()
    return int(diff[0, 0]) if len(diff) else None


# ======================================================================= metrics
def metric_name(metric) -> str:
    """The name of a metric function, for error messages."""
    return getattr(metric, "__qualname__", None) or getattr(metric, "__name__", None) or repr(metric)


def call_metric(metric: Metric, logits: Tensor, batch: int) -> Tensor:
    """``metric(logits)`` without gradients, checked to be a ``[batch]`` tensor (a detached copy)."""
    with torch.no_grad():
        out = metric(logits)
    if not isinstance(out, Tensor) or out.shape != (batch,):
        raise ValueError(f"metric must return a tensor [batch={batch}] (one value per example); got "
                         f"{type(out).__name__} {tuple(getattr(out, 'shape', ()))} from {metric_name(metric)}")
    return out.detach().clone()


def check_finite(values: Tensor, metric, where: str) -> None:
    """Raise ``ValueError`` naming the metric and the run if ``values`` holds NaN or inf."""
    bad = ~torch.isfinite(values)
    if bad.any():
        kinds = " and ".join(k for k, m in (("NaN", torch.isnan(values)), ("inf", torch.isinf(values))) if m.any())
        raise ValueError(f"metric {metric_name(metric)} returned {kinds} for {int(bad.sum())} of {values.numel()} "
                         f"examples {where}; a sweep over it would be meaningless (check the metric for a log of 0, "
                         "a division by zero, or positions it reads)")


# ======================================================================= caches
class RunCache:
    """The activations of one run that the engine reads, indexed by layer, and the logits a metric reads.

    ``logit_positions`` (a ``[batch]`` tensor of positions, e.g. ``task.end_pos``): keep only the logits at
    those positions (``logit_rows``, ``[batch, vocab]``), not all ``[batch, pos, vocab]`` of them -- for
    200 GPT-2 prompts of 15 tokens that is 40 MB instead of 600 MB per run. The metric then sees a
    ``[batch, pos, vocab]`` tensor that is NaN everywhere else (built only while the metric runs), so a
    metric that reads other positions fails loudly. ``None``: keep every position's logits.
    """

    def __init__(self, model, tokens: Int[Tensor, "batch pos"], logit_positions: Optional[Int[Tensor, "batch"]] = None):
        n = model.cfg.n_layers
        want = {"hook_z", "hook_q", "hook_k", "hook_v", "hook_mlp_out", "hook_resid_pre", "hook_resid_mid",
                "hook_resid_post"}
        self.logit_positions = checked_logit_positions(logit_positions, tokens)
        # return_type=None: the model's own [batch, pos, vocab] logits are never built
        with torch.no_grad(), fused_ops(model, norms=False):
            _, cache = model.run_with_cache(tokens, names_filter=lambda s: s.split(".")[-1] in want,
                                            return_type=None)
        self.tokens = tokens
        get = lambda name: [cache[f"blocks.{l}.{name}"] if f"blocks.{l}.{name}" in cache else None for l in range(n)]
        self.z, self.q, self.k, self.v = get("attn.hook_z"), get("attn.hook_q"), get("attn.hook_k"), get("attn.hook_v")
        # what each layer's key/value cache holds (after QK-norm, before rotary): run_downstream resumes from it
        self.k_cached = [arch.cached_keys(model, l, k) for l, k in enumerate(self.k)]
        self.v_cached = [arch.cached_values(model, v) for v in self.v]
        self.mlp_out, self.resid_pre = get("hook_mlp_out"), get("hook_resid_pre")
        self.resid_mid, self.resid_post = get("hook_resid_mid"), get("hook_resid_post")
        self.final = self.resid_post[-1]
        with torch.no_grad():
            if self.logit_positions is None:
                self._full_logits = apply_ln_final_and_unembed(model, self.final)
                self.logit_rows = None
            else:
                ar = torch.arange(tokens.shape[0], device=tokens.device)
                self._full_logits = None
                self.logit_rows = apply_ln_final_and_unembed(model, self.final[ar, self.logit_positions])
        self._metric: dict = {}

    @property
    def logits(self) -> Float[Tensor, "batch pos d_vocab"]:
        """The run's logits ``[batch, pos, vocab]``; with ``logit_positions``, a new tensor that is NaN
        outside those positions."""
        if self._full_logits is not None:
            return self._full_logits
        return scatter_logit_rows(self.logit_rows, self.logit_positions, self.tokens.shape[1])

    def metric(self, metric: Metric) -> Float[Tensor, "batch"]:
        if metric not in self._metric:
            value = call_metric(metric, self.logits, self.tokens.shape[0])
            if self.logit_positions is not None:
                check_reads_logit_positions(value)
            check_finite(value, metric, "on the unpatched run")
            self._metric[metric] = value
        return self._metric[metric]


def checked_logit_positions(logit_positions, tokens: Int[Tensor, "batch pos"]) -> Optional[Int[Tensor, "batch"]]:
    """``logit_positions`` as a ``[batch]`` long tensor on the tokens' device, in ``0..pos-1`` (or None)."""
    if logit_positions is None:
        return None
    B, P = tokens.shape
    lp = torch.as_tensor(logit_positions).to(tokens.device).long()
    if lp.shape != (B,):
        raise ValueError(f"logit_positions must be a [batch={B}] tensor of positions; got {tuple(lp.shape)}")
    if ((lp < -P) | (lp >= P)).any():
        raise ValueError(f"logit_positions {lp.tolist()} out of range for sequences of length {P}")
    return lp % P


def scatter_logit_rows(rows: Float[Tensor, "batch d_vocab"], positions: Int[Tensor, "batch"],
                       n_pos: int) -> Float[Tensor, "batch pos d_vocab"]:
    """A ``[batch, n_pos, vocab]`` tensor that holds ``rows[b]`` at position ``positions[b]`` and NaN elsewhere."""
    B, V = rows.shape
    out = torch.full((B, n_pos, V), float("nan"), dtype=rows.dtype, device=rows.device)
    out[torch.arange(B, device=rows.device), positions] = rows
    return out


def check_reads_logit_positions(values: Tensor) -> None:
    """Raise if a metric's values are NaN: it read logits outside ``logit_positions`` (NaN there)."""
    if torch.isnan(values).any():
        raise ValueError("the metric read logits outside logit_positions (they are NaN there); "
                         "pass the positions your metric reads, or logit_positions=None")


def make_caches(model, base_tokens, new_tokens, logit_positions: Optional[Int[Tensor, "batch"]] = None
                ) -> tuple[RunCache, RunCache]:
    """Cache the baseline and the new run (tokens moved to the model's device); with ``logit_positions``
    each keeps only the logits at those positions (see :class:`RunCache`). Inside :func:`shared_caches`, a pair
    built before for the same model, weights, tokens and positions is handed back instead."""
    check_supported(model)
    dev = model.cfg.device
    key = run_key(model, base_tokens, new_tokens, logit_positions) if _SHARED else None
    for k, pair in (_SHARED[-1] if key is not None else []):
        if same_run(k, key):
            return pair
    pair = (RunCache(model, base_tokens.to(dev), logit_positions), RunCache(model, new_tokens.to(dev), logit_positions))
    if key is not None:
        _SHARED[-1].append((key, pair))
    return pair


_SHARED: list = []  # one list of (key, caches) per open shared_caches() block


@contextmanager
def shared_caches() -> Iterator[None]:
    """Within the block, :func:`make_caches` builds the baseline and new caches of a (model, tokens, logit
    positions) once and hands the same pair to every later engine call: a search that runs ten sweeps on one task
    runs the model twice, not twenty times. A pair is not reused once any parameter is changed in place or
    replaced, nor while a hook is attached (a hook may change what the run computes); every pair is dropped when
    the block ends."""
    _SHARED.append([])
    try:
        yield
    finally:
        _SHARED.pop()


def run_key(model, *tensors):
    """What must match for a run's activations to be reused (:func:`same_run`): the model, each parameter's identity
    and in-place version, and ``tensors`` (tokens, positions; None allowed), on the CPU. None -- reuse nothing --
    while a hook is attached to the model (a hook may change what the run computes)."""
    from transformer_lens.hook_points import HookPoint

    if any(m._forward_hooks or m._forward_pre_hooks for m in model.modules() if isinstance(m, HookPoint)):
        return None
    weights = tuple((id(p), p._version) for p in model.parameters())
    return (id(model), weights) + tuple(None if t is None else torch.as_tensor(t).cpu() for t in tensors)


def same_run(a, b) -> bool:
    """Whether two :func:`run_key` results describe the same run (False when either is None)."""
    if a is None or b is None or len(a) != len(b) or a[:2] != b[:2]:
        return False
    same = lambda x, y: (x is None and y is None) or (  # noqa: E731
        x is not None and y is not None and x.shape == y.shape and torch.equal(x, y))
    return all(same(x, y) for x, y in zip(a[2:], b[2:]))


# ======================================================================= recompute from a layer on
def repeat_batch(t: Tensor, n_rep: int) -> Tensor:
    """``n_rep`` stacked copies of a batch: ``[B, ...] -> [n_rep * B, ...]``, copy ``r`` in rows ``r*B:(r+1)*B``
    (the layout of a chunk of runs throughout the engines).

    >>> repeat_batch(torch.tensor([[1], [2]]), 2).flatten().tolist()
    [1, 2, 1, 2]
    """
    return t.unsqueeze(0).expand(n_rep, *t.shape).reshape(n_rep * t.shape[0], *t.shape[1:])


def run_downstream(model, base: RunCache, resid: Tensor, start: int, p0: int, n_rep: int) -> Tensor:
    """Run blocks ``start..`` on ``resid`` (positions ``p0:`` of ``n_rep`` stacked copies of the batch).

    Positions before ``p0`` are unchanged, so their keys and values come from the baseline cache.
    """
    from transformer_lens.cache.key_value_cache_entry import TransformerLensKeyValueCacheEntry as Entry

    for layer in range(start, model.cfg.n_layers):
        entry = None
        if p0 > 0:
            entry = Entry(repeat_batch(base.k_cached[layer][:, :p0], n_rep),
                          repeat_batch(base.v_cached[layer][:, :p0], n_rep), frozen=True)
        resid = model.blocks[layer](resid, past_kv_cache_entry=entry)
    return resid


def heads_change(model, base: "RunCache", layer: int, dz: Tensor, p0: int) -> Tensor:
    """What layer ``layer``'s attention output changes by when its heads' ``z`` change by ``dz``
    ``[n_runs, batch, pos - p0, heads, d_head]`` (positions ``p0:``): ``[n_runs, batch, pos - p0, d_model]``.

    Pre-norm: ``sum_h dz_h @ W_O[h]`` (additive). With a norm on the summed output (Gemma 2's ``ln1_post``,
    OLMo-2's ``ln1``) the norm is recomputed on the patched sum: ``N(A + sum_h dz_h @ W_O[h]) - N(A)``, ``A`` the
    baseline's sum, so patching several heads together is exact too.
    """
    delta = torch.einsum("nbphk,hkd->nbpd", dz, model.blocks[layer].attn.W_O)
    return arch.through_output_norm(model, layer, base.z[layer][:, p0:], delta, dim=0)


def resid_after_attention_change(model, base: "RunCache", layer: int, attn_delta: Tensor, p0: int) -> Tensor:
    """Layer ``layer``'s output residual stream (positions ``p0:``) when its attention output changes by
    ``attn_delta`` ``[n_runs * batch, pos - p0, d_model]``: the MLP recomputed on the changed stream where it
    reads it (sequential blocks; its own norms as the family has them), left as it was where it reads the
    layer's input (parallel attention + MLP, Pythia) or where there is none."""
    n_rep = attn_delta.shape[0] // base.tokens.shape[0]
    cfg = model.cfg
    if cfg.attn_only or cfg.parallel_attn_mlp:
        return repeat_batch(base.resid_post[layer][:, p0:], n_rep) + attn_delta
    resid_mid = repeat_batch(base.resid_mid[layer][:, p0:], n_rep) + attn_delta
    return resid_mid + arch.mlp_output(model, layer, resid_mid)


def apply_ln_final_and_unembed(model, resid: Float[Tensor, "... d_model"]) -> Float[Tensor, "... d_vocab"]:
    """``unembed(ln_final(resid))`` as in the model's forward (LayerNorm recomputed on ``resid``), with the
    model's logit soft cap (``cap * tanh(logits / cap)``) when it has one."""
    cfg = model.cfg
    if cfg.normalization_type is not None:
        resid = model.ln_final(resid)
    logits = model.unembed(resid)
    cap = getattr(cfg, "output_logits_soft_cap", 0.0) or 0.0
    return cap * torch.tanh(logits / cap) if cap > 0 else logits


def auto_chunk(model, base: RunCache, p0: int, logit_rows: int, n_runs: int) -> int:
    """How many runs to evaluate at once so that a chunk's activations stay near the device's work budget
    (:func:`~tutorial_lib.core.device.work_budget_bytes`: :data:`BUDGET_BYTES` on a CPU, a share of free GPU memory)."""
    B, P = base.tokens.shape
    cfg = model.cfg
    per_run = B * (P - p0) * max(cfg.d_model * 6, (cfg.d_mlp or 0) * 2, cfg.n_heads * (P - p0)) * 4
    per_run += logit_rows * cfg.d_vocab * 4 * 2
    return max(1, min(n_runs, work_budget_bytes(cfg.device, BUDGET_BYTES) // max(per_run, 1)))


def evaluate_runs(model, base: RunCache, runs: Sequence, final_fn: Callable, p0: Optional[int], metric: Metric,
                  logit_positions=None, chunk_size: Optional[int] = None, progress: bool = False,
                  desc: str = "patching") -> Float[Tensor, "n_runs batch"]:
    """Metric of every run: ``final_fn(chunk_of_runs, p0)`` gives the final residual at positions p0:.

    With ``logit_positions`` only those positions are unembedded and the metric sees NaN elsewhere (one
    ``[batch, pos, vocab]`` buffer, reused for every run); ``base`` must then keep the logits at those
    positions (``RunCache(..., logit_positions)``) or at all positions.
    """
    B, P = base.tokens.shape
    dev = base.tokens.device
    baseline = base.metric(metric)
    if p0 is None or not runs:  # nothing is patched anywhere
        return baseline.unsqueeze(0).repeat(len(runs), 1)
    lp = checked_logit_positions(logit_positions, base.tokens)
    if lp is not None and base.logit_positions is not None and not torch.equal(lp, base.logit_positions):
        raise ValueError("logit_positions differ from the ones the baseline cache kept its logits at; build the "
                         "cache with the same logit_positions (or None)")
    if lp is None and base.logit_positions is not None:
        raise ValueError("the baseline cache kept logits only at its logit_positions; pass them to evaluate_runs")
    rows = B if lp is not None else B * (P - p0)
    chunk = chunk_size or auto_chunk(model, base, p0, rows, len(runs))
    ar = torch.arange(B, device=dev)
    if lp is not None:
        base_rows = base.logit_rows if base.logit_rows is not None else base.logits[ar, lp]
        buf = scatter_logit_rows(base_rows, lp, P)  # the one [batch, pos, vocab] buffer: NaN off lp
    else:
        buf = base.logits.clone()
    read_after_p0 = lp is None or bool((lp >= p0).all())  # every position the metric reads is at or after p0
    out = []
    with torch.no_grad(), fused_ops(model, norms=False):  # GPT-2's GELU in place: the model's own, bit for bit
        for i in tqdm(range(0, len(runs), chunk), desc=desc, disable=not progress, leave=False):
            part = runs[i:i + chunk]
            c = len(part)
            final = final_fn(part, p0).reshape(c, B, P - p0, -1)
            if lp is not None:
                sel = final[:, ar, (lp - p0).clamp(min=0)]  # [c, B, d]
                logits = apply_ln_final_and_unembed(model, sel)
                if not read_after_p0:  # a position the metric reads lies before the patch: the baseline's logits there
                    logits = torch.where((lp >= p0)[None, :, None], logits, base_rows[None])
            else:
                logits = apply_ln_final_and_unembed(model, final)
            for r in range(c):
                if lp is not None:
                    buf[ar, lp] = logits[r]
                else:
                    buf[:, p0:] = logits[r]
                val = call_metric(metric, buf, B)
                if lp is not None:
                    check_reads_logit_positions(val)
                check_finite(val, metric, f"when patching {part[r]}")
                out.append(val)
    return torch.stack(out)
