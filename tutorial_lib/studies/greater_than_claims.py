"""Notebook 01's claims about the searched greater-than circuit: each one's test, result and power checks.

A :class:`ClaimSpec` is what :func:`tutorial_lib.course.claims.check` takes: a stable name, the test in words (with the
run's numbers), whether it came out as the paper found, and the power checks (:mod:`tutorial_lib.methods.power`) that
say whether it could have failed on this model:

* :func:`sufficiency_claim` -- the circuit alone keeps >= 80% of the full model's probability difference; it could
  fail only if random circuits of its size do not also reach 80%, and if the clean and corrupted prompts differ
  beyond noise;
* :func:`necessity_claim` -- corrupting the circuit's components (not the embedding) drives the metric below 0 and
  below every *type-matched* random set (as many heads and as many MLPs, from outside the circuit); not testable when
  too few such sets exist (a small model's circuit that holds every MLP leaves no MLP to draw);
* :func:`beyond_strongest_claim` -- the circuit without its strongest component lowers the metric more than that
  component alone, by more than the prompts' spread;
* :func:`one_mlp_claim` -- one MLP stands out in the all-positions sweep; not testable when the sweep is saturated
  (every MLP costs the whole clean-to-corrupted range).
"""
from __future__ import annotations

from ..core.circuits import Circuit
from ..core.controls import possible_draws, size_matched_random
from ..methods.circuit_eval import evaluate_circuits
from ..methods.power import BOUND_ROOM, ClaimSpec, Power, beyond_noise, enough_draws, not_saturated
from .greater_than import without_embedding

SUFFICIENT = 0.80  # the paper's bar: the circuit alone keeps this fraction of the full model's metric
N_CONTROLS = 20


def sufficiency_claim(model, task, circuit: Circuit, n_random: int = N_CONTROLS, seed: int = 0) -> ClaimSpec:
    """The circuit (positions from its meta) against ``n_random`` random circuits of as many components (the
    embedding kept at the circuit's positions, the others at every position: generous to the random ones)."""
    inner = without_embedding(circuit)
    emb_pos = {c: p for c, p in circuit.meta.get("positions", {}).items() if c == "embed"}
    room = possible_draws(model, inner, "count")
    draws = enough_draws(room, what=f"random circuits of {len(inner.nodes)} components")
    if room == 0:
        (ev,) = evaluate_circuits(model, task, [circuit], test="sufficiency")
        return ClaimSpec("01.sufficiency", f"the circuit alone keeps {ev.fraction_of_clean:.0%} of the full model's "
                         f"probability difference (needs >= {SUFFICIENT:.0%})", ev.fraction_of_clean >= SUFFICIENT, [draws])
    randoms = [size_matched_random(model, inner, seed=seed + s, match="count") for s in range(min(n_random, room))]
    circuits = [circuit] + [Circuit((["embed"] if "embed" in circuit.nodes else []) + list(r.nodes),
                                    meta={"positions": emb_pos}) for r in randoms]
    evs = evaluate_circuits(model, task, circuits, test="sufficiency")
    frac = evs[0].fraction_of_clean
    rand = [e.fraction_of_clean for e in evs[1:]]
    gap = clean_minus_corrupt(model, task)
    return ClaimSpec(
        "01.sufficiency",
        f"the circuit alone keeps {frac:.0%} of the full model's probability difference (needs >= {SUFFICIENT:.0%})",
        frac >= SUFFICIENT,
        [draws,
         Power(max(rand) < SUFFICIENT, f"random circuits of the same size keep {min(rand):.0%} to {max(rand):.0%} "
                                       f"(the bar of {SUFFICIENT:.0%} must be out of their reach)"),
         beyond_noise(gap, what="clean minus corrupted probability difference, per prompt")])


def clean_minus_corrupt(model, task) -> list:
    """Per prompt: the clean run's metric minus the corrupted run's (is there anything to recover?)."""
    import torch

    with torch.no_grad():
        return (task.metric(model(task.clean)) - task.metric(model(task.corrupt))).tolist()


