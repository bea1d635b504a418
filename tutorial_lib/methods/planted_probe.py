"""The planted-pair probe of the spectral recipe (step 2, :mod:`tutorial_lib.methods.selectivity`): sequences
``… A B … A`` whose final ``A`` is the query, and the key position each canonical attention pattern reads.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from jaxtyping import Int
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
