"""Path-patching discovery: the paper's iterative search for a circuit, as steps a learner calls.

Hanna, Liu & Variengien (2023) found the greater-than circuit by path patching backwards from the
logits: every sender at END into the logits, then into the MLPs that matter, then (senders at YY)
into the keys and values of the circuit heads, then into the early MLPs. :func:`discover_step` is
one such step on a task (positions by name: ``"END"``, ``"YY"``); :func:`head_inputs` names the
receivers of a step into heads; :func:`paper_greater_than_circuit` is the circuit the paper reports
for GPT-2 small. The engine underneath is :mod:`tutorial_lib.methods.path_patching`.

>>> from tutorial_lib.methods.path_patching import top_senders                   # doctest: +SKIP
>>> step = discover_step(model, task, "logits", "END")                  # doctest: +SKIP
>>> top_senders(step, threshold=0.02, sign="negative")                  # doctest: +SKIP
"""
from __future__ import annotations

from typing import Iterable, Optional

from ..core.circuits import Circuit
from ..core.components import parse
from ..core.forward import Metric
from ..tasks.base import task_positions
from .path_patching import PathPatchingResult, ReceiversMode, ReceiversModeLike, path_patch_sweep


def head_inputs(heads: Iterable[str], inputs: str = "qkv") -> list[str]:
    """Receiver names for some inputs of some heads: ``head_inputs(["a5.h1"], "q")`` -> ``["a5.h1.q"]``."""
    if not inputs or set(inputs) - set("qkv"):
        raise ValueError(f"inputs must be a string of 'q', 'k', 'v' (e.g. 'qk'); got {inputs!r}")
    return [f"{parse(h).node}.{x}" for h in heads for x in inputs]


def discover_step(model, task, receivers, sender_position="END", senders="all", direction: str = "noising",
                  metric: Optional[Metric] = None, head_output_position="END", chunk_size: Optional[int] = None,
                  progress: bool = True,
                  receivers_mode: ReceiversModeLike = ReceiversMode.INDEPENDENT) -> PathPatchingResult:
    """One step of the paper's iterative discovery: every sender, at one position, into ``receivers``.

    The greater-than order (Hanna et al. 2023, with GPT-2 small's layer numbers; zoo models have
    fewer layers, so pick their receivers from the previous step's results):

    >>> step_a = discover_step(model, task, "logits", "END")                          # doctest: +SKIP
    >>> step_b = [discover_step(model, task, f"m{l}", "END") for l in (11, 10, 9, 8)]   # doctest: +SKIP
    >>> heads = ["a9.h1", "a8.h11", "a7.h10", "a6.h9", "a5.h5", "a8.h8", "a5.h1"]      # doctest: +SKIP
    >>> step_c = discover_step(model, task, head_inputs(heads, "kv"), "YY")           # doctest: +SKIP
    >>> step_d = [discover_step(model, task, f"m{l}", "YY") for l in range(4)]         # doctest: +SKIP
    >>> top_senders(step_a, threshold=0.02, sign="negative")                          # doctest: +SKIP

    Args:
        task: a :class:`~tutorial_lib.tasks.base.TaskData` (clean/corrupt tokens, ``end_pos``,
            ``positions``, ``metric``); the metric's unembedding is done only at ``task.end_pos``.
        receivers: as in :func:`path_patch` (``"logits"``, ``"m9"``, ``"a5.h1.q"``, lists of them).
        sender_position: ``"END"``, ``"YY"`` (or any key of ``task.positions``), a ``[batch]`` tensor,
            or ``None`` for every position.
        head_output_position: where head receivers are read (default ``"END"``, as in the paper: a
            circuit head is the head *at END*; its output elsewhere stays at baseline). ``None``: all.
            Senders at YY reach a head at END only through its keys and values (direct paths stay
            within one position), so its ``q`` shows no effect there.
        receivers_mode: ``"independent"`` (default; the papers' way, and the one step 3 into the keys and
            values of circuit heads in several layers needs: each head's input gets only the direct
            paths from the senders) or ``"joint"`` (a head also sees the changed outputs of the circuit
            heads in earlier layers); see :class:`~tutorial_lib.methods.path_patching.ReceiversMode`.
    """
    pos = task_positions(task, sender_position)
    label = sender_position if isinstance(sender_position, str) else ("all" if pos is None else "given positions")
    res = path_patch_sweep(model, task.clean, task.corrupt, receivers, metric or task.metric, senders=senders,
                           sender_positions=pos, direction=direction, logit_positions=task.end_pos,
                           chunk_size=chunk_size, metric_name=getattr(task, "metric_name", "metric"),
                           progress=progress, head_output_positions=task_positions(task, head_output_position),
                           receivers_mode=receivers_mode)
    res.positions = label
    return res


# The greater-than circuit of GPT-2 small as read from the paper's code (hannamw/gpt2-greater-than).
PAPER_GREATER_THAN = {
    "END": ["a9.h1", "a8.h11", "a7.h10", "a6.h9", "a5.h5", "a8.h8", "a5.h1", "m8", "m9", "m10", "m11"],
    "YY": ["m0", "m1", "m2", "m3", "a0.h5", "a0.h3", "a0.h1", "embed"],
}


def paper_greater_than_circuit():
    """The paper's GPT-2 small circuit as a :class:`Circuit` whose ``meta["positions"]`` maps each
    component to ``"END"`` or ``"YY"`` (the embedding at YY carries the year into the circuit)."""
    positions = {c: where for where, comps in PAPER_GREATER_THAN.items() for c in comps}
    return Circuit(positions, name="greater-than (Hanna et al. 2023)", meta={"positions": positions})
