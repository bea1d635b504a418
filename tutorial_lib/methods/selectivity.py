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
examples) ÷ (mean attention to *baseline* positions). The baseline positions are drawn, per example
and seeded, uniformly *without replacement* from positions ``1 ... T-7`` minus the two planted
positions ``a_pos`` and ``a_pos + 1`` -- i.e. from positions that are none of the targets above
(``n_baseline`` of them, 50 by default, fewer if the sequence is short). The public code of Xu 2026
draws 50 positions once, with replacement, shared by all examples, from ``1 ... T-2`` minus ``T-6 ...
T-2``; it does not exclude the planted positions. Uniform attention over the ``T`` keys gives
selectivity 1; a head that puts weight ``w`` on its target and spreads the rest evenly over the other
``T-1`` keys gets ``w (T-1) / (1-w)`` -- 30× in a 64-token probe needs ``w`` ≈ 0.32.

Classes (Xu 2026): a head belongs to its most selective pattern when that selectivity is at least
``class_threshold`` (30×); the induction circuit is every head with induction selectivity of at
least ``induction_threshold`` (50×).

>>> probe = PlantedPairProbe.from_tokens(tokens)            # doctest: +SKIP
>>> sel = selectivity(model, probe)                         # doctest: +SKIP
>>> sel["induction"].shape                                  # doctest: +SKIP
torch.Size([2, 4])
>>> classify_heads(sel)                                     # doctest: +SKIP
{'a0.h0': 'previous-token', 'a0.h1': 'unclassified', ..., 'a1.h2': 'induction', ...}
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Sequence

import torch
from jaxtyping import Float, Int
from torch import Tensor

PATTERNS = ("induction", "previous-token", "duplicate-token", "BOS", "self", "local")
LOCAL_OFFSETS = (3, 4, 5, 6)  # the 'local' pattern reads T-3 ... T-6


@dataclass(frozen=True)
class PlantedPairProbe:
    """A planted-pair probe batch: ``tokens[b, a_pos[b]] == tokens[b, T-1] == A``, next to it ``B``.

    Build it from any token batch with :meth:`from_tokens` (it finds the earlier ``A``), or give
    ``a_pos`` yourself. The planted positions must stay clear of the other patterns' positions:
    ``1 <= a_pos`` and ``a_pos + 1 <= T - 7``; ``A`` must occur nowhere else before ``T-1``.

    >>> t = torch.tensor([[5, 9, 3, 4, 8, 6, 7, 2, 1, 3, 11, 9]])  # A=9 at 1, B=3 at 2, A again at 11
    >>> probe = PlantedPairProbe.from_tokens(t)
    >>> probe.a_pos.tolist(), probe.targets.tolist(), probe.query_pos
    ([1], [3], 11)
    """

    tokens: Int[Tensor, "n pos"]
    a_pos: Int[Tensor, "n"]

    def __post_init__(self):
        t, a = self.tokens, self.a_pos
        if not isinstance(t, Tensor) or t.ndim != 2 or t.is_floating_point():
            raise ValueError(f"tokens must be an integer tensor [n, pos], got {getattr(t, 'shape', type(t))}")
        a = torch.as_tensor(a, dtype=torch.long)
        object.__setattr__(self, "a_pos", a)
        n, T = t.shape
        if a.shape != (n,):
            raise ValueError(f"a_pos must have shape [{n}] (one position per example), got {tuple(a.shape)}")
        if T < 9:
            raise ValueError(f"a planted-pair probe needs at least 9 positions, got seq_len={T}")
        bad = ((a < 1) | (a + 1 > T - 7)).nonzero()
        if len(bad):
            i = int(bad[0, 0])
            raise ValueError(
                f"example {i}: earlier A at position {int(a[i])}; accepted 1 <= a_pos <= {T - 8} so that A and B "
                f"stay clear of position 0 and of the last 6 positions"
            )
        rows = torch.arange(n)
        A = t[:, -1]
        if not torch.equal(t[rows, a.to(t.device)], A):
            i = int((t[rows, a.to(t.device)] != A).nonzero()[0, 0])
            raise ValueError(f"example {i}: token at a_pos={int(a[i])} is {int(t[i, a[i]])}, not the final token {int(A[i])}")
        count = (t[:, :-1] == A[:, None]).sum(1)
        if (count != 1).any():
            i = int((count != 1).nonzero()[0, 0])
            raise ValueError(f"example {i}: the final token A={int(A[i])} occurs {int(count[i])} times before it; need exactly 1")

    @classmethod
    def from_tokens(cls, tokens: Int[Tensor, "n pos"], drop_invalid: bool = False) -> "PlantedPairProbe":
        """Find the earlier ``A`` (the unique earlier copy of the final token) in each row.

        With ``drop_invalid=True`` rows that do not qualify (no unique earlier ``A``, or ``A`` / ``B``
        inside the last 6 positions or at position 0) are dropped instead of raising; compare ``n``
        with ``len(tokens)`` to see how many. Use it on batches whose earlier ``A`` may sit near the end.
        """
        if not isinstance(tokens, Tensor) or tokens.ndim != 2:
            raise ValueError(f"tokens must be a 2-D integer tensor [n, pos], got {getattr(tokens, 'shape', type(tokens))}")
        match = tokens[:, :-1] == tokens[:, -1:]
        count = match.sum(1)
        if drop_invalid:
            a = match.float().argmax(1)
            keep = (count == 1) & (a >= 1) & (a + 1 <= tokens.shape[1] - 7)
            if not keep.any():
                raise ValueError("no row of tokens is a valid planted pair (unique earlier A at 1 <= a_pos <= T-8)")
            return cls(tokens[keep], a[keep].cpu())
        if (count != 1).any():
            i = int((count != 1).nonzero()[0, 0])
            raise ValueError(
                f"row {i}: the final token {int(tokens[i, -1])} occurs {int(count[i])} times earlier; a planted-pair "
                "probe needs exactly one earlier A"
            )
        return cls(tokens, match.float().argmax(1).cpu())

    @property
    def n(self) -> int:
        return self.tokens.shape[0]

    @property
    def seq_len(self) -> int:
        return self.tokens.shape[1]

    @property
    def query_pos(self) -> int:
        """The query position read by every method: the final token (the second ``A``), ``T-1``."""
        return self.seq_len - 1

    @property
    def targets(self) -> Int[Tensor, "n"]:
        """The token ``B`` that followed the earlier ``A`` (the induction answer)."""
        return self.tokens[torch.arange(self.n), self.a_pos.to(self.tokens.device) + 1]

    def target_positions(self, pattern: str) -> Int[Tensor, "n k"]:
        """Key positions of ``pattern`` for every example (``k`` = 4 for ``local``, else 1)."""
        T, n = self.seq_len, self.n
        fixed = {"previous-token": [T - 2], "BOS": [0], "self": [T - 1], "local": [T - o for o in LOCAL_OFFSETS]}
        if pattern == "induction":
            return (self.a_pos + 1)[:, None]
        if pattern == "duplicate-token":
            return self.a_pos[:, None].clone()
        if pattern in fixed:
            return torch.tensor(fixed[pattern]).expand(n, -1).clone()
        raise ValueError(f"unknown pattern {pattern!r}; accepted: {PATTERNS}")

    def subset(self, idx) -> "PlantedPairProbe":
        """The probe restricted to examples ``idx`` (slice, list or tensor)."""
        idx = torch.arange(self.n)[idx] if isinstance(idx, slice) else torch.as_tensor(idx)
        return PlantedPairProbe(self.tokens[idx.to(self.tokens.device)], self.a_pos[idx.cpu()])


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
    on error. ``on_chunk`` must not run the model itself.
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
            z = torch.stack([store[("z", l)][b, qb] for l in range(L)], 1).float() if want_z else None
            p = torch.stack([store[("p", l)][b, :, qb] for l in range(L)], 1).float() if want_pattern else None
            on_chunk(rows, z, p)


