"""Edge attribution patching (EAP), per example, from batched passes.

EAP (Syed, Rager & Conmy 2023) scores every edge ``sender -> receiver`` of the model's graph with a
first-order estimate of what patching that one edge from the corrupted run into the clean run would
do to a metric::

    score(s -> r) = (corrupted output of s - clean output of s) . d metric / d (input of r)

summed over positions and the residual dimension. The graph has

* **senders**: ``embed`` (token + learned positional embedding; the token embedding alone with rotary
  positions), every head ``a{l}.h{h}`` (its result, the head's share of the attention output) and every
  MLP ``m{l}`` (its output);
* **receivers**: the query, key and value inputs of every head (``a{l}.h{h}.q|k|v``, three separate
  receivers), every MLP's input ``m{l}``, and ``logits`` (the final residual stream);
* an edge from every sender to every receiver that sits later in the residual stream.

Li & Subramani (2026) need a circuit *per example*. Their code runs one corrupted forward and one
clean forward + backward per example (batch size 1). :func:`eap_scores` gets the same numbers from
batched passes: it never sums over the batch, and because examples in a batch do not interact (the
attention is causal and per example, LayerNorm is per position) the gradient of
``metric(logits).sum()`` with respect to example ``i``'s activations is example ``i``'s own gradient.

>>> scores = eap_scores(model, task, batch_size=32)          # doctest: +SKIP
>>> scores.nodes.shape                                        # doctest: +SKIP
torch.Size([256, 156])                                        # [examples, heads + MLPs]
>>> circuits = scores.circuits(0.10)                          # top-10% components per example  # doctest: +SKIP
>>> scores.plot()                                             # mean node score, layer x head  # doctest: +SKIP

Besides batching, it saves work the per-example loop does: weights are frozen (no weight gradients),
the corrupted run stops at the final residual stream, with ``logits_at="end"`` the unembedding is
applied at ``end_pos`` only, the q/k/v input gradients come exactly from the gradients at
``hook_q/k/v`` through LayerNorm's backward formula (no ``use_split_qkv_input``, so LayerNorm runs once
per layer, not once per head), and each layer's receivers are scored with one matrix product.
`benchmarks/eap_per_example.py` times it against the loop.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Callable, Optional, Union

import torch
from jaxtyping import Float, Int
from torch import Tensor
from ..core.progress import tqdm
from ..core.view import engine_view

from ..core.arch import head_contributions, input_norm_type, normalizes_output
from ..core.forward import apply_ln_final_and_unembed
from ..tasks.base import TaskData
from .eap_graph import EAPGraph, EAPScores  # noqa: F401  (the graph and the results live there)
from .patching import patch_each

MetricArg = Union[str, Callable]


# ----------------------------------------------------------------------------------- settings
@contextmanager
def eap_settings(model):
    """Hook the MLP inputs, unsplit q/k/v inputs and freeze the weights in a ``with`` block; restore on exit.

    The q/k/v receivers need no ``use_split_qkv_input``: :func:`eap_batch` gets each head's input
    gradients from the gradients at ``hook_q/k/v`` through the LayerNorm's backward formula, which is
    exact and avoids running LayerNorm once per head. A grouped-query model runs ungrouped
    (:func:`tutorial_lib.core.view.engine_view`): one key and value per query head, so that each query head has
    its own k and v receivers.
    """
    with engine_view(model, mlp_in=True, frozen=True):
        yield model


def _metric_fn(task: TaskData, metric: MetricArg, logits_at: str) -> Callable:
    """``f(logits, idx) -> Tensor[batch]`` for the examples ``idx`` of ``task``."""
    if isinstance(metric, str):
        if metric not in ("answer_logprob", "metric", "logit_diff"):
            raise ValueError(
                f"unknown metric {metric!r}; accepted: 'answer_logprob' (Li & Subramani's), 'metric', "
                "'logit_diff', or a callable f(logits, task_subset) -> Tensor[batch]"
            )
        name = metric
        metric = lambda logits, sub: getattr(sub, name)(logits)  # noqa: E731
    elif not callable(metric):
        raise ValueError(f"metric must be a string or a callable, got {metric!r}")

    def fn(logits: Tensor, idx: Tensor) -> Tensor:
        sub = task.subset(idx)
        if logits_at == "end":  # logits hold only the end position: point end_pos at it
            sub.end_pos = torch.zeros_like(sub.end_pos)
        return metric(logits, sub)

    return fn


# ----------------------------------------------------------------------------------- one batch
def _input_grads(model, l: int, letter: str, grad, act, normalized, scale) -> Tensor:
    """Gradient w.r.t. head inputs (the residual stream before ``ln1``) from the gradient at hook_q/k/v.

    For ``q = LN(x) @ W_Q + b_Q`` with ``LN(x) = w * x_hat + beta``, ``x_hat = (x - mean) / scale``, the
    input gradient of head ``h`` is ``(u - mean(u) - x_hat * mean(u * x_hat)) / scale`` with
    ``u = w * (W_Q[h] @ dq_h)`` (LN, LNPre; RMS norms skip ``mean(u)``). ``mean(u)`` is folded into the
    weights (centred along ``d_model``) and ``x_hat @ (w * W_Q) = q - b_Q - beta @ W_Q`` is read from the
    clean run's ``q``. Returns ``[n_heads, batch * pos, d_model]``.
    """
    attn, ln1, norm = model.blocks[l].attn, model.blocks[l].ln1, input_norm_type(model.cfg)
    W = getattr(attn, f"W_{letter.upper()}")  # [head, d_model, d_head]
    H, b, p = W.shape[0], grad.shape[0], grad.shape[1]
    if norm is None:
        return torch.bmm(grad.permute(2, 0, 1, 3).reshape(H, b * p, -1), W.transpose(1, 2))
    A = grad / scale[:, :, :, None]  # [batch, pos, head, d_head], 1/scale folded in
    Ww = W * ln1.w[None, :, None] if hasattr(ln1, "w") else W
    Wc = Ww - Ww.mean(1, keepdim=True) if norm.startswith("LN") else Ww
    out = torch.bmm(A.permute(2, 0, 1, 3).reshape(H, b * p, -1), Wc.transpose(1, 2))
    xw = act - getattr(attn, f"b_{letter.upper()}")
    if hasattr(ln1, "b"):
        xw = xw - torch.einsum("d,hdk->hk", ln1.b, W)
    m = (A * xw).sum(-1) / W.shape[1]  # mean(u * x_hat) / scale, [batch, pos, head]
    return out.addcmul_(m.permute(2, 0, 1).reshape(H, b * p, 1), normalized.reshape(1, b * p, -1), value=-1.0)


def eap_batch(
    model,
    graph: EAPGraph,
    clean: Int[Tensor, "batch pos"],
    corrupt: Int[Tensor, "batch pos"],
    metric_fn: Callable[[Tensor], Float[Tensor, "batch"]],
    end_pos: Optional[Int[Tensor, "batch"]] = None,
    ig_steps: int = 1,
) -> tuple[Float[Tensor, "batch n_senders n_receivers"], Float[Tensor, "batch"], Optional[Tensor]]:
    """Edge scores of one batch: one corrupted forward, one clean forward, one backward.

    ``ig_steps = m > 1``: EAP with integrated gradients (EAP-IG, Hanna, Pezzelle & Belinkov 2024). The
    gradients are averaged over ``m`` inputs on the line from the corrupted to the clean embeddings,
    ``x_k = corrupt + (k / m) (clean - corrupt)`` for ``k = 1..m``; all ``m`` run in one batch of ``m * batch``
    rows (one forward, one backward), after a corrupted and a clean forward without gradients for the
    sender differences. ``m = 1`` is the clean point alone: plain EAP.

    Call inside :func:`eap_settings`. ``metric_fn(logits)`` returns one value per example; the logits
    are ``[batch, pos, d_vocab]``, or ``[batch, 1, d_vocab]`` (end positions only) if ``end_pos`` is
    given. Returns the edge scores (zero where there is no edge), the clean metric, and -- on a model with a
    norm on the summed attention output (Gemma 2, OLMo-2; else None) -- the heads' signed node scores
    ``[batch, n_layers * n_heads]`` read at their own outputs, ``(corrupted - clean z_h) . d metric / d z_h``.

    A head's sender difference is its change to the residual stream when it alone takes its corrupted value
    (:func:`tutorial_lib.core.arch.head_contributions`): ``dz_h @ W_O[h]`` on a pre-norm model (exact), and
    ``N(A + dz_h @ W_O[h]) - N(A)`` where a norm ``N`` sits on the layer's summed output ``A`` (Gemma 2's
    ``ln1_post``, OLMo-2's ``ln1``): the change a receiver sees, whose product with the receiver's gradient is a
    first-order estimate. The EAP-IG library's *attribution* differs there (its scores take the head's output
    before ``ln1_post`` times the gradient after it, and it has no post-norm case for OLMo-2); only its
    *evaluation* passes head outputs through ``ln1_post``, as the course's does (:mod:`tutorial_lib.core.arch`).
    There the edges of one head do not sum to its node score exactly: the norm's scale is shared by all heads.

    Layout: sender differences are kept as ``diff[batch, sender, pos * d_model]``, so the senders
    upstream of a receiver are a prefix ``diff[:, :n_up]``; the gradients of one layer's receivers
    (q, k, v of every head and the MLP) are gathered in one buffer and scored with one batched matrix
    product, without copying ``diff``.
    """
    cfg = model.cfg
    L, H, d = graph.n_layers, graph.n_heads, cfg.d_model
    b, p = clean.shape
    dev, dtype = model.W_E.device, model.W_E.dtype
    clean, corrupt = clean.to(dev), corrupt.to(dev)
    S, R = len(graph.senders), len(graph.receivers)
    acc = torch.float64 if dtype == torch.float64 else torch.float32
    diff = torch.zeros(b, S, p * d, device=dev, dtype=dtype)
    dz = [None] * L  # corrupted - clean hook_z per layer
    normed = normalizes_output(cfg)
    z_clean = [None] * L  # the clean run's hook_z, for the norm on the summed output (normed models only)
    head_signed = torch.zeros(b, L * H, device=dev, dtype=acc) if normed else None
    saved = [dict() for _ in range(L)]  # clean run: ln1 normalized/scale, q/k/v per layer
    grads = [dict() for _ in range(L)]  # receiver gradients per layer, filled during backward
    per_layer = 3 * H + int(graph.has_mlp)
    edges = torch.zeros(b, S, R, device=dev, dtype=acc)

    m_ig = int(ig_steps)
    if m_ig < 1:
        raise ValueError(f"ig_steps must be an integer >= 1 (1: plain EAP), got {ig_steps!r}")
    emb: dict = {}  # the corrupted (+1) and clean (-1) embeddings, for the interpolation

    def store(sign: float, grad_run: bool = True):
        def embed_hook(act, hook):
            diff[:, 0] += sign * act.detach().reshape(b, p * d)
            emb[sign] = act.detach()
            return act.detach().requires_grad_(sign < 0 and grad_run)  # the clean run's gradient starts here

        def z_hook(act, hook):
            l = hook.layer()
            dz[l] = act.detach().clone() if sign > 0 else dz[l] - act.detach()
            if sign < 0 and normed:
                z_clean[l] = act.detach()

        def mlp_hook(act, hook):
            diff[:, graph.sender_base(hook.layer()) + H] += sign * act.detach().reshape(b, p * d)

        hooks = [("blocks.0.hook_resid_pre", embed_hook), (lambda n: n.endswith("attn.hook_z"), z_hook)]
        if graph.has_mlp:
            hooks.append((lambda n: n.endswith("hook_mlp_out"), mlp_hook))
        if sign < 0 and grad_run:
            hooks.append(keep_hook)
        return hooks

    def keep(act, hook):
        saved[hook.layer()][hook.name.rsplit("_", 1)[-1]] = act.detach()

    keep_hook = (lambda n: n.endswith(("ln1.hook_normalized", "ln1.hook_scale", "attn.hook_q", "attn.hook_k",
                                       "attn.hook_v")), keep)

    def fold(grad: Tensor) -> Tensor:
        """Sum a gradient of the m interpolation rows per example: [m * b, ...] -> [b, ...]."""
        return grad if m_ig == 1 else grad.reshape(m_ig, b, *grad.shape[1:]).sum(0)

    def receiver_hook(grad, hook):
        grad = grad.detach()
        if hook.name.endswith("resid_post"):  # the logits' receiver: every sender feeds it
            edges[:, :, R - 1] = torch.bmm(diff, fold(grad).reshape(b, p * d, 1))[:, :, 0].to(acc)
            return
        l, g = hook.layer(), grads[hook.layer()]
        if not g:
            g["U"] = torch.empty(per_layer, b * p, d, device=dev, dtype=dtype)
        if hook.name.endswith("mlp_in"):
            g["U"][3 * H] = fold(grad).reshape(b * p, d)
            g["mlp"] = True
        else:
            letter = hook.name[-1]
            j = "qkv".index(letter)
            sv = saved[l]
            u = _input_grads(model, l, letter, grad, sv.get(letter), sv.get("normalized"), sv.get("scale"))
            g["U"][j * H : (j + 1) * H] = u if m_ig == 1 else u.view(H, m_ig, b * p, d).sum(1)
            g[letter] = True
        if len(g) == per_layer - 3 * H + 4:  # q, k, v (and the MLP) arrived: score the layer at once
            r0 = graph.receiver_base(l)
            n_up = graph.n_upstream[r0 + per_layer - 1]  # the widest prefix (the MLP's); masked below
            U = g.pop("U").view(per_layer, b, p * d).permute(1, 0, 2)  # [batch, receivers, pos*d]
            edges[:, :n_up, r0 : r0 + per_layer] = torch.bmm(diff[:, :n_up], U.transpose(1, 2)).to(acc)
            g.clear()

    def z_grad_hook(grad, hook):  # normed models: the heads' node scores at their own outputs
        l = hook.layer()
        head_signed[:, l * H:(l + 1) * H] += (fold(grad.detach()) * dz_kept[l]).sum((1, 3)).to(acc)

    bwd = [(lambda n: n.endswith(("attn.hook_q", "attn.hook_k", "attn.hook_v", "hook_mlp_in")), receiver_hook),
           (f"blocks.{L - 1}.hook_resid_post", receiver_hook)]
    if normed:
        bwd.append((lambda n: n.endswith("attn.hook_z"), z_grad_hook))
    dz_kept = [None] * L

    def head_diffs():
        for l in range(L):  # the heads' sender differences (core.arch.head_contributions)
            s0 = graph.sender_base(l)
            res = head_contributions(model, l, z_clean[l], dz[l])
            diff[:, s0 : s0 + H] = res.reshape(b, H, p * d)
            dz_kept[l], dz[l], z_clean[l] = (dz[l] if normed else None), None, None

    def metric_of(resid, rows: int):
        if end_pos is not None:
            resid = resid[torch.arange(rows, device=dev), end_pos.to(dev).repeat(rows // b)][:, None]
        logits = apply_ln_final_and_unembed(model, resid)
        values = torch.cat([metric_fn(logits[k * b:(k + 1) * b]) for k in range(rows // b)])
        if values.shape != (rows,):
            raise ValueError(f"the metric must return one value per example, shape ({b},); got "
                             f"{tuple(metric_fn(logits[:b]).shape)}")
        return values

    with torch.no_grad(), model.hooks(fwd_hooks=store(+1.0)):
        model(corrupt, stop_at_layer=L)
    if m_ig == 1:
        with model.hooks(fwd_hooks=store(-1.0), bwd_hooks=bwd):
            values = metric_of(model(clean, stop_at_layer=L), b)
            head_diffs()
            values.sum().backward()
    else:
        with torch.no_grad(), model.hooks(fwd_hooks=store(-1.0, grad_run=False)):
            model(clean, stop_at_layer=L)
        head_diffs()
        alphas = torch.arange(1, m_ig + 1, device=dev, dtype=dtype).div_(m_ig).view(m_ig, 1, 1, 1)

        def interpolate(act, hook):  # row k * b + i: example i at alpha_k
            x = emb[+1.0][None] + alphas * (emb[-1.0] - emb[+1.0])[None]
            return x.reshape(m_ig * b, p, d).requires_grad_(True)

        with model.hooks(fwd_hooks=[("blocks.0.hook_resid_pre", interpolate), keep_hook], bwd_hooks=bwd):
            values = metric_of(model(clean.repeat(m_ig, 1), stop_at_layer=L), m_ig * b)
            values.sum().backward()
        values = values[-b:]  # alpha = 1: the clean run
        edges /= m_ig
        if normed:
            head_signed /= m_ig
    edges *= graph.edge_mask().to(dev)  # drop same-layer head -> q/k/v products computed in the blocks
    return edges, values.detach(), head_signed


# ----------------------------------------------------------------------------------- the API
def eap_scores(
    model,
    task: TaskData,
    metric: MetricArg = "answer_logprob",
    batch_size: int = 32,
    logits_at: str = "end",
    keep_edges: bool = True,
    progress: bool = True,
    ig_steps: int = 1,
) -> EAPScores:
    """Per-example EAP scores of every edge and component of ``model`` on ``task``.

    Args:
        model: a TransformerLens ``HookedTransformer`` (pre-norm; MHA; MLPs optional). Its settings
            (split q/k/v inputs, MLP-input hooks, ``requires_grad`` of the weights) are changed for
            the call and restored afterwards, also on error.
        task: a :class:`~tutorial_lib.tasks.base.TaskData`; its ``clean`` run is attributed, its
            ``corrupt`` run supplies the patched activations.
        metric: the quantity attributed, per example. ``"answer_logprob"`` (default: log p(answer) at
            ``end_pos``, Li & Subramani's metric), ``"metric"`` (the task's own), ``"logit_diff"``, or
            a callable ``f(logits, sub_task) -> Tensor[batch]`` where ``sub_task`` is the batch's
            :meth:`TaskData.subset`.
        batch_size: examples per pass. Results do not depend on it (up to float rounding).
        logits_at: ``"end"`` (default) applies the unembedding at each example's ``end_pos`` only and
            hands the metric logits of shape ``[batch, 1, d_vocab]`` with ``sub_task.end_pos`` set to 0
            -- right for every metric that reads logits through ``TaskData.final_logits``. ``"all"``
            computes logits at every position (use it for a metric that reads other positions).
        keep_edges: keep the ``[batch, n_senders, n_receivers]`` edge tensor (``False`` keeps node
            scores only, for big models or many examples).
        progress: show a tqdm progress bar over batches.
        ig_steps: ``m`` > 1 gives EAP-IG (Hanna, Pezzelle & Belinkov 2024): gradients averaged over ``m``
            points from the corrupted to the clean input (see :func:`eap_batch`), ``m`` times the rows per
            pass. 1 (default): plain EAP. The paper uses m = 5.

    Returns:
        :class:`EAPScores` (``.nodes`` is ``[n_examples, n_components]``; ``.top_k(0.1)`` and
        ``.circuits(0.1)`` give the per-example circuits).

    Example:
        >>> s = eap_scores(model, task, batch_size=16)       # doctest: +SKIP
        >>> s.top_k(0.10).float().mean(0)                    # how often each component is chosen  # doctest: +SKIP
    """
    if not isinstance(task, TaskData):
        raise ValueError(f"task must be a TaskData (clean/corrupt tokens, end_pos, answers), got {type(task).__name__}")
    if logits_at not in ("end", "all"):
        raise ValueError(f"logits_at must be 'end' or 'all', got {logits_at!r}")
    if not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
    graph = EAPGraph.from_model(model)
    fn = _metric_fn(task, metric, logits_at)
    n = len(task)
    edge_chunks, node_chunks, signed_chunks, embed_chunks, values = [], [], [], [], []
    starts = range(0, n, batch_size)
    with eap_settings(model):
        for start in tqdm(starts, desc="EAP", disable=not progress or len(starts) < 2):
            idx = torch.arange(start, min(start + batch_size, n), device="cpu")  # rows of the task (on the CPU)
            edges, vals, head_signed = eap_batch(
                model, graph, task.clean[idx], task.corrupt[idx],
                lambda logits, idx=idx: fn(logits, idx),
                end_pos=task.end_pos[idx] if logits_at == "end" else None, ig_steps=ig_steps,
            )
            node_chunks.append(edges.abs().sum(2)[:, 1:].cpu())
            embed_chunks.append(edges[:, 0].sum(1).cpu())
            signed = edges.sum(2)[:, 1:]
            if head_signed is not None:  # a norm on the summed output: heads scored at their own outputs
                signed = signed.clone()
                signed[:, graph.head_columns()] = head_signed
            signed_chunks.append(signed.cpu())
            values.append(vals.to(edges.dtype).cpu())
            if keep_edges:
                edge_chunks.append(edges.cpu())
    return EAPScores(
        nodes=torch.cat(node_chunks),
        components=graph.components,
        edges=torch.cat(edge_chunks) if keep_edges else None,
        graph=graph,
        metric=torch.cat(values),
        signed_nodes=torch.cat(signed_chunks),
        signed_embed=torch.cat(embed_chunks),
        meta={"task": task.name, "metric": metric if isinstance(metric, str) else getattr(metric, "__name__", "callable"),
              "batch_size": batch_size, "logits_at": logits_at, "ig_steps": ig_steps},
    )


def eap_for_tasks(model, tasks: dict, metric: MetricArg = "answer_logprob", batch_size: int = 32,
                  keep_edges: bool = True) -> dict:
    """:func:`eap_scores` for every task of ``{name: TaskData}``, with one progress bar over the tasks."""
    return {name: eap_scores(model, task, metric, batch_size, keep_edges=keep_edges, progress=False)
            for name, task in tqdm(tasks.items(), desc="EAP per task")}


def exact_node_effects(model, task: TaskData, metric: MetricArg = "answer_logprob",
                       components: Optional[list] = None) -> Float[Tensor, "batch n_components"]:
    """What EAP's signed node score estimates, computed exactly: ``metric(clean run with one component's
    output taken from the corrupted run) - metric(clean run)``, per example and component.

    Computed by the activation-patching engine (:func:`tutorial_lib.methods.patching.patch_each`): heads of a
    layer batched, only the layers after the patched one recomputed, logits only at ``task.end_pos``. On
    GPT-2 small that is still the equivalent of ~80 forward passes: use a small ``task.subset(...)``.
    """
    fn = _metric_fn(task, metric, "all")
    idx = torch.arange(len(task))
    components = list(components or EAPGraph.from_model(model).components)
    return patch_each(model, task.clean, task.corrupt, lambda logits: fn(logits, idx), components,
                      logit_positions=task.end_pos)
