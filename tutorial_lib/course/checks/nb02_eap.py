"""Checks for notebook 02's all-edges EAP exercise: every edge's score, per example, from one forward and one backward pass.

:func:`check_eap_edges` compares the learner's ``[examples, senders, receivers]`` tensor with the library's engine
(:func:`tutorial_lib.methods.attribution.eap_scores`) and, when they differ, recomputes the usual slips directly
(:func:`_direct_parts`: the sender differences and the gradients at the receivers' inputs and at the senders'
outputs, from a plain cached run) to say which one the learner made.
"""
from __future__ import annotations

from typing import Callable

import torch

from .common import ExerciseError, call_exercise, compare, passed


def _sender_hook(name: str):
    """``(hook name, head index or None)`` where sender ``name`` of :class:`EAPGraph` writes its output."""
    if name == "embed":
        return "blocks.0.hook_resid_pre", None
    if name.startswith("m"):
        return f"blocks.{name[1:]}.hook_mlp_out", None
    layer, head = name[1:].split(".h")
    return f"blocks.{layer}.attn.hook_result", int(head)


def _receiver_hook(name: str, n_layers: int):
    """``(hook name, head index or None)`` where receiver ``name`` reads the residual stream."""
    if name == "logits":
        return f"blocks.{n_layers - 1}.hook_resid_post", None
    if name.startswith("m"):
        return f"blocks.{name[1:]}.hook_mlp_in", None
    head, letter = name.rsplit(".", 1)
    layer, h = head[1:].split(".h")
    return f"blocks.{layer}.hook_{letter}_input", int(h)


def _direct_parts(model, task, graph):
    """``(diff [b, S, pos, d], grad at the receivers' inputs [b, R, pos, d], grad at the senders' outputs [b, S, pos, d])``
    from one corrupted run and one clean forward + backward of the summed logit difference (the slips' ingredients)."""
    from ...core.view import engine_view

    pick = lambda acts, where: acts[where[0]] if where[1] is None else acts[where[0]][:, :, where[1]]  # noqa: E731
    senders = [_sender_hook(s) for s in graph.senders]
    receivers = [_receiver_hook(r, model.cfg.n_layers) for r in graph.receivers]
    names = {h for h, _ in senders} | {h for h, _ in receivers}
    with engine_view(model, split_qkv=True, attn_result=True, mlp_in=True, frozen=True):
        with torch.no_grad():
            _, corrupt = model.run_with_cache(task.corrupt, names_filter=lambda n: n in names)
        kept = {}

        def keep(act, hook):
            if hook.name == "blocks.0.hook_resid_pre":
                act = act.detach().requires_grad_(True)
            act.retain_grad()
            kept[hook.name] = act
            return act

        with model.hooks(fwd_hooks=[(lambda n: n in names, keep)]):
            logits = model(task.clean)
        task.logit_diff(logits).sum().backward()
        grads = {k: v.grad.detach() for k, v in kept.items()}
        diff = torch.stack([pick(corrupt, s) - pick(kept, s).detach() for s in senders], 1)
        g_in = torch.stack([pick(grads, r) for r in receivers], 1)
        g_out = torch.stack([pick(grads, s) for s in senders], 1)
    return diff.float(), g_in.float(), g_out.float()


def _slips(model, task, graph, expected):
    """The usual wrong answers, as ``(message, zero-argument function)`` for :func:`compare`, computed lazily."""
    n = expected.shape[0]
    mask = graph.edge_mask()
    parts = {}

    def get():
        if not parts:
            parts["diff"], parts["g_in"], parts["g_out"] = _direct_parts(model, task, graph)
        return parts["diff"], parts["g_in"], parts["g_out"]

    def unmasked():
        diff, g_in, _ = get()
        return torch.einsum("bspd,brpd->bsr", diff, g_in)

    def at_receiver_output():
        diff, g_in, g_out = get()
        own = {s: i for i, s in enumerate(graph.senders)}
        cols = [g_in[:, j] if r == "logits" else g_out[:, own[r.rsplit(".", 1)[0] if r.startswith("a") else r]]
                for j, r in enumerate(graph.receivers)]
        return torch.einsum("bspd,brpd->bsr", diff, torch.stack(cols, 1)) * mask

    def at_sender_output():
        diff, _, g_out = get()
        return (diff * g_out).sum((2, 3))[:, :, None] * mask

    def end_only():
        diff, g_in, _ = get()
        rows = torch.arange(n)
        end = task.end_pos.cpu()
        return torch.einsum("bsd,brd->bsr", diff[rows, :, end], g_in[rows, :, end]) * mask

    def per_position():
        diff, g_in, _ = get()
        return torch.einsum("bspd,brpd->bsrp", diff, g_in) * mask[..., None]

    return [
        ("every score has the wrong sign: you took the sender's clean output minus its corrupted one", -expected),
        (f"every score is 1/{n} of the library's: you backpropagated the mean of the batch's {n} metrics; backpropagate "
         "their sum, so that each example keeps its own gradient", expected / n),
        ("your matrix is [receivers, senders], transposed: its rows follow graph.senders and its columns graph.receivers",
         expected.transpose(1, 2)),
        ("the entries that are not edges are not 0 (a head does not feed the q, k or v input of a head in its own "
         "layer): multiply by graph.edge_mask()", unmasked),
        ("every edge out of a sender has the same score: that is the gradient at the sender's own output, which sums "
         "all of its paths (its node score); an edge's gradient is taken where its receiver reads", at_sender_output),
        ("you took the gradient at each receiver's *output* (a head's result, an MLP's output): an edge ends where "
         "its receiver reads the residual stream, at its input (hook_q_input / hook_k_input / hook_v_input, "
         "hook_mlp_in)", at_receiver_output),
        ("you kept the final position only: an edge's score sums over every position, since earlier positions reach "
         "the answer through attention", end_only),
        ("you kept one score per position (the last dimension): sum over the positions too", per_position),
    ]


