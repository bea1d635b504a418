"""Notebook 00: a set of components against random sets of heads, through the ablation panel.

:func:`versus_random_heads` ablates ``components`` and ``n_draws`` seeded random sets of as many heads (none of them
in ``components`` or ``exclude``: :func:`~tutorial_lib.core.controls.size_matched_random` with ``match="count"``; the
MLPs are all in the tested set, so the draws are heads) through the panel's own evaluation, and keeps every prompt's
metric, so that a claim can say how many distinct controls it had and whether its margin exceeds the prompts' spread.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

from ..core.controls import possible_draws, size_matched_random


@dataclass
class VersusRandom:
    """What :func:`versus_random_heads` measured (metric means and per-prompt values)."""

    components: list
    before: float  # the metric with nothing ablated
    value: float  # ... with ``components`` ablated
    per_example: list
    controls: list  # the metric with each random set ablated
    control_examples: list  # per-prompt values of each random set
    n_distinct: int  # distinct random sets among the draws
    possible: int = 0  # distinct random sets that could be drawn (core.controls.possible_draws)

    @property
    def worst(self) -> int:
        """The random set that moved the metric most."""
        return max(range(len(self.controls)), key=lambda i: abs(self.controls[i] - self.before))

    @property
    def beats(self) -> bool:
        """``components`` move the metric more than every random set."""
        return abs(self.value - self.before) > abs(self.controls[self.worst] - self.before)

    def margins(self) -> list:
        """Per prompt: how much further ``components`` moved the metric than the most damaging random set (> 0: further)."""
        sign = 1.0 if self.value <= self.before else -1.0
        return [sign * (c - v) for c, v in zip(self.control_examples[self.worst], self.per_example)]

    def test(self, label: str, metric: str = "the logit difference") -> str:
        k = len(self.components)
        return (f"ablating {label} moves {metric} by {self.value - self.before:+.2f}, more than each of "
                f"{len(self.controls)} random sets of {k} head{'s' if k != 1 else ''} (at most "
                f"{self.controls[self.worst] - self.before:+.2f})")


def versus_random_heads(panel, components: Sequence[str], n_draws: int = 20, exclude: Iterable[str] = (),
                        seed: int = 0) -> VersusRandom:
    """``components`` against ``n_draws`` random sets of as many heads (seeds ``seed ...``), through ``panel``
    (an :class:`~tutorial_lib.viz.widgets.AblationPanel` whose evaluation returns ``metrics`` and per-prompt ``y``);
    the panel is left with nothing ablated."""
    components, exclude = list(components), list(exclude)
    first_metric = next(iter(panel.set_ablated([])["metrics"]))
    before = panel.result["metrics"][first_metric]
    got = panel.set_ablated(components)
    draws = [size_matched_random(panel.model, components, seed=seed + s, match="count", exclude=exclude)
             for s in range(n_draws)]
    ctl = [panel.set_ablated(d.nodes) for d in draws]
    panel.set_ablated([])
    return VersusRandom(components, before, got["metrics"][first_metric], list(got["y"]),
                        [r["metrics"][first_metric] for r in ctl], [list(r["y"]) for r in ctl],
                        len({d.nodes for d in draws}), possible_draws(panel.model, components, "count", exclude))
