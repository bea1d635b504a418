"""A circuit is a set of named components (and optionally edges); one harness ablates any of them.

Path patching, edge attribution patching and the spectral recipe all return a :class:`Circuit`, so
the circuits three methods find for one task can be ablated with the same code and compared.

Ablation modes (one switch, ``mode=``):

* ``"zero"`` -- the component's output is set to 0 (a head's slice of ``hook_z``, so its share of
  the attention output vanishes; an MLP's ``hook_mlp_out``).
* ``"mean"`` -- replaced by its mean over a reference batch (per position when the reference has the
  same length as the input, otherwise over positions too), padding left out (``reference_valid``).
* ``"resample"`` -- replaced by its value on *another* prompt: row ``i`` takes row ``sources[i]`` of a
  reference batch, where :func:`resample_sources` draws a seeded derangement (no row keeps its own
  value). Every module that resample-ablates (consistency, circuit evaluation, the spectral study) uses
  this one function.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable, Optional, Sequence

import torch
from jaxtyping import Float, Int
from torch import Tensor

from .hooks import hooked
from .components import Component, all_components, output_hook, parse, parse_many, sort_key

ABLATION_MODES = ("zero", "mean", "resample")


def jaccard(a: Iterable, b: Iterable) -> float:
    """|A ∩ B| / |A ∪ B| of two sets of names (1.0 for two empty sets); the course's one Jaccard overlap.

    >>> jaccard({"a0.h1", "m0"}, {"m0", "m1"})
    0.3333333333333333
    """
    a, b = {str(x) for x in a}, {str(x) for x in b}
    return 1.0 if not a | b else len(a & b) / len(a | b)


@dataclass(frozen=True)
class Circuit:
    """A named set of components, e.g. ``Circuit({"a9.h1", "m10"}, name="greater-than")``.

    ``edges`` optionally holds ``(sender, receiver)`` pairs for methods that find edges (EAP); the
    ablation harness works on nodes.
    """

    nodes: frozenset
    name: str = "circuit"
    edges: frozenset = field(default_factory=frozenset)
    meta: dict = field(default_factory=dict, compare=False, hash=False)

    def __init__(self, nodes: Iterable[str] = (), name: str = "circuit", edges=(), meta=None):
        parsed = parse_many(list(nodes))
        bad = [str(c) for c in parsed if c.kind in ("logits",) or c.input]
        if bad:
            raise ValueError(f"a circuit holds heads, MLPs and 'embed' only; got {bad}")
        object.__setattr__(self, "nodes", frozenset(str(c) for c in parsed))
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "edges", frozenset((str(s), str(r)) for s, r in edges))
        object.__setattr__(self, "meta", dict(meta or {}))

    # --- set-like helpers -------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.nodes)

    def __iter__(self):
        return iter(sorted(self.nodes, key=sort_key))

    def __contains__(self, item) -> bool:
        return str(parse(item)) in self.nodes

    def __repr__(self) -> str:
        shown = ", ".join(list(self)[:12]) + (", ..." if len(self) > 12 else "")
        return f"Circuit({self.name!r}: {len(self)} components [{shown}])"

    @property
    def heads(self) -> list[str]:
        return [n for n in self if n.startswith("a")]

    @property
    def mlps(self) -> list[str]:
        return [n for n in self if n.startswith("m")]

    def at(self, position: str, kind: Optional[str] = None) -> list[str]:
        """The components that ``meta["positions"]`` places at ``position`` (e.g. ``"END"``, ``"YY"``), in
        layer order (:func:`~tutorial_lib.core.components.sort_key`: ``m8`` before ``m10``), optionally only one
        ``kind`` (``"head"`` or ``"mlp"``).

        >>> c = Circuit(["m10", "m8", "m0", "a9.h1"], meta={"positions": {"m10": "END", "m8": "END", "m0": "YY", "a9.h1": "END"}})
        >>> c.at("END", kind="mlp"), c.at("YY")
        (['m8', 'm10'], ['m0'])
        """
        positions = self.meta.get("positions")
        if not isinstance(positions, dict):
            raise ValueError(f"{self.name!r} records no positions (meta['positions']); it has meta keys {sorted(self.meta)}")
        kinds = {None: None, "head": "head", "mlp": "mlp"}
        if kind not in kinds:
            raise ValueError(f"kind must be 'head', 'mlp' or None; got {kind!r}")
        known = set(positions.values()) | {"END", "YY"}
        if position not in known:
            raise ValueError(f"unknown position {position!r}; accepted: {sorted(known)}")
        picked = [c for c, p in positions.items() if p == position and (kind is None or parse(c).kind == kind)]
        return sorted(picked, key=sort_key)

    def __or__(self, other: "Circuit") -> "Circuit":
        return Circuit(self.nodes | other.nodes, name=f"{self.name}|{other.name}")

    def __and__(self, other: "Circuit") -> "Circuit":
        return Circuit(self.nodes & other.nodes, name=f"{self.name}&{other.name}")

    def __sub__(self, other: "Circuit") -> "Circuit":
        return Circuit(self.nodes - other.nodes, name=f"{self.name}-{other.name}")

    def jaccard(self, other: "Circuit") -> float:
        """|A ∩ B| / |A ∪ B| (1.0 for two empty circuits); see :func:`jaccard`."""
        return jaccard(self.nodes, other.nodes)

    def complement(self, model) -> "Circuit":
        """Every head and MLP of ``model`` that is not in this circuit."""
        return Circuit(set(all_components(model)) - self.nodes, name=f"not {self.name}")

    def validate(self, model) -> "Circuit":
        """Raise ``ValueError`` if a component does not exist in ``model``; return self."""
        parse_many(self.nodes, model)
        return self


def _as_components(components, model) -> list[Component]:
    if isinstance(components, Circuit):
        components = components.nodes
    comps = parse_many(list(components), model)
    for c in comps:
        if c.kind == "logits" or c.input:
            raise ValueError(f"cannot ablate {str(c)!r}: ablate heads, MLPs or 'embed'")
    return comps


def resample_sources(n: int, seed: int = 0) -> Int[Tensor, "n"]:
    """For resample ablation: ``sources[i]`` is the row whose activations row ``i`` takes; the course's one
    definition. A seeded uniformly random *derangement*: no row ever keeps its own value, so every row is
    ablated (a plain shuffle leaves rows in place: with 2 rows and seed 0, ``torch.randperm`` is the
    identity and nothing is ablated).

    >>> s = resample_sources(5, seed=0)
    >>> sorted(s.tolist()) == list(range(5)) and bool((s != torch.arange(5)).all())
    True
    """
    if not isinstance(n, int) or n < 2:
        raise ValueError(f"resample ablation needs at least 2 prompts (each takes another prompt's "
                         f"activations); got {n!r}")
    gen = torch.Generator().manual_seed(int(seed))
    while True:  # rejection sampling: a uniform random permutation is a derangement with probability ~1/e
        perm = torch.randperm(n, generator=gen, device="cpu")
        if bool((perm != torch.arange(n, device="cpu")).all()):
            return perm


def real_token_mask(end_pos: Int[Tensor, "batch"], n_pos: int) -> Tensor:
    """``[batch, n_pos]`` booleans, True up to and including each row's ``end_pos`` (its last prompt token),
    False on the right padding after it."""
    end_pos = torch.as_tensor(end_pos, device=getattr(end_pos, "device", "cpu")).long()
    return torch.arange(n_pos, device=end_pos.device)[None, :] <= end_pos[:, None]


def valid_mean(act: Tensor, valid: Optional[Tensor], per_position: bool) -> Tensor:
    """The mean of ``act [batch, pos, ...]`` over rows (``per_position``) or over rows and positions, counting
    only the entries ``valid [batch, pos]`` marks as real tokens (padding is left out)."""
    if valid is None:
        return act.mean(0, keepdim=True) if per_position else act.mean(dim=(0, 1), keepdim=True)
    w = valid.to(act.device, act.dtype).reshape(*valid.shape, *([1] * (act.dim() - 2)))
    if per_position:
        count = w.sum(0, keepdim=True)
        pos_mean = (act * w).sum(0, keepdim=True) / count.clamp(min=1)
        overall = (act * w).sum(dim=(0, 1), keepdim=True) / w.sum().clamp(min=1)
        return torch.where(count > 0, pos_mean, overall)  # a position that is padding in every row
    return (act * w).sum(dim=(0, 1), keepdim=True) / w.sum().clamp(min=1)


def hooks_of(model, components) -> dict[str, list[Component]]:
    """``{hook name: components written there}`` for ``components`` (names, a :class:`Circuit` or parsed
    components): heads grouped by layer, ``embed`` on the token and (where the model has one) the position
    embedding's hook."""
    by_hook: dict[str, list[Component]] = {}
    comps = components if all(isinstance(c, Component) for c in components) else _as_components(components, model)
    for c in comps:
        by_hook.setdefault(output_hook(c), []).append(c)
        if c.kind == "embed" and "hook_pos_embed" in model.hook_dict:  # 'embed' covers positions too
            by_hook.setdefault("hook_pos_embed", []).append(c)
    return by_hook


