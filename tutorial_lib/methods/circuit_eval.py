"""Circuit evaluation: does a circuit suffice for the behaviour, and is it necessary?

Both tests run the clean prompt while some components take their outputs from the corrupted run:

* **sufficiency**: only the circuit carries the clean input; every other head and MLP (and the
  embedding, unless ``"embed"`` is in the circuit) takes its corrupted output;
* **necessity**: only the circuit carries the corrupted input; everything else runs on the clean prompt.

The tests are node-level: circuit components are recomputed on the mixed residual stream, so the
edges among circuit components carry clean input and every edge from outside the circuit carries
corrupted input. (Hanna et al.'s test keeps only the circuit's *paths* clean; this node-level version
is a close, simpler stand-in.) Each returns a :class:`CircuitEvaluation`.

>>> from tutorial_lib.methods.path_discovery import paper_greater_than_circuit            # doctest: +SKIP
>>> print(circuit_sufficiency(model, task, paper_greater_than_circuit()))         # doctest: +SKIP
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Optional, Sequence

import torch
from torch import Tensor

from ..core.circuits import Circuit, real_token_mask, resample_sources, valid_mean
from ..core.components import parse as parse_comp
from ..core.device import work_budget_bytes
from ..core.forward import (BUDGET_BYTES, Metric, apply_ln_final_and_unembed, call_metric, check_finite,
                            check_pair, position_mask, scatter_logit_rows)


@dataclass
class CircuitEvaluation:
    """Metric of the model when only the circuit carries the clean (sufficiency) or corrupted
    (necessity) input; ``fraction_of_clean = value / clean`` (the paper's "% of the model"),
    ``normalized = (value − corrupt) / (clean − corrupt)``."""

    circuit: str
    test: str
    metric_name: str
    value: float
    clean: float
    corrupt: float
    per_example: Tensor

    @property
    def fraction_of_clean(self) -> float:
        return self.value / self.clean if self.clean else float("nan")

    @property
    def normalized(self) -> float:
        gap = self.clean - self.corrupt
        return (self.value - self.corrupt) / gap if gap else float("nan")

    def __str__(self) -> str:
        return (f"{self.test} of {self.circuit}: {self.metric_name} {self.value:.3f} "
                f"(clean {self.clean:.3f}, corrupt {self.corrupt:.3f}; {100 * self.fraction_of_clean:.1f}% "
                f"of clean, normalized {self.normalized:.3f})")


def _component_masks(model, task, circuit, positions) -> dict:
    """{hook name: keep-mask} with 1 where a circuit component sits (at its positions)."""
    if not isinstance(circuit, Circuit):
        raise ValueError(f"circuit must be a tutorial_lib.core.circuits.Circuit; got {type(circuit).__name__}")
    circuit.validate(model)
    positions = positions if positions is not None else circuit.meta.get("positions", {})
    unknown = [k for k in positions if k not in circuit]
    if unknown:
        raise ValueError(f"positions names {unknown}, which are not in the circuit {sorted(circuit.nodes)}")
    tokens = task.clean.to(model.cfg.device)
    B, P = tokens.shape
    cfg = model.cfg
    masks = {f"blocks.{l}.attn.hook_z": torch.zeros(B, P, cfg.n_heads, 1, device=tokens.device)
             for l in range(cfg.n_layers)}
    if not cfg.attn_only:
        masks.update({f"blocks.{l}.hook_mlp_out": torch.zeros(B, P, 1, device=tokens.device)
                      for l in range(cfg.n_layers)})
    masks["hook_embed"] = torch.zeros(B, P, 1, device=tokens.device)
    if "hook_pos_embed" in model.hook_dict:  # 'embed' is the token and the position embedding, as everywhere
        masks["hook_pos_embed"] = torch.zeros(B, P, 1, device=tokens.device)
    for name in circuit:
        where = positions.get(name)
        if isinstance(where, str):
            where = task.end_pos if where.upper() == "END" and where not in task.positions else task.positions.get(where)
            if where is None:
                raise ValueError(f"unknown position {positions[name]!r} for {name}; task has "
                                 f"{['END'] + sorted(task.positions)}")
        m = position_mask(where, tokens, f"positions[{name}]")
        c = parse_comp(name)
        if c.kind == "head":
            masks[f"blocks.{c.layer}.attn.hook_z"][:, :, c.head, 0] = m
        elif c.kind == "mlp":
            masks[f"blocks.{c.layer}.hook_mlp_out"][:, :, 0] = m
        else:
            for name in ("hook_embed", "hook_pos_embed"):
                if name in masks:
                    masks[name][:, :, 0] = m
    return masks


# what a component that does not carry the clean input is given instead (the ``ablation`` argument)
ABLATIONS = ("corrupt", "resample", "mean", "zero")


def _replacements(model, clean, corrupt, masks, ablation, valid=None, seed=0):
    """``(corrupted-run logits, {hook: replacement activation})`` for ``ablation``: the corrupted run's value
    (``"corrupt"``, the paper's), another clean prompt's value (``"resample"``: prompt i takes prompt
    ``resample_sources(n, seed)[i]``'s, never its own), the mean over the clean prompts' real tokens at each
    position (``"mean"``: padding left out), or zero (``"zero"``) -- the same definitions as
    :func:`tutorial_lib.core.circuits.ablation_hooks`."""
    if ablation not in ABLATIONS:
        raise ValueError(f"unknown ablation {ablation!r}; accepted: {list(ABLATIONS)}")
    with torch.no_grad():
        corrupt_logits, cache = model.run_with_cache(corrupt, names_filter=lambda n: n in masks)
        if ablation == "corrupt":
            return corrupt_logits, {n: cache[n] for n in masks}
        _, clean_cache = model.run_with_cache(clean, names_filter=lambda n: n in masks)
    if ablation == "resample":
        src = resample_sources(clean.shape[0], seed).to(clean.device)
        return corrupt_logits, {n: clean_cache[n][src] for n in masks}
    if ablation == "mean":
        return corrupt_logits, {n: valid_mean(clean_cache[n], valid, per_position=True).expand_as(clean_cache[n])
                                for n in masks}
    return corrupt_logits, {n: torch.zeros_like(clean_cache[n]) for n in masks}


def _row_bytes(model, P: int) -> int:
    """Bytes one stacked row of a batched evaluation holds at once (activations and one position's logits)."""
    cfg = model.cfg
    return P * max(cfg.d_model * 6, (cfg.d_mlp or 0) * 2, cfg.n_heads * P) * 4 + cfg.d_vocab * 4 * 2


def evaluate_circuit_tests(model, task, jobs: Sequence[tuple], metrics: Sequence[Metric] = (), ablation: str = "corrupt",
                           seed: int = 0, chunk_size: Optional[int] = None) -> list[list[CircuitEvaluation]]:
    """Several sufficiency / necessity tests on one task in few forward passes: ``jobs`` is a list of
    ``(circuit, test)`` or ``(circuit, test, positions)`` with ``test`` ``"sufficiency"`` or ``"necessity"``;
    returns, per job, one :class:`CircuitEvaluation` per metric of ``metrics`` (default: the task's metric).

    The clean and the corrupted (or reference) runs are made once for all jobs, and the jobs' hooked runs are
    stacked along the batch (``chunk_size`` jobs per forward pass, by default as many as the device's work budget
    holds). Where the task has ``end_pos``, only those positions are unembedded and a metric sees NaN elsewhere;
    a metric that reads other positions is then run on the full logits instead. Each job's numbers are those of
    :func:`circuit_sufficiency` / :func:`circuit_necessity` alone (stacking changes only float rounding)."""
    metrics = list(metrics) or [task.metric]
    if not jobs:
        return []
    parsed = []
    for job in jobs:
        circuit, test, positions = (tuple(job) + (None,))[:3]
        if test not in ("sufficiency", "necessity"):
            raise ValueError(f"unknown test {test!r}; accepted: 'sufficiency', 'necessity'")
        parsed.append((circuit, test, _component_masks(model, task, circuit, positions)))
    dev = model.cfg.device
    clean, corrupt = task.clean.to(dev), task.corrupt.to(dev)
    check_pair(clean, corrupt)
    B, P = clean.shape
    valid = real_token_mask(task.end_pos, P).to(dev)
    names = list(parsed[0][2])
    corrupt_logits, cache = _replacements(model, clean, corrupt, dict.fromkeys(names), ablation, valid, seed)
    with torch.no_grad():
        clean_logits = model(clean)
    lp = getattr(task, "end_pos", None)
    lp = None if lp is None else torch.as_tensor(lp).to(dev).long() % P
    if lp is not None and not all(_reads_only(m, logits, lp) for m in metrics for logits in (clean_logits, corrupt_logits)):
        lp = None  # some metric reads other positions: unembed them all
    base = [(call_metric(m, clean_logits, B).float().mean().item(), call_metric(m, corrupt_logits, B).float().mean().item())
            for m in metrics]
    row = _row_bytes(model, P) + (0 if lp is not None else P * model.cfg.d_vocab * 4)
    chunk = chunk_size or max(1, work_budget_bytes(dev, BUDGET_BYTES) // max(B * row, 1))
    out = []
    for i in range(0, len(parsed), chunk):
        part = parsed[i:i + chunk]
        k = len(part)
        # per hook: [k, B, ...] masks of where the clean-run value is kept (the circuit for sufficiency, the rest
        # for necessity); elsewhere the replacement
        carry = {n: torch.stack([m[n] if test == "sufficiency" else 1.0 - m[n] for _, test, m in part]) for n in names}

        def hook(act, hook):
            a = act.reshape(k, B, *act.shape[1:])
            keep = carry[hook.name].to(act.dtype)
            return (keep * a + (1.0 - keep) * cache[hook.name][None]).reshape(act.shape)

        with torch.no_grad(), model.hooks(fwd_hooks=[(n, hook) for n in names]):
            stacked = clean.repeat(k, 1)
            if lp is not None:
                resid = model(stacked, stop_at_layer=model.cfg.n_layers)
                logits = apply_ln_final_and_unembed(model, resid[torch.arange(k * B, device=dev), lp.repeat(k)])
            else:
                logits = model(stacked)
        for j, (circuit, test, _) in enumerate(part):
            mine = logits[j * B:(j + 1) * B]
            if lp is not None:
                mine = scatter_logit_rows(mine, lp, P)
            evals = []
            for m, (c_val, x_val) in zip(metrics, base):
                vals = call_metric(m, mine, B)
                check_finite(vals, m, f"in the {test} test of {circuit.name}")
                evals.append(CircuitEvaluation(circuit.name, test, getattr(task, "metric_name", "metric"),
                                               float(vals.mean()), c_val, x_val, vals.cpu()))
            out.append(evals)
    return out


def _reads_only(metric, logits, lp) -> bool:
    """Whether ``metric`` gives the same values when ``logits`` keep only the positions ``lp`` (NaN elsewhere)."""
    B, P = logits.shape[:2]
    full = call_metric(metric, logits, B)
    only = call_metric(metric, scatter_logit_rows(logits[torch.arange(B, device=logits.device), lp], lp, P), B)
    return bool(torch.allclose(full.float(), only.float(), rtol=1e-6, atol=1e-7))


def evaluate_circuits(model, task, circuits: Sequence, test: str = "necessity", metric: Optional[Metric] = None,
                      ablation: str = "corrupt", seed: int = 0) -> list[CircuitEvaluation]:
    """:func:`circuit_necessity` (or, with ``test="sufficiency"``, :func:`circuit_sufficiency`) of each of
    ``circuits`` (positions from each circuit's ``meta``), batched (:func:`evaluate_circuit_tests`): a list of
    :class:`CircuitEvaluation`, in order. Use it for many circuits on one task -- controls, one component at a time."""
    return [e[0] for e in evaluate_circuit_tests(model, task, [(c, test) for c in circuits],
                                                 [metric] if metric else (), ablation, seed)]


def _evaluate_circuit(model, task, circuit, positions, metric, test, ablation="corrupt", seed=0):
    return evaluate_circuit_tests(model, task, [(circuit, test, positions)], [metric] if metric else (), ablation,
                                  seed)[0][0]


def circuit_sufficiency(model, task, circuit, positions: Optional[Mapping] = None,
                        metric: Optional[Metric] = None, ablation: str = "corrupt", seed: int = 0) -> CircuitEvaluation:
    """Only the circuit carries the clean input: every other head, MLP (and the embedding, unless
    ``"embed"`` is in the circuit) takes its output from the corrupted run, at every position.

    ``positions`` maps circuit components to where they belong (``"END"``, ``"YY"``, a ``[batch]``
    tensor; default ``circuit.meta["positions"]``, else every position); at other positions the
    component too takes its corrupted value. ``ablation``: what the components that do not carry the clean
    input are given instead (:data:`ABLATIONS`: the corrupted run's value, the default and the paper's;
    another clean prompt's, ``"resample"``, with ``seed`` choosing which; the clean prompts' mean per position,
    ``"mean"``; ``"zero"``).
    Circuit components are recomputed on the mixed residual
    stream, so the edges between circuit components carry clean information and every edge from
    outside carries corrupted information. (Hanna et al.'s test keeps only the circuit's *paths*
    clean; this node-level version is a close, simpler stand-in.)

    >>> ev = circuit_sufficiency(model, task, paper_greater_than_circuit())   # doctest: +SKIP
    >>> print(ev)   # paper (its own figure): 72.7% prob. diff., 89.5% of GPT-2's 81.7%  # doctest: +SKIP
    """
    return _evaluate_circuit(model, task, circuit, positions, metric, "sufficiency", ablation, seed)


def circuit_necessity(model, task, circuit, positions: Optional[Mapping] = None,
                      metric: Optional[Metric] = None, ablation: str = "corrupt", seed: int = 0) -> CircuitEvaluation:
    """Only the circuit carries the corrupted input: its components (at their positions) take their
    outputs from the corrupted run; everything else is recomputed on the clean prompt.
    Arguments as in :func:`circuit_sufficiency`."""
    return _evaluate_circuit(model, task, circuit, positions, metric, "necessity", ablation, seed)