def target_attention(
    model,
    probe: PlantedPairProbe,
    patterns: Sequence[str] = PATTERNS,
    n_baseline: int = 50,
    seed: int = 0,
    fwd_hooks: Sequence = (),
    batch_size: int = 64,
) -> dict[str, Float[Tensor, "n_layers n_heads"]]:
    """Mean attention (over examples) from ``T-1`` to each pattern's position, plus ``"baseline"``."""
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


def selectivity(
    model,
    probe: PlantedPairProbe,
    patterns: Sequence[str] = PATTERNS,
    n_baseline: int = 50,
    seed: int = 0,
    fwd_hooks: Sequence = (),
    batch_size: int = 64,
    eps: float = 1e-8,
) -> dict[str, Float[Tensor, "n_layers n_heads"]]:
    """Selectivity of every head for every pattern: target attention ÷ baseline attention.

    Returns ``{pattern: Tensor[n_layers, n_heads]}``. The baseline is clamped below at ``eps`` (as in
    the public code), so a head that never looks at baseline positions gets a huge, finite ratio.
    Pass ``fwd_hooks`` (e.g. ``circuits.ablation_hooks(model, prev_heads)``) to measure selectivity
    with other heads ablated.
    """
    att = target_attention(model, probe, patterns, n_baseline, seed, fwd_hooks, batch_size)
    base = att["baseline"].clamp(min=eps)
    return {p: att[p] / base for p in patterns}


def _head_names(shape) -> list[tuple[str, int, int]]:
    return [(f"a{l}.h{h}", l, h) for l in range(shape[0]) for h in range(shape[1])]


def classify_heads(
    sel: dict[str, Tensor], class_threshold: float = 30.0, induction_threshold: float = 50.0
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


def induction_circuit(sel: dict[str, Tensor], threshold: float = 50.0) -> list[str]:
    """Heads whose induction selectivity is at least ``threshold`` (Xu 2026's membership screen)."""
    if "induction" not in sel:
        raise ValueError(f"sel has no 'induction' entry (has {list(sel)})")
    return [name for name, l, h in _head_names(sel["induction"].shape) if float(sel["induction"][l, h]) >= threshold]


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