def reference_values(model, names: Sequence[str], mode: str, reference, reference_valid=None, sources=None) -> dict:
    """What ablation ``mode`` writes at each hook of ``names``, from one run on ``reference`` (nothing for zero):
    for ``"mean"`` the per-position mean over ``reference_valid``'s real tokens (and the mean over positions too,
    ``name + ":flat"``), for ``"resample"`` the reference rows ``sources``. Read them with :func:`ablated_value`."""
    ref_acts: dict[str, Tensor] = {}
    if mode == "zero" or not names:
        return ref_acts
    with torch.no_grad():
        _, cache = model.run_with_cache(reference, names_filter=lambda n: n in names)
    for name in names:
        act = cache[name]
        if mode == "mean":
            ref_acts[name] = valid_mean(act, reference_valid, per_position=True)
            ref_acts[name + ":flat"] = valid_mean(act, reference_valid, per_position=False)
        else:
            ref_acts[name] = act[sources.to(act.device)]
    return ref_acts


def ablated_value(name: str, act: Tensor, mode: str, ref_acts: dict) -> Tensor:
    """The ablated value of the activation ``act`` ``[batch, pos, ...]`` at hook ``name``."""
    if mode == "zero":
        return torch.zeros_like(act)
    if mode == "mean":
        ref = ref_acts[name] if ref_acts[name].shape[1] == act.shape[1] else ref_acts[name + ":flat"]
        return ref.expand_as(act)  # a reference of another length: the mean over positions too
    new = ref_acts[name]
    if new.shape[:2] != act.shape[:2]:
        raise ValueError(f"resample ablation: {new.shape[0]} source rows of length {new.shape[1]} for an input of "
                         f"{act.shape[0]} rows of length {act.shape[1]}; give a reference (and sources) matching the input")
    return new


