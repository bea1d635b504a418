"""Room for the studies' controls, measured on any model: the targets a deep zoo model must meet (docs/zoo.md).

A control can only stand for "components like these" when enough components of the same kind lie outside the circuit
it is compared with. :func:`control_room` runs each study's selection the way its notebook does, at the notebook's
CPU sizes, and counts what is left:

* notebook 01 -- the searched greater-than circuit (50 prompts, threshold 0.005, independent receivers): its heads
  and MLPs as fractions of the model's, the MLPs left outside, what it keeps alone (sufficiency, 200 prompts);
* notebook 02 -- at its teaching setting, each performed task's S_P: whether it is every MLP, and the reuse of random
  circuits at that setting (above 0?);
* notebook 03 -- the loaded model's induction heads (50x filter on planted-pair probes): how many, in how many
  layers, and how many distinct layer-matched controls they leave.

:data:`TARGETS` are issue 49's bars; :func:`missed` names the ones a measurement misses.
"""
from __future__ import annotations

from ..core.controls import possible_draws

TARGETS = {
    "01.mlps_fraction": ("<=", 0.5),  # the circuit holds at most half the MLPs ...
    "01.heads_fraction": ("<=", 0.15),  # ... and at most 15% of the heads,
    "01.sufficiency": (">=", 0.8),  # and keeps at least 80% alone
    "01.mlps_outside_minus_inside": (">=", 0),  # as many MLPs outside as inside
    "02.tasks_sp_not_every_mlp": (">=", 3),  # of the 5 tasks
    "02.random_reuse": (">", 0.0),
    "03.induction_room": (">=", 1),  # 1 when the heads span >= 2 layers or leave >= 20 layer-matched draws
}


def control_room(model, n_search: int = 50, n_eval: int = 200, n_tasks: int = 48, probe_n: int = 128) -> dict:
    """Every figure of :data:`TARGETS` (and what they are made of), measured on ``model``."""
    import math

    from ..methods.attribution import EAPGraph, eap_for_tasks
    from ..methods.consistency import reuse_sweep, shared_sets
    from ..tasks.greater_than import make_greater_than
    from .consistency import study_tasks, teaching_setting
    from .greater_than import evaluate_circuit, greater_than_circuit_search, without_embedding
    from .spectral_loaded import induction_minority, model_probe

    cfg = model.cfg
    out: dict = {}
    task = make_greater_than(model.tokenizer, n=n_eval, seed=0)
    search = greater_than_circuit_search(model, task.subset(range(n_search)), threshold=0.005,
                                         receivers_mode="independent")
    inner = without_embedding(search.circuit)
    heads = [c for c in inner.nodes if c.startswith("a")]
    mlps = [c for c in inner.nodes if c.startswith("m")]
    out.update({"01.circuit": sorted(inner.nodes), "01.heads_fraction": len(heads) / (cfg.n_layers * cfg.n_heads),
                "01.mlps_fraction": len(mlps) / cfg.n_layers, "01.mlps_outside_minus_inside": cfg.n_layers - 2 * len(mlps),
                "01.sufficiency": evaluate_circuit(model, task, search.circuit)["sufficiency_fraction"],
                "01.type_matched_draws": possible_draws(model, inner, "type")})

    tasks = study_tasks(model, n=n_tasks, seed=0, verbose=False)
    import torch

    with torch.no_grad():
        acc = {n: float(t.accuracy(model(t.clean)).mean()) for n, t in tasks.items()}
    performed = [n for n, a in acc.items() if a >= 0.9]
    scores = eap_for_tasks(model, {n: tasks[n] for n in performed}, metric="logit_diff", batch_size=64)
    ks, ps = (0.01, 0.05, 0.10, 0.15, 0.20, 0.25, 0.30, 0.40, 0.50), (50, 75, 90, 95, 100)
    k, p, _ = teaching_setting(scores, performed, ks, ps, min_size=3, paper_k=0.10)
    shared = shared_sets(scores, k, p)
    all_mlps = {f"m{l}" for l in range(cfg.n_layers)}
    rand = [float(reuse_sweep(scores[n], ks=[k], ps=[p], seed=0).random_reuse[0, 0]) for n in performed]
    n_components = len(EAPGraph.from_model(model).components)
    out.update({"02.setting": f"K = {k:.0%} ({math.ceil(k * n_components - 1e-9)} components), P = {p}",
                "02.performed": performed, "02.sp": {n: sorted(shared[n].nodes) for n in performed},
                "02.tasks_sp_not_every_mlp": sum(1 for n in performed if not all_mlps <= set(shared[n].nodes)),
                "02.random_reuse": max(rand) if rand else 0.0})

    found = induction_minority(model, model_probe(model, n=probe_n), 50.0, 30.0, n_control_seeds=1)
    layers = sorted({int(h[1:].split(".")[0]) for h in found.heads})
    draws = possible_draws(model, found.heads, "layer") if found.heads else 0
    out.update({"03.induction_heads": list(found.heads), "03.layers": layers, "03.layer_matched_draws": draws,
                "03.induction_room": int(len(layers) >= 2 or draws >= 20)})
    return out


def missed(room: dict) -> dict:
    """``{target: (value, (op, bar))}`` for each of :data:`TARGETS` that ``room`` misses."""
    ops = {"<=": lambda a, b: a <= b, ">=": lambda a, b: a >= b, ">": lambda a, b: a > b}
    return {k: (room[k], t) for k, t in TARGETS.items() if k in room and not ops[t[0]](room[k], t[1])}
