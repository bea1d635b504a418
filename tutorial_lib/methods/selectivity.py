"""Step 2 of the spectral recipe: which attention pattern does each head implement?

The probe is a batch of random-token sequences with a *planted pair*: an early token ``A`` followed
by ``B``, and the final token is ``A`` again, so the next token should be ``B``. At the final query
position ``T-1`` (the second ``A``) every head has one row of attention weights, and each canonical
pattern names the key position a head of that kind looks at:

================= ==================================== ==============================================
pattern           key position(s)                      a head of this kind ...
================= ==================================== ==============================================
``induction``     ``a_pos + 1`` (the earlier ``B``)    copies what followed the earlier ``A``
``previous-token`` ``T-2``                             looks one token back
``duplicate-token`` ``a_pos`` (the earlier ``A``)      finds the earlier copy of the current token
``BOS``           ``0``                                parks attention on the first token (a sink)
``self``          ``T-1``                              looks at itself
``local``         mean over ``T-3 ... T-6``            looks a few tokens back
================= ==================================== ==============================================

**Selectivity** of a head for a pattern = (mean attention to the pattern's position, averaged over
examples) ÷ a *baseline*. Two baselines, a typed choice (:class:`Baseline`):

* ``"random_positions"`` (default; the public code's): the mean attention on positions that are none
  of the targets. They are drawn, per example and seeded, uniformly *without replacement* from
  positions ``1 ... T-7`` minus the two planted positions ``a_pos`` and ``a_pos + 1`` (``n_baseline`` of
  them, 50 by default, fewer if the sequence is short). The public code of Xu 2026 draws 50 positions
  once, with replacement, shared by all examples, from ``1 ... T-2`` minus ``T-6 ... T-2``; it does not
  exclude the planted positions. A head that puts weight ``w`` on its target and spreads the rest
  evenly over the other ``T-1`` keys gets ``w (T-1) / (1-w)`` -- 30× in a 64-token probe needs ``w`` ≈ 0.32.
  But a head that parks most of its attention on position 0 (an attention sink, "BOS") leaves almost
  nothing on the random positions, so a small target weight becomes a large ratio: 3% on the target and
  0.06% on each random position is 50×.
* ``"uniform"`` (the paper's text): ``1/T``, the attention every key would get from a uniform head. The
  ratio is then ``w T``: 50× in a 48-token probe needs ``w`` ≥ 1.04 -- impossible -- and 30× needs 0.63.
  The two baselines give different numbers; the thresholds (30×, 50×) were set for the code's.

Every result carries the **absolute attention** on each target beside the ratio
(:attr:`Selectivity.attention`), and the attention on position 0 decides which heads are **BOS heads**:
a head is a BOS head when its mean attention (over the probe's examples, at the query) on position 0 is
at least :data:`BOS_HEAD_ATTENTION` (0.5, i.e. most of its attention). :func:`induction_circuit` leaves
BOS heads out unless asked (``include_bos_heads=True``).

Classes (Xu 2026): a head belongs to its most selective pattern when that selectivity is at least
``class_threshold`` (30×); the induction circuit is every head with induction selectivity of at
least ``induction_threshold`` (50×), BOS heads excepted.

>>> probe = PlantedPairProbe.from_tokens(tokens)            # doctest: +SKIP
>>> sel = selectivity(model, probe)                         # doctest: +SKIP
>>> sel["induction"].shape                                  # doctest: +SKIP
torch.Size([2, 4])
>>> classify_heads(sel)                                     # doctest: +SKIP
{'a0.h0': 'previous-token', 'a0.h1': 'unclassified', ..., 'a1.h2': 'induction', ...}
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Callable, Optional, Sequence

import torch
from jaxtyping import Float, Int
from torch import Tensor

from ..core.components import parse
from .planted_probe import LOCAL_OFFSETS, PATTERNS, PlantedPairProbe  # noqa: F401  (re-exported)

BOS_HEAD_ATTENTION = 0.5  # a head with at least this mean attention on position 0 is a BOS head


class Baseline(str, Enum):
    """What a head's target attention is divided by (see the module docstring)."""

    RANDOM_POSITIONS = "random_positions"  # mean attention on seeded random non-target positions (the public code)
    UNIFORM = "uniform"  # 1/T, a uniform head's attention on any key (the paper's text)

    @classmethod
    def parse(cls, value: "str | Baseline") -> "Baseline":
        """``value`` as a :class:`Baseline`; a clear error naming the accepted values otherwise."""
        try:
            return cls(value)
        except ValueError:
            raise ValueError(f"unknown baseline {value!r}; accepted: {[b.value for b in cls]}") from None

    def describe(self, n_baseline: int = 50) -> str:
        """The denominator in words, for titles and readings."""
        if self is Baseline.UNIFORM:
            return "÷ 1/T (uniform attention)"
        return f"÷ mean attention on {n_baseline} random non-target positions"