def ablation_hooks(
    model,
    components: "Circuit | Iterable[str]",
    mode: str = "zero",
    reference: Optional[Int[Tensor, "ref_batch pos"]] = None,
    seed: int = 0,
    positions: Optional[Int[Tensor, "batch"]] = None,
    reference_valid: Optional[Tensor] = None,
    sources: Optional[Int[Tensor, "batch"]] = None,
) -> list[tuple[str, Callable]]:
    """Forward hooks that ablate ``components`` (pass them to ``model.hooks(fwd_hooks=...)``).

    Args:
        model: a TransformerLens ``HookedTransformer``.
        components: a :class:`Circuit` or component names (``"a5.h1"``, ``"m3"``, ``"embed"``).
        mode: ``"zero"``, ``"mean"`` or ``"resample"`` (see the module docstring).
        reference: tokens whose activations define the mean / resample values (required for
            ``"mean"`` and ``"resample"``).
        seed: seeds the resample sources (:func:`resample_sources`).
        positions: if given, ablate only at ``positions[b]`` in each row ``b`` (every listed head of a
            layer in every row); else at every position.
        reference_valid: ``[ref_batch, pos]`` booleans, True on real tokens; mean ablation leaves the
            others (right padding) out of the mean. Default: every position counts.
        sources: for ``"resample"``, row ``b`` of the input takes row ``sources[b]`` of ``reference``
            (default :func:`resample_sources` over the reference, which must then have as many rows as the
            input: with ``reference`` the input itself, no row keeps its own value).

    >>> hooks = ablation_hooks(model, ["a1.h0", "m0"], "resample", reference=tokens)  # doctest: +SKIP
    """
    if mode not in ABLATION_MODES:
        raise ValueError(f"unknown ablation mode {mode!r}; accepted: {ABLATION_MODES}")
    comps = _as_components(components, model)
    if mode != "zero" and reference is None:
        raise ValueError(f"mode={mode!r} needs reference tokens (a batch to take means or resamples from)")
    if reference_valid is not None and reference is not None and tuple(reference_valid.shape) != tuple(reference.shape):
        raise ValueError(f"reference_valid has shape {tuple(reference_valid.shape)}; it must match the reference "
                         f"tokens' shape {tuple(reference.shape)}")
    if mode == "resample":
        sources = resample_sources(reference.shape[0], seed) if sources is None else torch.as_tensor(sources).long()
        if sources.dim() != 1 or (len(sources) and (sources.min() < 0 or sources.max() >= reference.shape[0])):
            raise ValueError(f"sources must be a 1-D tensor of reference rows 0..{reference.shape[0] - 1}; "
                             f"got {sources.tolist()}")
    by_hook = hooks_of(model, comps)
    ref_acts = reference_values(model, list(by_hook), mode, reference, reference_valid, sources)

    def make_hook(name: str, group: list[Component]):
        head_idx = [c.head for c in group if c.kind == "head"]

        def hook(act: Tensor, hook=None) -> Tensor:
            B = act.shape[0]
            new = ablated_value(name, act, mode, ref_acts)
            act = act.clone()
            if positions is None:
                rows, cols = slice(None), slice(None)
            else:
                pos = torch.as_tensor(positions, device=act.device).long()
                if pos.shape != (B,):
                    raise ValueError(f"positions must be a [batch={B}] tensor; got shape {tuple(pos.shape)}")
                rows, cols = torch.arange(B, device=act.device), pos
            if head_idx:
                h = torch.tensor(head_idx, device=act.device)
                if positions is None:
                    act[:, :, h] = new[:, :, h].to(act.dtype)
                else:  # every listed head in every row: index [B, n_heads]
                    act[rows[:, None], cols[:, None], h[None, :]] = new[rows[:, None], cols[:, None], h[None, :]].to(act.dtype)
            else:
                act[rows, cols] = new[rows, cols].to(act.dtype)
            return act

        return hook

    hooks = []
    for name, group in by_hook.items():
        hooks.append((name, make_hook(name, group)))
    return hooks


