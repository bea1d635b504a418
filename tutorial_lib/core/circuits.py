"""A circuit is a set of named components (and optionally edges); one harness ablates any of them.

Path patching, edge attribution patching and the spectral recipe all return a :class:`Circuit`, so
the circuits three methods find for one task can be ablated with the same code and compared.

Ablation modes (one switch, ``mode=``):

* ``"zero"`` -- the component's output is set to 0 (a head's slice of ``hook_z``, so its share of
  the attention output vanishes; an MLP's ``hook_mlp_out``).
* ``"mean"`` -- replaced by its mean over a reference batch (per position when the reference has the
  same length as the input, otherwise over positions too).
* ``"resample"`` -- replaced by its value on another prompt: row ``i`` takes row ``perm[i]`` of a
  reference batch of the same shape (seeded permutation), or the corrupted batch itself.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable, Optional, Sequence

import torch
from jaxtyping import Float, Int
from torch import Tensor

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


def ablation_hooks(
    model,
    components: "Circuit | Iterable[str]",
    mode: str = "zero",
    reference: Optional[Int[Tensor, "batch pos"]] = None,
    seed: int = 0,
    positions: Optional[Int[Tensor, "batch"]] = None,
) -> list[tuple[str, Callable]]:
    """Forward hooks that ablate ``components`` (pass them to ``model.hooks(fwd_hooks=...)``).

    Args:
        model: a TransformerLens ``HookedTransformer``.
        components: a :class:`Circuit` or component names (``"a5.h1"``, ``"m3"``, ``"embed"``).
        mode: ``"zero"``, ``"mean"`` or ``"resample"`` (see the module docstring).
        reference: tokens whose activations define the mean / resample values (required for
            ``"mean"`` and ``"resample"``).
        seed: seeds the resample permutation (ignored when ``reference`` is a different batch of the
            same size: then row ``i`` takes reference row ``i``, unless ``seed`` is not None and the
            reference is the input itself).
        positions: if given, ablate only at ``positions[b]`` in each row ``b``; else at every position.
    """
    if mode not in ABLATION_MODES:
        raise ValueError(f"unknown ablation mode {mode!r}; accepted: {ABLATION_MODES}")
    comps = _as_components(components, model)
    if mode != "zero" and reference is None:
        raise ValueError(f"mode={mode!r} needs reference tokens (a batch to take means or resamples from)")
    # group heads by hook so each hook is attached once
    by_hook: dict[str, list[Component]] = {}
    for c in comps:
        by_hook.setdefault(output_hook(c), []).append(c)
        if c.kind == "embed" and "hook_pos_embed" in model.hook_dict:  # 'embed' covers positions too
            by_hook.setdefault("hook_pos_embed", []).append(c)

    ref_acts: dict[str, Tensor] = {}
    if mode != "zero":
        with torch.no_grad():
            _, cache = model.run_with_cache(reference, names_filter=lambda n: n in by_hook)
        gen = torch.Generator().manual_seed(seed)
        perm = torch.randperm(reference.shape[0], generator=gen)
        for name in by_hook:
            act = cache[name]
            if mode == "mean":
                ref_acts[name] = act.mean(0, keepdim=True)
            else:
                ref_acts[name] = act[perm]

    def make_hook(name: str, group: list[Component]):
        head_idx = [c.head for c in group if c.kind == "head"]

        def hook(act: Tensor, hook=None) -> Tensor:
            if mode == "zero":
                new = torch.zeros_like(act)
            else:
                ref = ref_acts[name]
                if ref.shape[1] != act.shape[1]:  # different length: fall back to a positional mean
                    ref = ref.mean(dim=(0, 1), keepdim=True)
                new = ref.expand_as(act) if ref.shape[0] == 1 else ref
                if new.shape[0] != act.shape[0]:
                    raise ValueError(
                        f"resample reference has {new.shape[0]} rows but the input has {act.shape[0]}"
                    )
            act = act.clone()
            if positions is None:
                sel = (slice(None), slice(None))
            else:
                sel = (torch.arange(act.shape[0]), positions)
            if head_idx:
                idx = sel + (head_idx,)
                act[idx] = new[idx].to(act.dtype) if not (mode == "zero") else 0.0
            else:
                act[sel] = new[sel].to(act.dtype) if mode != "zero" else 0.0
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
) -> Float[Tensor, "batch pos d_vocab"]:
    """Logits of ``model`` on ``tokens`` with ``components`` ablated (hooks removed afterwards)."""
    hooks = ablation_hooks(model, components, mode, reference, seed, positions)
    with torch.no_grad(), model.hooks(fwd_hooks=hooks):
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
) -> dict:
    """The mean metric with each component ablated *alone*: ``{name: mean metric}``, in residual order.

    ``components``: names (default: every head and every MLP of ``model``). One forward pass per component.
    """
    names = all_components(model) if components is None else list(components)
    return {name: metric(run_with_ablation(model, tokens, [name], mode, reference)).float().mean().item()
            for name in names}