def check_eap_edges(eap_edge_scores: Callable, model, task, examples=6) -> None:
    """``eap_edge_scores(model, task, graph)`` must return the EAP score of every edge of ``graph``
    (:class:`~tutorial_lib.methods.eap_graph.EAPGraph`) for every example of ``task``, ``[examples, senders,
    receivers]``, with the logit difference as the metric, equal to :func:`tutorial_lib.methods.attribution.eap_scores`'s
    edges; no hook may stay attached and the model's settings must be restored.

    It runs on the first ``examples`` examples of ``task``. On a model with a norm on the summed attention output
    (Gemma 2, OLMo-2) the library scores a head's edges through that norm; there only the rows of ``embed`` and the
    MLPs are compared (the check says so)."""
    from ...core.arch import normalizes_output
    from ...core.hooks import count_hooks
    from ...core.view import VIEW_FLAGS
    from ...methods.attribution import EAPGraph, eap_scores

    sub = task.subset(range(min(int(examples), len(task))))
    graph = EAPGraph.from_model(model)
    expected = eap_scores(model, sub, metric="logit_diff", logits_at="all", progress=False).edges.float()
    n, S, R = expected.shape
    before = {f: getattr(model.cfg, f, None) for f in VIEW_FLAGS}
    grads_before = [p.requires_grad for p in model.parameters()]
    got = call_exercise(eap_edge_scores, model, sub, graph)
    if count_hooks(model):
        model.reset_hooks()
        raise ExerciseError("a hook is still attached to the model after your function ran: use `with model.hooks(...)`")
    changed = [f for f in VIEW_FLAGS if getattr(model.cfg, f, None) != before[f]]
    if changed or grads_before != [p.requires_grad for p in model.parameters()]:
        for f in changed:  # put them back, so that the notebook's later cells run as before
            setattr(model.cfg, f, before[f])
        for p, g in zip(model.parameters(), grads_before):
            p.requires_grad_(g)
        raise ExerciseError(f"your function left the model's settings changed ({', '.join(changed) or 'requires_grad'}): "
                            "change them only inside `with engine_view(model, ...)`, which restores them")
    model.zero_grad(set_to_none=True)
    if got is None:
        raise ExerciseError("eap_edge_scores returned None: return the [examples, senders, receivers] tensor")
    if not isinstance(got, torch.Tensor):
        got = torch.as_tensor(got)
    got = got.detach().float().cpu()
    H, L = graph.n_heads, graph.n_layers
    if got.ndim == 3 and got.shape[0] == n and got.shape[1] == S and got.shape[2] == R - 2 * L * H:
        raise ExerciseError(f"you have {got.shape[2]} receivers, {R} expected: one per head, where each head has three, its "
                            "query, key and value inputs (graph.receivers lists a{l}.h{h}.q, .k and .v)")
    rows = slice(None)
    note = ""
    if normalizes_output(model.cfg):
        rows = [i for i, s in enumerate(graph.senders) if not s.startswith("a")]
        note = " (the heads' rows are not compared: a norm sits on this model's summed attention output)"
    slips = _slips(model, sub, graph, expected)
    if rows != slice(None):
        cut = lambda t: t[:, rows] if t.shape[:2] == (n, S) else t  # noqa: E731
        slips = [(m, (lambda a=a: cut(a() if callable(a) else a))) for m, a in slips]
        got, expected = (cut(got) if got.ndim >= 2 and got.shape[:2] == (n, S) else got), cut(expected)
    scale = float(expected.abs().max()) or 1.0
    compare(got, expected, f"edge scores of examples 0-{n - 1}", atol=1e-4 * scale, rtol=1e-3,
            dims=("example", "sender", "receiver"), wrong=slips)
    passed("check_eap_edges", f"the {int(graph.edge_mask().sum())} edges of {n} examples match the library's EAP{note}")
