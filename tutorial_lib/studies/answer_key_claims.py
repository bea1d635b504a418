"""Notebook 05's claims about the answer keys, each with its test and power checks
(:class:`~tutorial_lib.methods.power.ClaimSpec`; :func:`tutorial_lib.course.claims.check` reports them).

The keys are small by construction: a handful of heads, so "random sets of distractors" can be drawn in only a few
distinct ways (:attr:`~tutorial_lib.studies.answer_key.KeyCheck.n_distinct_sets`). A claim against such a control
reports itself *not testable* with the count, as any claim does whose baseline sits at its floor or ceiling.
"""
from __future__ import annotations

from ..methods.power import ClaimSpec, Power, away_from_bounds, enough_draws
from .answer_key import EDGE_METHODS


def _task_to_destroy(chk) -> Power:
    return Power(chk.clean > 0, f"the clean logit difference is {chk.clean:.2f} (a task to destroy needs > 0)")


def construction_claims(name: str, key, chk) -> list:
    """The key's construction, checked by ablation (:func:`~tutorial_lib.studies.answer_key.verify_key`)."""
    modes = list(chk.circuit)
    worst = min(min(list(chk.distractors[m].values()) + chk.random_sets[m]) for m in modes)
    matter = len(chk.edges_that_matter("zero"))
    return [
        ClaimSpec(f"05.{name}-circuit-necessary", f"ablating the {name} circuit destroys the task in every mode "
                  f"({', '.join(f'{m} {chk.circuit[m]:.2f}' for m in modes)}; clean {chk.clean:.2f})",
                  all(chk.destroyed(m) for m in modes), [_task_to_destroy(chk)]),
        ClaimSpec(f"05.{name}-distractors-harmless", f"no {name} distractor, alone or in a random set, destroys the task "
                  f"(the worst keeps {worst:.2f} of {chk.clean:.2f})", all(chk.harmless(m) for m in modes),
                  [_task_to_destroy(chk), enough_draws(chk.n_distinct_sets, what="random sets of distractors")]),
        ClaimSpec(f"05.{name}-edges-matter", f"every {name} ground-truth edge, cut to zero alone, changes the metric "
                  f"({matter} of {len(key.circuit.edges)})", matter == len(key.circuit.edges),
                  [_task_to_destroy(chk), Power(len(key.circuit.edges) >= 2, f"{len(key.circuit.edges)} ground-truth edges")]),
    ]


def scoring_claims(scores: dict) -> list:
    """The methods against the keys: the truth against random rankings, nodes against chance, the search's circuit
    against the edge methods' ROC curves, EAP-IG where EAP's gradient misses."""
    rand = [v for s in scores.values() for v in s.faithfulness["random"]]
    truth_f = {n: s.faithfulness["ground truth"] for n, s in scores.items()}
    rocs = [r for s in scores.values() for r in s.node_roc.values()]
    pp = {n: s.pp_point["edges"] for n, s in scores.items()}
    under = {n: [m for m in EDGE_METHODS if s.edge_roc[m].below(pp[n])] for n, s in scores.items()}
    best_auroc = max(s.edge_roc[m].auroc for s in scores.values() for m in EDGE_METHODS)
    return [
        ClaimSpec("05.truth-beats-random", "the ground-truth circuit is more faithful than every random ranking at its "
                  f"size ({', '.join(f'{n} {v:.2f}' for n, v in truth_f.items())}; random at most {max(rand):.2f})",
                  all(s.faithfulness["ground truth"] > max(s.faithfulness["random"]) for s in scores.values()),
                  [Power(len(rand) >= 2 * len(scores), f"{len(rand)} random rankings"),
                   away_from_bounds(sum(rand) / len(rand), 0.0, 1.0, what="the random rankings' mean f")]),
        ClaimSpec("05.nodes-above-chance", "every method ranks the circuit's nodes better than chance on both keys "
                  f"(node AUROC {min(r.auroc for r in rocs):.2f} to {max(r.auroc for r in rocs):.2f})",
                  all(r.auroc > 0.5 for r in rocs),
                  [Power(all(r.n_positive >= 2 and r.n_negative >= 2 for r in rocs),
                         f"circuit nodes per key {sorted({r.n_positive for r in rocs})}, others "
                         f"{sorted({r.n_negative for r in rocs})} (an AUROC needs >= 2 of each)")]),
        ClaimSpec("05.pp-above-curves", "on both keys the path-patching search's circuit lies above every edge method's "
                  f"ROC curve (above: {under})", all(len(u) == len(EDGE_METHODS) for u in under.values()),
                  [away_from_bounds(best_auroc, 0.5, 1.0, what="the best edge method's AUROC (a perfect ranking leaves no "
                                                                 "room above its curve)")]),
    ]


def eap_ig_claim(ind_scores, missed_by_gradient: list) -> ClaimSpec:
    """On the induction key EAP-IG scores at least 3x EAP on every edge EAP's gradient misses (and there is one)."""
    g = ind_scores.graph

    def score(method, e):
        s, r = e.split("->")
        return abs(float(ind_scores.edge_scores[method][g.senders.index(s), g.receivers.index(r)]))

    steps = ind_scores.settings.get("ig_steps", 1)
    return ClaimSpec("05.eap-ig-recovers", "on the induction key EAP's gradient misses at least one edge that EAP-IG "
                     f"recovers (3x EAP's score): {', '.join(missed_by_gradient) or 'none missed'}",
                     len(missed_by_gradient) >= 1 and all(score("EAP-IG", e) > 3 * score("EAP", e) for e in missed_by_gradient),
                     [Power(steps > 1, f"EAP-IG with {steps} step(s) (one step is EAP itself)")])
