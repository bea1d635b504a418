"""Check for notebook 04's edge-patching exercise: the faithfulness f of an edge circuit, written by the learner with
hooks (each receiver's input reads, from every sender upstream, that sender's output in this run if the edge is in
the circuit and its corrupted output if not), compared with the library's engine
(:func:`tutorial_lib.methods.faithfulness.patched_metric`).

When the learner's number differs, the check names the slip it matches: clean and corrupted swapped, node patching
instead of edge patching, the logits receiver forgotten, a head's q, k and v inputs treated alike, only the queries
patched, the circuit's edges fed the clean run's values, the correction made after the receiver's norm, the empty
circuit's metric left out of the numerator or of the denominator. Each wrong answer is a circuit the library can
score (a swap is the complement, node patching the senders' whole rows, ...) or, for the last engine slips, the
same hooks with the slip made (:func:`_slipped_metric`).
"""
from __future__ import annotations

from typing import Callable, Optional

import torch

from .common import ExerciseError, call_exercise, passed

TOL = 1e-4  # on f (a ratio: 1 is the whole model): float32 rounding is ~1e-6 on the course's models


def _senders(store: list) -> list:
    """Hooks appending every sender's output, in the graph's order, as a run computes them (inside an
    ``engine_view`` with per-head results)."""
    return [("blocks.0.hook_resid_pre", lambda act, hook: store.append(act)),
            (lambda n: n.endswith("attn.hook_result"), lambda act, hook: store.extend(act.unbind(2))),
            (lambda n: n.endswith("hook_mlp_out"), lambda act, hook: store.append(act))]


@torch.no_grad()
def _slipped_metric(model, task, circuit, slip: str) -> Optional[float]:
    """m(C) by edge patching with one slip: ``"clean cache"`` (a circuit edge carries the sender's *clean-run*
    output, not its output in this run) or ``"after norm"`` (the correction is made on the receiver's normalised
    input, ``ln*.hook_normalized``, so the norm is not recomputed). None where the model has no such norm."""
    from ...core.view import engine_view
    from ...methods.attribution import EAPGraph

    graph = EAPGraph.from_model(model)
    if slip == "after norm" and model.cfg.normalization_type is None:
        return None
    cut = (graph.edge_mask() & ~circuit.cpu()).float().to(model.W_E.device)
    H, R = graph.n_heads, len(graph.receivers)
    with engine_view(model, split_qkv=True, attn_result=True, mlp_in=True):
        runs = {}
        for name, tokens in (("corrupt", task.corrupt), ("clean", task.clean)):
            store: list = []
            with model.hooks(fwd_hooks=_senders(store)):
                model(tokens)
            runs[name] = torch.stack(store)
        live: list = []
        source = (lambda n: runs["clean"][:n]) if slip == "clean cache" else (lambda n: torch.stack(live[:n]))

        def cut_into(act, r):
            n = graph.n_upstream[r]
            return act - torch.einsum("s,sbpd->bpd", cut[:n, r], source(n) - runs["corrupt"][:n])

        calls: dict = {}

        def heads(act, hook, letter=None):
            l = hook.layer()
            if letter is None:  # ln1.hook_normalized runs three times per layer: q, k, v
                letter = "qkv"[calls.get(l, 0)]
                calls[l] = calls.get(l, 0) + 1
            r0 = graph.receiver_base(l) + "qkv".index(letter) * H
            return torch.stack([cut_into(act[:, :, h], r0 + h) for h in range(H)], dim=2)

        mlp = lambda act, hook: cut_into(act, graph.receiver_base(hook.layer()) + 3 * H)  # noqa: E731
        final = lambda act, hook: cut_into(act, R - 1)  # noqa: E731
        if slip == "after norm":
            receivers = [(lambda n: n.endswith("ln1.hook_normalized"), heads),
                         (lambda n: n.endswith("ln2.hook_normalized"), mlp), ("ln_final.hook_normalized", final)]
        else:
            receivers = [(lambda n: n.endswith(("hook_q_input", "hook_k_input", "hook_v_input")),
                          lambda act, hook: heads(act, hook, hook.name[-7])),
                         (lambda n: n.endswith("hook_mlp_in"), mlp),
                         (f"blocks.{graph.n_layers - 1}.hook_resid_post", final)]
        with model.hooks(fwd_hooks=_senders(live) + receivers):
            return task.metric(model(task.clean)).mean().item()