def run_with_ablation(
    model,
    tokens: Int[Tensor, "batch pos"],
    components: "Circuit | Iterable[str]",
    mode: str = "zero",
    reference: Optional[Int[Tensor, "batch pos"]] = None,
    seed: int = 0,
    positions: Optional[Int[Tensor, "batch"]] = None,
    reference_valid: Optional[Tensor] = None,
    sources: Optional[Int[Tensor, "batch"]] = None,
) -> Float[Tensor, "batch pos d_vocab"]:
    """Logits of ``model`` on ``tokens`` with ``components`` ablated (arguments as in :func:`ablation_hooks`;
    the hooks are removed afterwards, even on error)."""
    hooks = ablation_hooks(model, components, mode, reference, seed, positions, reference_valid, sources)
    with torch.no_grad(), hooked(model, fwd_hooks=hooks):
        return model(tokens)


def ablation_effect(
    model,
    tokens: Int[Tensor, "batch pos"],
    metric: Callable[[Tensor], Float[Tensor, "batch"]],
    components: "Circuit | Iterable[str]",
    mode: str = "zero",
    reference: Optional[Int[Tensor, "batch pos"]] = None,
    seed: int = 0,
) -> dict:
    """Per-example metric before and after ablating ``components``.

    Returns ``{"clean": Tensor[batch], "ablated": Tensor[batch], "drop": Tensor[batch]}`` where
    ``drop = clean - ablated``.
    """
    with torch.no_grad():
        clean = metric(model(tokens))
    ablated = metric(run_with_ablation(model, tokens, components, mode, reference, seed))
    return {"clean": clean, "ablated": ablated, "drop": clean - ablated}