def baseline_positions(probe: PlantedPairProbe, n_baseline: int = 50, seed: int = 0) -> Int[Tensor, "n k"]:
    """Seeded baseline key positions per example (see the module docstring for the pool).

    Each row holds ``k = min(n_baseline, T - 9)`` distinct positions from ``1 ... T-7`` other than
    ``a_pos`` and ``a_pos + 1``. The same seed and probe always give the same positions.
    """
    if not isinstance(n_baseline, int) or n_baseline < 1:
        raise ValueError(f"n_baseline must be a positive integer, got {n_baseline!r}")
    n, T = probe.n, probe.seq_len
    allowed = torch.zeros(n, T, dtype=torch.bool)
    allowed[:, 1 : T - 6] = True
    rows = torch.arange(n)
    allowed[rows, probe.a_pos] = False
    allowed[rows, probe.a_pos + 1] = False
    k = min(n_baseline, T - 9)
    gen = torch.Generator().manual_seed(seed)
    scores = torch.rand(n, T, generator=gen)
    scores[~allowed] = float("inf")
    return scores.argsort(dim=1)[:, :k]


def collect_query_activations(
    model,
    tokens: Int[Tensor, "n pos"],
    query_pos: "int | Int[Tensor, 'n']",
    on_chunk: Callable[[slice, Optional[Tensor], Optional[Tensor]], None],
    want_z: bool = True,
    want_pattern: bool = True,
    fwd_hooks: Sequence = (),
    batch_size: int = 64,
) -> None:
    """Run ``model`` over ``tokens`` in chunks and call ``on_chunk(rows, z, pattern)`` for each.

    ``z`` is ``[b, n_layers, n_heads, d_head]`` -- each head's output at the query position *before*
    ``W_O`` (``hook_z``, the per-head output the public code takes its SVD of); ``pattern`` is
    ``[b, n_layers, n_heads, pos]`` -- the attention row of the query. ``fwd_hooks`` (e.g. ablations)
    are active during the run and run before the capture hooks; every hook is removed afterwards, even
    on error. ``on_chunk`` must not run the model itself. Both come as float32 (float64 for a float64 model).

    On every family both are per *query* head and read from the model's own hooks, so nothing here maps heads
    to key/value groups or recomputes a pattern: under grouped-query attention (Llama 3.2, Gemma 2, Qwen3)
    ``hook_z`` and ``hook_pattern`` have one entry per query head (head ``h`` reads key/value group
    ``h // (n_heads / n_kv)`` inside the model); ``hook_pattern`` is the softmax after everything the
    family does to the scores -- QK-norm (Qwen3 per head, OLMo over the full vector) and rotary on q and k,
    ``1 / attn_scale``, Gemma 2's attention soft cap, the causal mask and its local window. No query ``q`` is
    read (the PR is of ``z``, as in the public code), so "q before or after QK-norm" does not arise; QK-norm
    reaches these numbers only through the pattern, after the norm. ``tests/test_spectral.py`` and
    ``tests/test_selectivity.py`` check both against a slow reference rebuilt from ``hook_rot_q``,
    ``hook_rot_k`` and ``hook_v`` on a tiny model of each family.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    n, T = tokens.shape
    q = torch.as_tensor(query_pos, dtype=torch.long)
    q = q.expand(n).clone() if q.ndim == 0 else q
    if q.shape != (n,) or (q < 0).any() or (q >= T).any():
        raise ValueError(f"query_pos must be an int or [n] tensor of positions in 0..{T - 1}, got {query_pos!r}")
    L = model.cfg.n_layers
    dev = next(model.parameters()).device
    store: dict = {}

    def grab(kind, layer):
        def hook(act, hook=None):
            store[(kind, layer)] = act.detach()
        return hook

    capture = []
    for l in range(L):
        if want_z:
            capture.append((f"blocks.{l}.attn.hook_z", grab("z", l)))
        if want_pattern:
            capture.append((f"blocks.{l}.attn.hook_pattern", grab("p", l)))
    with torch.no_grad(), model.hooks(fwd_hooks=list(fwd_hooks) + capture):
        for start in range(0, n, batch_size):
            rows = slice(start, min(start + batch_size, n))
            store.clear()
            model(tokens[rows].to(dev))
            b = torch.arange(rows.stop - rows.start, device=dev)
            qb = q[rows].to(dev)
            z = _at_least_float32(torch.stack([store[("z", l)][b, qb] for l in range(L)], 1)) if want_z else None
            p = _at_least_float32(torch.stack([store[("p", l)][b, :, qb] for l in range(L)], 1)) if want_pattern else None
            on_chunk(rows, z, p)


def _at_least_float32(t: Tensor) -> Tensor:
    """float32, or float64 when the model runs in float64 (a float64 model's numbers are not rounded)."""
    return t if t.dtype == torch.float64 else t.float()


def target_attention(
    model,
    probe: PlantedPairProbe,
    patterns: Sequence[str] = PATTERNS,
    n_baseline: int = 50,
    seed: int = 0,
    fwd_hooks: Sequence = (),
    batch_size: int = 64,
) -> dict[str, Float[Tensor, "n_layers n_heads"]]:
    """Mean attention (over examples) from ``T-1`` to each pattern's position, plus ``"baseline"`` (the mean
    on the random non-target positions of :func:`baseline_positions`)."""
    bad = [p for p in patterns if p not in PATTERNS]
    if bad:
        raise ValueError(f"unknown pattern(s) {bad}; accepted: {PATTERNS}")
    base_pos = baseline_positions(probe, n_baseline, seed)
    sums: dict[str, Tensor] = {}

    def on_chunk(rows, _, rows_p):
        accumulate_attention(sums, rows_p, probe.subset(rows), base_pos[rows], patterns)

    collect_query_activations(model, probe.tokens, probe.query_pos, on_chunk, False, True, fwd_hooks, batch_size)
    return {k: (v / probe.n).float().cpu() for k, v in sums.items()}


def accumulate_attention(
    sums: dict,
    rows_p: Float[Tensor, "b n_layers n_heads pos"],
    probe: PlantedPairProbe,
    base_pos: Int[Tensor, "b k"],
    patterns: Sequence[str] = PATTERNS,
) -> dict:
    """Add one chunk's attention (summed over its examples) to each pattern's and the baseline's sum."""
    for name in list(patterns) + ["baseline"]:
        pos = base_pos if name == "baseline" else probe.target_positions(name)
        idx = pos.to(rows_p.device)[:, None, None, :].expand(-1, *rows_p.shape[1:3], -1)
        val = rows_p.gather(3, idx).mean(3).sum(0).double()  # mean over the pattern's positions
        sums[name] = sums.get(name, 0) + val
    return sums


def ratios(attention: dict, baseline: "str | Baseline", seq_len: int, patterns: Sequence[str], eps: float = 1e-8
           ) -> dict[str, Tensor]:
    """``{pattern: attention[pattern] / denominator}``: the denominator is ``attention["baseline"]`` (clamped
    below at ``eps``, as in the public code) for ``"random_positions"``, ``1 / seq_len`` for ``"uniform"``."""
    b = Baseline.parse(baseline)
    if b is Baseline.UNIFORM:
        return {p: attention[p] * seq_len for p in patterns}
    base = attention["baseline"].clamp(min=eps)
    return {p: attention[p] / base for p in patterns}


def _head_names(shape) -> list[tuple[str, int, int]]:
    return [(f"a{l}.h{h}", l, h) for l in range(shape[0]) for h in range(shape[1])]


@dataclass(frozen=True, eq=False)  # tensors inside: no element-wise ==
class Selectivity(Mapping):
    """Every head's selectivity for every pattern, with the absolute attention beside it.

    It reads like the plain ``{pattern: Tensor[n_layers, n_heads]}`` dict of ratios (``sel["induction"]``,
    ``list(sel)``, ``sel.items()``), and also holds

    * ``attention``: ``{pattern: mean attention on its target}`` for every pattern *and* ``"BOS"`` (always
      measured: it decides the BOS heads) and ``"baseline"`` (the mean on the random positions);
    * ``baseline``: the :class:`Baseline` the ratios divide by; ``seq_len`` (``T``, for the uniform one).

    :meth:`with_baseline` gives the other baseline's ratios without running the model again.

    >>> att = {"induction": torch.tensor([[0.03, 0.6]]), "BOS": torch.tensor([[0.9, 0.1]]),
    ...        "baseline": torch.tensor([[0.0005, 0.01]])}
    >>> sel = Selectivity.from_attention(att, "random_positions", seq_len=48, patterns=("induction",))
    >>> [round(float(v)) for v in sel["induction"][0]], sel.bos_heads()
    ([60, 60], ['a0.h0'])
    >>> [round(float(v), 2) for v in sel.with_baseline("uniform")["induction"][0]]
    [1.44, 28.8]
    """

    ratio: dict
    attention: dict
    baseline: Baseline = Baseline.RANDOM_POSITIONS
    seq_len: int = 0
    eps: float = 1e-8
    n_baseline: int = field(default=50, compare=False)

    @classmethod
    def from_attention(cls, attention: dict, baseline: "str | Baseline", seq_len: int, patterns: Sequence[str] = PATTERNS,
                       eps: float = 1e-8, n_baseline: int = 50) -> "Selectivity":
        """Ratios of ``attention`` (as :func:`target_attention` returns it, with ``"BOS"`` and ``"baseline"``)."""
        missing = [k for k in list(patterns) + ["BOS", "baseline"] if k not in attention]
        if missing:
            raise ValueError(f"attention lacks {missing}; it needs every pattern, 'BOS' and 'baseline'")
        b = Baseline.parse(baseline)
        return cls(ratios(attention, b, seq_len, patterns, eps), dict(attention), b, int(seq_len), eps, n_baseline)

    def __getitem__(self, pattern: str) -> Tensor:
        return self.ratio[pattern]

    def __iter__(self):
        return iter(self.ratio)

    def __len__(self) -> int:
        return len(self.ratio)

    def with_baseline(self, baseline: "str | Baseline") -> "Selectivity":
        """The same attention divided by another baseline."""
        return Selectivity.from_attention(self.attention, baseline, self.seq_len, tuple(self.ratio), self.eps, self.n_baseline)

    @property
    def bos_attention(self) -> Float[Tensor, "n_layers n_heads"]:
        """Each head's mean attention on position 0."""
        return self.attention["BOS"]

    def bos_heads(self, min_attention: float = BOS_HEAD_ATTENTION) -> list[str]:
        """Heads whose mean attention on position 0 is at least ``min_attention`` (most of it, by default)."""
        a = self.bos_attention
        return [name for name, l, h in _head_names(a.shape) if float(a[l, h]) >= min_attention]

    def describe(self, head: str, pattern: str = "induction") -> str:
        """One head in words: ``"a1.h2: induction 120× (34% of its attention on the target; 2% on BOS)"``."""
        c = parse(head)
        return (f"{c}: {pattern} {float(self.ratio[pattern][c.layer, c.head]):.3g}× "
                f"({100 * float(self.attention[pattern][c.layer, c.head]):.1f}% of its attention on the target; "
                f"{100 * float(self.bos_attention[c.layer, c.head]):.0f}% on BOS)")


def selectivity(
    model,
    probe: PlantedPairProbe,
    patterns: Sequence[str] = PATTERNS,
    n_baseline: int = 50,
    seed: int = 0,
    fwd_hooks: Sequence = (),
    batch_size: int = 64,
    eps: float = 1e-8,
    baseline: "str | Baseline" = Baseline.RANDOM_POSITIONS,
) -> Selectivity:
    """Selectivity of every head for every pattern: target attention ÷ ``baseline`` (see :class:`Baseline`).

    Returns a :class:`Selectivity`: ``sel[pattern]`` is a ``Tensor[n_layers, n_heads]`` of ratios, and
    ``sel.attention[pattern]`` the absolute attention on the target. With ``"random_positions"`` the
    denominator is clamped below at ``eps`` (as in the public code), so a head that never looks at
    baseline positions gets a huge, finite ratio. Pass ``fwd_hooks`` (e.g.
    ``circuits.ablation_hooks(model, prev_heads)``) to measure selectivity with other heads ablated.
    """
    b = Baseline.parse(baseline)
    measured = tuple(dict.fromkeys(list(patterns) + ["BOS"]))
    att = target_attention(model, probe, measured, n_baseline, seed, fwd_hooks, batch_size)
    return Selectivity.from_attention(att, b, probe.seq_len, tuple(patterns), eps, n_baseline)


def bos_heads(sel: Mapping, min_attention: float = BOS_HEAD_ATTENTION) -> list[str]:
    """The BOS heads of ``sel`` (a :class:`Selectivity`); a plain dict of ratios carries no attention: ``[]``."""
    return sel.bos_heads(min_attention) if isinstance(sel, Selectivity) else []


def classify_heads(
    sel: Mapping, class_threshold: float = 30.0, induction_threshold: float = 50.0
) -> dict[str, str]:
    """Give each head a class: its most selective pattern among those that pass their threshold.

    A pattern passes when its selectivity is ``>= class_threshold`` (``>= induction_threshold`` for
    ``induction``); a head with no passing pattern is ``"unclassified"``. The public code labels a head
    by its best pattern at 30× and admits it to the induction circuit at 50×; pass
    ``induction_threshold=class_threshold`` to reproduce its labels exactly.

    >>> sel = {"induction": torch.tensor([[60.0, 40.0]]), "BOS": torch.tensor([[2.0, 35.0]])}
    >>> classify_heads(sel)
    {'a0.h0': 'induction', 'a0.h1': 'BOS'}
    """
    if not sel:
        raise ValueError("sel is empty; pass the dict returned by selectivity()")
    bad = [p for p in sel if p not in PATTERNS]
    if bad:
        raise ValueError(f"unknown pattern(s) {bad} in sel; accepted: {PATTERNS}")
    if class_threshold <= 0 or induction_threshold <= 0:
        raise ValueError(f"thresholds must be positive, got {class_threshold}, {induction_threshold}")
    shape = next(iter(sel.values())).shape
    out = {}
    for name, l, h in _head_names(shape):
        best, best_val = "unclassified", -float("inf")
        for p, s in sel.items():
            v = float(s[l, h])
            if v >= (induction_threshold if p == "induction" else class_threshold) and v > best_val:
                best, best_val = p, v
        out[name] = best
    return out


def induction_circuit(sel: Mapping, threshold: float = 50.0, include_bos_heads: bool = False) -> list[str]:
    """Heads whose induction selectivity is at least ``threshold`` (Xu 2026's membership screen).

    BOS heads (:func:`bos_heads`: most of their attention on position 0) are left out unless
    ``include_bos_heads``: on the random-positions baseline they pass with little attention on the target.
    A plain dict of ratios has no attention to tell them by, so nothing is left out of it.

    >>> att = {"induction": torch.tensor([[0.03, 0.6]]), "BOS": torch.tensor([[0.9, 0.1]]),
    ...        "baseline": torch.tensor([[0.0005, 0.01]])}
    >>> sel = Selectivity.from_attention(att, "random_positions", 48, ("induction",))
    >>> induction_circuit(sel), induction_circuit(sel, include_bos_heads=True)
    (['a0.h1'], ['a0.h0', 'a0.h1'])
    """
    if "induction" not in sel:
        raise ValueError(f"sel has no 'induction' entry (has {list(sel)})")
    skip = set() if include_bos_heads else set(bos_heads(sel))
    return [name for name, l, h in _head_names(sel["induction"].shape)
            if float(sel["induction"][l, h]) >= threshold and name not in skip]


def specialised_fraction(classes: dict[str, str]) -> float:
    """Fraction of heads with a class (anything but ``"unclassified"``)."""
    if not classes:
        raise ValueError("classes is empty; pass the dict returned by classify_heads()")
    return sum(c != "unclassified" for c in classes.values()) / len(classes)


def specialised_fraction_across(
    runs: dict, class_threshold: float = 30.0, induction_threshold: float = 50.0, **kwargs
) -> dict[str, dict]:
    """The specialised fraction for several models: ``runs = {"2L": (model, probe), ...}``.

    Returns ``{name: {"n_heads": int, "n_specialised": int, "fraction": float, "classes": {...}}}``.
    """
    out = {}
    for name, (model, probe) in runs.items():
        classes = classify_heads(selectivity(model, probe, **kwargs), class_threshold, induction_threshold)
        k = sum(c != "unclassified" for c in classes.values())
        out[name] = {"n_heads": len(classes), "n_specialised": k, "fraction": k / len(classes), "classes": classes}
    return out
