"""What "a minority of the heads" means, once for the whole course.

A set of heads picked by a filter (the induction heads of the spectral recipe, a zoo model's induction
heads) is a **minority** when it holds at least one head and at most :data:`MINORITY_FRACTION` (a quarter)
of all heads. Xu (2026) finds induction circuits of 3-6 heads in models of 144 heads or more (2-4%), and
all specialised heads together at 17-19% of the heads (4.7-27.3% in the 1B class): a filter that passes
more than a quarter of a model's heads is not picking out a small circuit. Every module that speaks of
a minority calls :func:`is_minority`, so the bound is stated here and nowhere else.

>>> is_minority(8, 32), is_minority(9, 32), is_minority(0, 32)
(True, False, False)
"""
from __future__ import annotations

MINORITY_FRACTION = 0.25


def is_minority(n_selected: int, n_total: int) -> bool:
    """At least one of ``n_total`` heads, and at most :data:`MINORITY_FRACTION` of them."""
    if n_total < 1 or not 0 <= n_selected <= n_total:
        raise ValueError(f"need 0 <= n_selected <= n_total and n_total >= 1, got n_selected={n_selected}, n_total={n_total}")
    return 1 <= n_selected <= MINORITY_FRACTION * n_total