def _slip_circuits(graph, c: torch.Tensor) -> dict:
    """Wrong answers that are other circuits, scored exactly by the library: {message: circuit}."""
    edge = graph.edge_mask()
    c = c & edge
    H, R = graph.n_heads, len(graph.receivers)
    kv = torch.zeros(R, dtype=torch.bool)  # the k and v inputs of every head
    for l in range(graph.n_layers):
        kv[graph.receiver_base(l) + H:graph.receiver_base(l) + 3 * H] = True
    alike, any_of = c.clone(), c.clone()
    for l in range(graph.n_layers):
        b = graph.receiver_base(l)
        for h in range(H):
            cols = [b + h, b + H + h, b + 2 * H + h]
            alike[:, cols] = c[:, [b + h]].expand(-1, 3)
            any_of[:, cols] = c[:, cols].any(1, keepdim=True).expand(-1, 3)
    only_q = c | (edge & kv[None, :])
    logits = c.clone()
    logits[:, -1] = edge[:, -1]
    nodes = edge & c.any(1, keepdim=True)  # a sender with an edge in the circuit is kept for every receiver
    return {
        "clean and corrupted are swapped: the circuit's edges carried the corrupted outputs and the cut edges the "
        "run's own (patch the edges *outside* the circuit)": edge & ~c,
        "that is node patching: a sender was replaced by its corrupted output for every receiver at once (or for "
        "none); an edge circuit decides per receiver, so patch each receiver's input, edge by edge": nodes,
        "the logits receiver is missing: the edges into the logits that are not in the circuit were not cut (patch "
        "the final residual stream too)": logits,
        "a head's q, k and v inputs got the same treatment (the q edge's): they are three receivers, each with its "
        "own column of the circuit (receiver_base(layer) + letter * n_heads + head)": alike,
        "a head's q, k and v inputs got the same treatment (one edge in, all in): they are three receivers, each "
        "with its own column of the circuit": any_of,
        "only the query inputs were patched: the k and v inputs of every head are receivers too (hook_k_input, "
        "hook_v_input)": only_q,
    }


def _one(faithfulness_of, model, task, graph, circuit, m_c, m_full, m_empty, what) -> None:
    from ...methods import faithfulness as fa

    v = call_exercise(faithfulness_of, model, task, circuit)
    if isinstance(v, torch.Tensor):
        if v.numel() != 1:
            raise ExerciseError(f"faithfulness_of: return one number, got a tensor of shape {tuple(v.shape)}")
        v = v.item()
    if v is None:
        raise ExerciseError("faithfulness_of: your function returned None; return f as one number")
    got = float(v)
    gap = m_full - m_empty
    want = (m_c - m_empty) / gap
    if abs(got - want) <= TOL:
        return
    head = f"faithfulness_of on {what}: you have {got:.5g}, the library's edge patching gives {want:.5g}"
    formula = {
        "the numerator lacks the empty circuit's metric m(∅): subtract it from m(C)": m_c / gap,
        "the denominator lacks the empty circuit's metric m(∅): subtract it from m(M)": (m_c - m_empty) / m_full,
        "that is m(C) / m(M): the empty circuit's metric m(∅) is left out of both": m_c / m_full,
        "that is 1 - f: the numerator starts from the empty circuit, not from the model": 1 - want,
        "that is m(C) itself, not yet the share of the model's behaviour": m_c,
    }
    for message, alt in formula.items():
        if abs(alt - want) > TOL and abs(got - alt) <= TOL:
            raise ExerciseError(f"{head} -- {message}")
    slips = _slip_circuits(graph, circuit.cpu().bool())
    ms = fa.patched_metric(model, task, torch.stack(list(slips.values()))).tolist()
    for message, m_alt in zip(slips, ms):
        alt = (m_alt - m_empty) / gap
        if abs(alt - want) > TOL and abs(got - alt) <= TOL:
            raise ExerciseError(f"{head} -- {message}")
    engine = {
        "clean cache": "the circuit's edges carried the sender's output from the *clean* run; they carry its output "
                       "in this patched run (a sender downstream of a cut edge has changed too)",
        "after norm": "the correction was made after the receiver's norm (hook_normalized): patch the input before "
                      "it (hook_q_input / hook_k_input / hook_v_input, hook_mlp_in, the last hook_resid_post), so "
                      "that the norm is recomputed on the patched input",
    }
    for slip, message in engine.items():
        m_alt = _slipped_metric(model, task, circuit, slip)
        if m_alt is None:
            continue
        alt = (m_alt - m_empty) / gap
        if abs(alt - want) > TOL and abs(got - alt) <= TOL:
            raise ExerciseError(f"{head} -- {message}")
    raise ExerciseError(f"{head} (m(C) = {m_c:.4g}, m(M) = {m_full:.4g}, m(∅) = {m_empty:.4g} by the library's edge "
                        "patching); no usual slip gives your number")