def necessity_claim(model, task, circuit: Circuit, n_controls: int = N_CONTROLS, seed: int = 0) -> ClaimSpec:
    """The inner circuit corrupted at its own positions against ``n_controls`` type-matched random sets corrupted at
    every position (a stronger intervention than the circuit's own)."""
    inner = without_embedding(circuit)
    n_h = sum(c.startswith("a") for c in inner.nodes)
    n_m = len(inner.nodes) - n_h
    room = possible_draws(model, inner, "type")
    draws = enough_draws(room, what=f"type-matched random sets ({n_h} heads and {n_m} MLPs from outside the circuit)")
    if room == 0:
        (value,) = evaluate_circuits(model, task, [inner])
        return ClaimSpec("01.necessity", f"corrupting the circuit's {len(inner.nodes)} components gives {value.value:.3f}, "
                         "below 0 and below every type-matched random set", value.value < 0, [draws])
    ctrls = [size_matched_random(model, inner, seed=seed + s, match="type") for s in range(min(n_controls, room))]
    evs = evaluate_circuits(model, task, [inner] + ctrls)
    value, ctl = evs[0], evs[1:]
    worst = min(ctl, key=lambda e: e.value)
    return ClaimSpec(
        "01.necessity",
        f"corrupting the circuit's {len(inner.nodes)} components gives {value.value:.3f}, below 0 and below every one of "
        f"{len(ctl)} type-matched random sets (lowest {worst.value:.3f})",
        value.value < 0 and value.value < worst.value,
        [draws, beyond_noise((worst.per_example - value.per_example).tolist(), what="the margin over the lowest set, per prompt")])


def beyond_strongest_claim(model, task, circuit: Circuit) -> ClaimSpec:
    """The circuit without its strongest component (the one whose corruption alone lowers the metric most) against
    that component alone, each corrupted at its own positions."""
    inner = without_embedding(circuit)
    pos = inner.meta.get("positions", {})
    names = sorted(inner.nodes)
    one = lambda cs: Circuit(list(cs), meta={"positions": {c: pos[c] for c in cs if c in pos}})  # noqa: E731
    alone = evaluate_circuits(model, task, [one([c]) for c in names])
    k = min(range(len(names)), key=lambda i: alone[i].value)
    top = names[k]
    if len(names) < 2:
        return ClaimSpec("01.necessity-beyond-strongest", f"the circuit has one component ({top}): nothing beyond it",
                         False, [Power(False, "a one-component circuit has nothing beyond its strongest component")])
    (rest,) = evaluate_circuits(model, task, [one([c for c in names if c != top])])
    return ClaimSpec(
        "01.necessity-beyond-strongest",
        f"without {top}, corrupting the other {len(names) - 1} components gives {rest.value:.3f}, lower than {top} alone "
        f"({alone[k].value:.3f})",
        rest.value < alone[k].value,
        [beyond_noise((alone[k].per_example - rest.per_example).tolist(),
                      what=f"{top} alone minus the rest, per prompt")])


def one_mlp_claim(mlp_sweep) -> ClaimSpec:
    """In the all-positions sweep (:func:`~tutorial_lib.methods.patching.patch_mlps`), the most costly MLP costs more
    than every other; not testable when the sweep is saturated at the clean-to-corrupted range."""
    effects = {f"m{l}": float(v) for l, v in enumerate(mlp_sweep.values)}
    ranked = sorted(effects, key=effects.get)
    full = mlp_sweep.corrupt - mlp_sweep.clean
    lo, hi = (full, 0.0) if full < 0 else (0.0, full)
    at_full = [m for m in ranked if abs(effects[m] - full) <= BOUND_ROOM * abs(full)]  # each one alone costs it all
    return ClaimSpec(
        "01.one-mlp-stands-out",
        f"patched at all positions, {ranked[0]} ({effects[ranked[0]]:+.2f}) costs more than every other MLP "
        f"(next {ranked[1]}, {effects[ranked[1]]:+.2f})" if len(ranked) > 1 else "one MLP",
        len(ranked) > 1 and effects[ranked[0]] < effects[ranked[1]],
        [not_saturated(list(effects.values()), lo, hi, what=f"the MLP sweep (full range {full:+.2f})"),
         Power(len(at_full) <= 1, f"{len(at_full)} MLP(s) cost within {BOUND_ROOM:.0%} of the full range"
                                  + (f" ({', '.join(at_full)}): the sweep cannot rank them" if len(at_full) > 1 else ""))])
