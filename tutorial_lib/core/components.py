"""One vocabulary for model components, shared by every method in the course.

Components are named as in the papers:

========== ===================================== =====================================
name       meaning                               TransformerLens hook it lives at
========== ===================================== =====================================
``embed``  token + learned position embedding    ``hook_embed`` / ``hook_pos_embed``
``a5.h1``  attention head 1 of layer 5           ``blocks.5.attn.hook_z`` (head slice)
``m10``    the MLP of layer 10                   ``blocks.10.hook_mlp_out``
``logits`` the unembedding (a receiver only)     ``ln_final.hook_normalized``
========== ===================================== =====================================

With rotary positions there is no positional embedding to patch: ``embed`` is the token embedding
alone, and positions act inside each head's query-key product.

A receiver of a path can also be one input of a head: ``a5.h1.q``, ``a5.h1.k``, ``a5.h1.v``.

>>> parse("a5.h1")
Component(kind='head', layer=5, head=1, input=None)
>>> str(parse("m10"))
'm10'
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import total_ordering
from typing import Iterable, Optional

_HEAD = re.compile(r"^a(\d+)\.h(\d+)(?:\.([qkv]))?$")
_MLP = re.compile(r"^m(\d+)$")
ACCEPTED = "'embed', 'logits', 'a<layer>.h<head>' (e.g. 'a5.h1'), 'a5.h1.q|k|v', 'm<layer>' (e.g. 'm10')"


@total_ordering
@dataclass(frozen=True)
class Component:
    """A parsed component name. ``kind`` is ``'embed'``, ``'head'``, ``'mlp'`` or ``'logits'``.

    Components sort in residual-stream order (:func:`sort_key`), never by the name of their kind:

    >>> [str(c) for c in sorted(parse_many(["m10", "a2.h0", "m2", "embed", "a10.h3"]))]
    ['embed', 'a2.h0', 'm2', 'a10.h3', 'm10']
    """

    kind: str
    layer: Optional[int] = None
    head: Optional[int] = None
    input: Optional[str] = None  # 'q', 'k' or 'v' for a head's input, else None

    def __str__(self) -> str:
        if self.kind == "head":
            base = f"a{self.layer}.h{self.head}"
            return base + (f".{self.input}" if self.input else "")
        if self.kind == "mlp":
            return f"m{self.layer}"
        return self.kind

    def __lt__(self, other: "Component") -> bool:
        if not isinstance(other, Component):
            return NotImplemented
        return sort_key(self) < sort_key(other)

    @property
    def node(self) -> "Component":
        """The component without its q/k/v input suffix (``a5.h1.q`` -> ``a5.h1``)."""
        return Component(self.kind, self.layer, self.head, None)

    @property
    def order(self) -> float:
        """Position in the residual stream: embed < layer-0 heads < m0 < layer-1 heads < ... < logits."""
        if self.kind == "embed":
            return -1.0
        if self.kind == "logits":
            return float("inf")
        return self.layer + (0.0 if self.kind == "head" else 0.5)


def parse(name: "str | Component", model=None) -> Component:
    """Parse a component name; with ``model`` given, check that it exists in that model.

    Raises :class:`ValueError` naming the bad value and the accepted forms.
    """
    if isinstance(name, Component):
        comp = name
    else:
        if not isinstance(name, str):
            raise ValueError(f"component name must be a string, got {name!r}; accepted: {ACCEPTED}")
        text = name.strip()
        if text in ("embed", "logits"):
            comp = Component(text)
        elif m := _HEAD.match(text):
            comp = Component("head", int(m.group(1)), int(m.group(2)), m.group(3))
        elif m := _MLP.match(text):
            comp = Component("mlp", int(m.group(1)))
        else:
            raise ValueError(f"unknown component {name!r}; accepted: {ACCEPTED}")
    if model is not None:
        check_exists(comp, model)
    return comp


def check_exists(comp: Component, model) -> None:
    """Raise ``ValueError`` if ``comp`` is not part of ``model`` (layer or head out of range, no MLPs)."""
    cfg = model.cfg
    if comp.kind in ("embed", "logits"):
        return
    if not 0 <= comp.layer < cfg.n_layers:
        raise ValueError(
            f"component {str(comp)!r} does not exist: the model has layers 0..{cfg.n_layers - 1}"
        )
    if comp.kind == "head" and not 0 <= comp.head < cfg.n_heads:
        raise ValueError(
            f"component {str(comp)!r} does not exist: the model has heads 0..{cfg.n_heads - 1} per layer"
        )
    if comp.kind == "mlp" and getattr(cfg, "attn_only", False):
        raise ValueError(f"component {str(comp)!r} does not exist: the model is attention-only (no MLPs)")


def parse_many(names: "Iterable[str | Component] | str", model=None) -> list[Component]:
    """Parse several names (a single string is treated as one name)."""
    if isinstance(names, (str, Component)):
        names = [names]
    return [parse(n, model) for n in names]


def all_heads(model) -> list[str]:
    """Every head of ``model`` in residual order: ``['a0.h0', 'a0.h1', ...]``."""
    return [f"a{l}.h{h}" for l in range(model.cfg.n_layers) for h in range(model.cfg.n_heads)]


def all_mlps(model) -> list[str]:
    """Every MLP of ``model`` (empty for attention-only models)."""
    if getattr(model.cfg, "attn_only", False):
        return []
    return [f"m{l}" for l in range(model.cfg.n_layers)]


def all_components(model, include_embed: bool = False) -> list[str]:
    """Heads and MLPs of ``model`` in residual-stream order (optionally with ``embed`` first)."""
    out = ["embed"] if include_embed else []
    for l in range(model.cfg.n_layers):
        out += [f"a{l}.h{h}" for h in range(model.cfg.n_heads)]
        if not getattr(model.cfg, "attn_only", False):
            out.append(f"m{l}")
    return out


def output_hook(comp: Component) -> str:
    """The TransformerLens hook whose activation is this component's output.

    Heads return ``blocks.L.attn.hook_z`` (index the head axis yourself), MLPs
    ``blocks.L.hook_mlp_out``, the embedding ``hook_embed``.
    """
    if comp.kind == "head":
        return f"blocks.{comp.layer}.attn.hook_z"
    if comp.kind == "mlp":
        return f"blocks.{comp.layer}.hook_mlp_out"
    if comp.kind == "embed":
        return "hook_embed"
    raise ValueError(f"{str(comp)!r} has no output; it can only be a receiver")


def sort_key(name: "str | Component"):
    """Sort components in residual order (use as ``sorted(names, key=sort_key)``)."""
    c = parse(name)
    return (c.order, c.head if c.head is not None else -1, c.input or "")