def _stand_in():
    """A tiny Llama-family model and a toy task, for models whose heads reach the residual stream through a norm."""
    from ...tasks.base import TaskData
    from ...zoo.families import tiny_family_model

    model = tiny_family_model("llama", scale=3.0, seed=1)
    g = torch.Generator().manual_seed(0)
    V = model.cfg.d_vocab
    clean = torch.randint(0, V, (6, 7), generator=g)
    corrupt = clean.clone()
    corrupt[:, 2] = (clean[:, 2] + torch.randint(1, V, (6,), generator=g)) % V
    task = TaskData("toy", [""] * 6, [""] * 6, clean, corrupt, torch.full((6,), 6), clean[:, 2], corrupt[:, 2:3])
    return model, task


def check_faithfulness(faithfulness_of: Callable, model, task, circuits) -> None:
    """``faithfulness_of(model, task, circuit) -> float``: f of an edge circuit (``[n_senders, n_receivers]`` bool)
    by the learner's own edge patching, against the library's engine to 1e-4, on the whole model, the empty circuit
    and ``circuits``. Where a norm sits on a layer's summed attention output (Gemma 2, OLMo-2) a head's edge is not
    additive and the exercise does not cover it: the check then runs on a tiny Llama-family model and random circuits."""
    from ...core import arch
    from ...methods import faithfulness as fa
    from ...methods.attribution import EAPGraph

    note = ""
    if arch.normalizes_output(model.cfg):
        model, task = _stand_in()
        graph = EAPGraph.from_model(model)
        circuits = [fa.top_edges(graph, fa.random_scores(graph, s), [f])[0] for s, f in [(0, 0.3), (1, 0.6), (2, 0.9)]]
        note = "; on a tiny Llama-family model (this model's heads reach the residual stream through a norm)"
    graph = EAPGraph.from_model(model)
    full = fa.full_circuit(graph)
    # the given circuits first: on the whole model and the empty circuit some slips give the same number (a swap is 1 - f)
    cases = [*((c.cpu().bool(), f"circuit {i + 1} ({int((c.cpu().bool() & full).sum())} edges)")
               for i, c in enumerate(circuits)), (full, "the whole model"), (torch.zeros_like(full), "the empty circuit")]
    m = fa.patched_metric(model, task, torch.stack([c for c, _ in cases])).tolist()
    m_full, m_empty = m[-2], m[-1]
    for (c, what), m_c in zip(cases, m):
        _one(faithfulness_of, model, task, graph, c, m_c, m_full, m_empty, what)
    passed("check_faithfulness", f"the whole model, the empty circuit and {len(circuits)} circuits match the "
                                 f"library's edge patching to {TOL:g}{note}")