def ablate_each(
    model,
    tokens: Int[Tensor, "batch pos"],
    metric: Callable[[Tensor], Float[Tensor, "batch"]],
    components: Optional[Iterable[str]] = None,
    mode: str = "zero",
    reference: Optional[Int[Tensor, "batch pos"]] = None,
    seed: int = 0,
    chunk_size: Optional[int] = None,
) -> dict:
    """The mean metric with each component ablated *alone*: ``{name: mean metric}``, in residual order.

    ``components``: names (default: every head and every MLP of ``model``). The same numbers as
    :func:`run_with_ablation` one component at a time, but the runs are stacked along the batch (``chunk_size``
    components per forward pass, by default as many as the device's work budget holds) and the reference run
    for ``"mean"`` / ``"resample"`` is made once: on a CPU a small batch costs nearly as much as a large one.
    """
    from .device import work_budget_bytes
    from .forward import BUDGET_BYTES

    names = all_components(model) if components is None else list(components)
    if mode not in ABLATION_MODES:
        raise ValueError(f"unknown ablation mode {mode!r}; accepted: {ABLATION_MODES}")
    if mode != "zero" and reference is None:
        raise ValueError(f"mode={mode!r} needs reference tokens (a batch to take means or resamples from)")
    comps = _as_components(names, model)
    if not comps:
        return {}
    tokens = tokens.to(model.cfg.device)
    B, P = tokens.shape
    sources = resample_sources(reference.shape[0], seed) if mode == "resample" else None
    ref_acts = reference_values(model, list(hooks_of(model, comps)), mode, reference, None, sources)
    cfg = model.cfg
    per = B * P * (cfg.d_vocab * 4 * 2 + max(cfg.d_model * 6, (cfg.d_mlp or 0) * 2, cfg.n_heads * P) * 4)
    chunk = chunk_size or max(1, work_budget_bytes(cfg.device, BUDGET_BYTES) // max(per, 1))
    out = {}
    for i in range(0, len(comps), chunk):
        part = comps[i:i + chunk]
        hooks = stacked_ablation_hooks(model, [[c] for c in part], B,
                                       lambda name, j, a: ablated_value(name, a, mode, ref_acts))
        with torch.no_grad(), hooked(model, fwd_hooks=hooks):
            logits = model(tokens.repeat(len(part), 1))
        for j, name in enumerate(names[i:i + chunk]):
            out[name] = metric(logits[j * B:(j + 1) * B]).float().mean().item()
    return out


def stacked_ablation_hooks(model, sets: Sequence, batch: int,
                           replacement: Callable[[str, int, Tensor], Tensor]) -> list[tuple[str, Callable]]:
    """Forward hooks for ``len(sets)`` stacked copies of a batch of ``batch`` rows (copy ``j`` in rows
    ``j * batch:(j + 1) * batch``, as ``tokens.repeat(len(sets), 1)`` lays them out) in which copy ``j`` has the
    components ``sets[j]`` ablated: at each of their hooks the copy's activation ``a`` (``[batch, pos, ...]``) takes
    ``replacement(hook_name, j, a)`` (for a head, only that head's slice). Several ablation runs then cost one
    forward pass; every copy ablates what :func:`ablation_hooks` would ablate for its set alone."""
    k = len(sets)
    at: dict[str, list[tuple[int, Component]]] = {}
    for j, comps in enumerate(sets):
        for hook_name, group in hooks_of(model, comps).items():
            at.setdefault(hook_name, []).extend((j, c) for c in group)

    def hook(act, hook):
        if act.shape[0] != k * batch:
            raise ValueError(f"stacked ablation hooks for {k} copies of {batch} rows got a batch of {act.shape[0]}")
        a = act.reshape(k, batch, *act.shape[1:]).clone()
        done = {}
        for j, c in at[hook.name]:
            new = done.get(j)
            if new is None:
                new = done[j] = replacement(hook.name, j, a[j]).to(a.dtype)
            if c.kind == "head":
                a[j, :, :, c.head] = new[:, :, c.head]
            else:
                a[j] = new
        return a.reshape(act.shape)

    return [(name, hook) for name in at]
