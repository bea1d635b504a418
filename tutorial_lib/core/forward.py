"""Running part of a model from a cache: the one forward engine that patching, path patching, circuit
evaluation, the lens, EAP and the consistency ablations share.

* :func:`check_supported` / :func:`architecture_problems` -- the one list of model architectures each
  engine handles (the patching engine, EAP, the zoo trainer's fused forward); a model that one of them
  cannot run gets a ``ValueError`` naming what it has and what is accepted.
* :class:`RunCache` / :func:`make_caches` -- the activations of a run, by layer.
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

from typing import Callable, Mapping, Optional, Sequence, Union

import torch
from jaxtyping import Float, Int
from torch import Tensor
from .progress import tqdm

Metric = Callable[[Tensor], Tensor]
PositionSpec = Union[None, Tensor, Mapping[str, Tensor]]
Runs = list  # list of runs; a run is a list of Components patched together
ENGINES = ("patching", "eap", "fast_forward")
ENGINE_NAMES = {"patching": "the patching engine", "eap": "this EAP implementation",
                "fast_forward": "the trainer's fused forward"}
BUDGET_BYTES = 2**28  # ~256 MB of activations per chunk of runs


# ======================================================================= supported architectures
def architecture_problems(model, engine: str = "patching") -> list[str]:
    """What in ``model``'s architecture ``engine`` cannot run (empty if it can run it).

    One list for every engine; a feature one engine does handle says so (``handled_by``):

    * positional embeddings other than learned (``"standard"``) or ``"rotary"``: none;
    * ``parallel_attn_mlp`` (attention and MLP read the same residual stream): EAP only (its graph has
      no edge from a layer's heads into its MLP); the patching engine adds a head's change before
      the MLP, the fused forward runs them in sequence;
    * grouped-query attention (fewer key/value heads than query heads): none (``n_key_value_heads``
      equal to ``n_heads``, i.e. plain attention written the GQA way, is accepted by EAP);
    * post-norm or sandwich norm (a head's result is then not its additive share of the residual
      stream): none;
    * logit or attention-score soft caps, bidirectional attention, and a left-padding tokenizer (the
      model would build an attention mask): EAP only (it runs the model's own forward and applies the
      logit cap in :func:`apply_ln_final_and_unembed`).
    """
    if engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r}; accepted: {ENGINES}")
    cfg = model.cfg
    problems = []

    def reject(problem: str, handled_by: tuple = ()) -> None:
        if engine not in handled_by:
            problems.append(problem)

    if cfg.positional_embedding_type not in ("standard", "rotary"):
        reject(f"positional_embedding_type={cfg.positional_embedding_type!r} (accepted: 'standard', 'rotary')")
    if getattr(cfg, "parallel_attn_mlp", False):
        reject("parallel_attn_mlp=True", handled_by=("eap",))
    n_kv = getattr(cfg, "n_key_value_heads", None)
    if n_kv is not None:  # EAP runs ungrouped: one k and v receiver per query head (core.arch.ungrouped)
        reject(f"grouped-query attention (n_key_value_heads={n_kv}; accepted: one key/value head per query head)",
               handled_by=("eap",))
    if getattr(cfg, "use_normalization_before_and_after", False) or _post_norm(cfg):  # EAP: core.arch
        reject("post-norm / sandwich-norm (accepted: pre-norm models such as GPT-2, Pythia, the zoo)",
               handled_by=("eap",))
    for attr in ("attn_scores_soft_cap", "output_logits_soft_cap"):
        if (getattr(cfg, attr, -1.0) or -1.0) > 0:
            reject(f"{attr}={getattr(cfg, attr)}", handled_by=("eap",))
    if getattr(cfg, "attention_dir", "causal") != "causal":
        reject("bidirectional attention", handled_by=("eap",))
    if getattr(model, "tokenizer", None) is not None and getattr(model.tokenizer, "padding_side", "right") == "left":
        reject("a left-padding tokenizer (the model would build an attention mask)", handled_by=("eap",))
    return problems


def _post_norm(cfg) -> bool:
    from transformer_lens.utilities.architectures import POST_NORM_ARCHITECTURES

    return getattr(cfg, "original_architecture", None) in POST_NORM_ARCHITECTURES


def check_supported(model, engine: str = "patching") -> None:
    """Raise ``ValueError`` if ``engine`` (see :data:`ENGINES`) does not handle this architecture."""
    problems = architecture_problems(model, engine)
    if problems:
        raise ValueError(f"{ENGINE_NAMES[engine]} supports GPT-2-style models only; this model has "
                         + "; ".join(problems))


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
            value = call_metric(metric, self.logits, self.tokens.shape[0])
            check_finite(value, metric, "on the unpatched run")
            self._metric[metric] = value
        return self._metric[metric]


def make_caches(model, base_tokens, new_tokens) -> tuple[RunCache, RunCache]:
    """Cache the baseline and the new run (tokens moved to the model's device)."""
    check_supported(model)
    dev = model.cfg.device
    return RunCache(model, base_tokens.to(dev)), RunCache(model, new_tokens.to(dev))


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
    """``unembed(ln_final(resid))`` as in the model's forward (LayerNorm recomputed on ``resid``), with the
    model's logit soft cap (``cap * tanh(logits / cap)``) when it has one."""
    cfg = model.cfg
    if cfg.normalization_type is not None:
        resid = model.ln_final(resid)
    logits = model.unembed(resid)
    cap = getattr(cfg, "output_logits_soft_cap", 0.0) or 0.0
    return cap * torch.tanh(logits / cap) if cap > 0 else logits


def auto_chunk(model, base: RunCache, p0: int, logit_rows: int, n_runs: int) -> int:
    """How many runs to evaluate at once so that a chunk's activations stay near :data:`BUDGET_BYTES`."""
    B, P = base.tokens.shape
    cfg = model.cfg
    per_run = B * (P - p0) * max(cfg.d_model * 6, (cfg.d_mlp or 0) * 2, cfg.n_heads * (P - p0)) * 4
    per_run += logit_rows * cfg.d_vocab * 4 * 2
    return max(1, min(n_runs, BUDGET_BYTES // max(per_run, 1)))


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
    chunk = chunk_size or auto_chunk(model, base, p0, rows, len(runs))
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
                val = call_metric(metric, buf, B)
                if lp is not None and torch.isnan(val).any():
                    raise ValueError("the metric read logits outside logit_positions (they are NaN there); "
                                     "pass the positions your metric reads, or logit_positions=None")
                check_finite(val, metric, f"when patching {part[r]}")
                out.append(val)
    return torch.stack(out)
