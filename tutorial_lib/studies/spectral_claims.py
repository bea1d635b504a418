"""Notebook 03's claims, each with the test it makes and its power checks (:class:`~tutorial_lib.methods.power.ClaimSpec`).

A layer-matched control draws, in each layer, as many heads as the tested set has there, from that layer's other
heads: on a model of 4 heads a layer, or where the tested heads fill half a layer, only a handful of distinct draws
exist (:func:`~tutorial_lib.core.controls.possible_draws`), and a control that can be drawn once or twice cannot stand
for "heads like these". Such claims report themselves *not testable on this model*. So do comparisons whose control
holds heads of the tested kind (induction heads in an induction head's control).
"""
from __future__ import annotations

from ..core.controls import possible_draws
from ..methods.power import ClaimSpec, Power, away_from_bounds, enough_draws

FORMED_LOSS = 1.0  # check_induction_pair's bar: loss on the predictable tokens at most this many nats


def formation_claim(runs: dict, prefix: str = "small") -> ClaimSpec:
    """The induction pair forms in every run named ``prefix...``; it could fail only if the runs started above the
    formation bar (their first training loss above :data:`FORMED_LOSS`)."""
    chosen = {n: r for n, r in runs.items() if n.startswith(prefix)}
    starts = {n: (r.losses[0] if r.losses else float("nan")) for n, r in chosen.items()}
    started_high = all(v > FORMED_LOSS for v in starts.values())
    return ClaimSpec(
        "03.induction-forms",
        f"the induction pair forms in every {prefix} run ({sum(r.formed for r in chosen.values())} of {len(chosen)})",
        bool(chosen) and all(r.formed for r in chosen.values()),
        [Power(len(chosen) >= 2, f"{len(chosen)} {prefix} run(s) (needs >= 2 seeds)"),
         Power(started_high, "first training losses " + ", ".join(f"{v:.2f}" for v in starts.values())
               + f" nats: {'all' if started_high else 'not all'} above the formation bar of {FORMED_LOSS:g}")])


def layer_control_power(model, heads, result, same_kind=(), kind: str = "induction") -> list:
    """Power of a comparison against a layer-matched control (``result``: a
    :class:`~tutorial_lib.methods.head_ablation.VerificationResult`): enough possible draws, and no head of
    ``same_kind`` (the heads the filter passes as ``kind``) outside the tested set among the control's."""
    room = possible_draws(model, heads, "layer")
    out = [enough_draws(room, what=f"layer-matched sets for {', '.join(heads)}")]
    if result is not None:
        drawn = sorted({h for hs, _, _ in result.distinct_controls() for h in hs})
        same = [h for h in drawn if h in set(same_kind) and h not in set(heads)]
        out.append(Power(not same, f"{len(same)} of the {len(drawn)} control heads are {kind} heads themselves"
                                   + (f" ({', '.join(same)})" if same else "")))
    return out


def causal_claim(name: str, model, heads, result, same_kind=()) -> ClaimSpec:
    """The heads' ablation beats every layer-matched random draw with p < 0.05 (``result.causal``)."""
    verdict = result.verdict if result is not None else "no head to test"
    return ClaimSpec(name, f"ablating {', '.join(heads) or 'no head'} beats every layer-matched random draw, p < 0.05 "
                           f"({verdict})", result is not None and bool(result.causal),
                     layer_control_power(model, heads, result, same_kind))


def k_composition_claim(name: str, n_layer0: int, best: str, prev: str, z: float) -> ClaimSpec:
    """The layer-0 head that K-composes most with the induction heads is the previous-token head, > 3 sd above
    random matrices; a contest among fewer than 2 layer-0 heads cannot fail."""
    return ClaimSpec(f"03.k-composition.{name}",
                     f"{name}: the layer-0 head that K-composes most with the induction heads ({best}, {z:.1f} sd above "
                     f"random) is the previous-token head {prev}, more than 3 sd above random",
                     best == prev and z > 3, [Power(n_layer0 >= 2, f"{n_layer0} layer-0 head(s) to choose from")])


def previous_token_claim(name: str, model, prev: list, none: float, ablated: float, control: float) -> ClaimSpec:
    """Ablating the previous-token heads takes induction top-1 below half and below matched random layer-0 heads."""
    return ClaimSpec(f"03.previous-token-needed.{name}",
                     f"{name}: ablating {', '.join(prev)} takes induction top-1 from {none:.0%} to {ablated:.0%}, below "
                     f"half and below matched random layer-0 heads ({control:.0%})",
                     ablated < control and ablated < 0.5 * none,
                     [enough_draws(possible_draws(model, prev, "layer"), what=f"layer-matched sets for {', '.join(prev)}"),
                      away_from_bounds(none, 0.0, 1.0, what="top-1 with nothing ablated")])


def minority_claim(found, fraction: float) -> ClaimSpec:
    """The induction filter selects a minority of the model's heads (at least 1, at most ``fraction``)."""
    return ClaimSpec("03.loaded-minority",
                     f"the induction filter selects {len(found.heads)} of {found.n_heads} heads (needs 1 to {fraction:.0%})",
                     bool(found.minority),
                     [Power(found.n_heads >= 10, f"{found.n_heads} heads (a minority needs at least 10 to mean anything)")])


def copying_claim(contrast, min_first_loss: float = 2.0) -> ClaimSpec:
    """The loaded model copies tokens its training never repeated: a drop of >= 2 nats and >= 1 head >= 0.3; it could
    fail only if the first copy is unpredictable (its loss above ``min_first_loss`` nats)."""
    h = contrast.held_out
    return ClaimSpec("03.loaded-copies-held-out",
                     f"the loaded model copies tokens its training never repeated ({h.label}): a drop of {h.drop:.2f} "
                     f"nats (>= 2) and {len(h.heads)} head(s) >= 0.3 (>= 1)",
                     bool(contrast.general),
                     [Power(h.first_loss > min_first_loss, f"the first copy's loss is {h.first_loss:.2f} nats "
                                                          f"(above {min_first_loss:g}: unpredictable, so copying shows)")])
