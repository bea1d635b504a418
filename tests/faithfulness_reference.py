"""A slow, independent reference for edge patching: one hooked forward per circuit, a Python loop over edges.

At each receiver's input hook the input is rebuilt from scratch, edge by edge::

    input_r = (live input_r - Σ_s out_s(live))            # what no sender writes: biases
              + Σ_s [ out_s(live) if (s -> r) in C else out_s(corrupted) ]

with every sender's live output read from the same forward pass. Shared by the tests and
``benchmarks/faithfulness_curve.py``.
"""
import torch

from tutorial_lib.methods.attribution import EAPGraph


def sender_outputs_hooks(model, graph, store):
    """Hooks filling ``store[sender] = [batch, pos, d_model]`` as the forward pass computes them."""
    H = graph.n_heads

    def embed(act, hook):
        store["embed"] = act.clone()

    def z(act, hook):
        l = hook.layer()
        for h in range(H):
            store[f"a{l}.h{h}"] = act[:, :, h] @ model.blocks[l].attn.W_O[h]

    def mlp(act, hook):
        store[f"m{hook.layer()}"] = act.clone()

    hooks = [("blocks.0.hook_resid_pre", embed), (lambda n: n.endswith("attn.hook_z"), z)]
    if graph.has_mlp:
        hooks.append((lambda n: n.endswith("hook_mlp_out"), mlp))
    return hooks


@torch.no_grad()
def reference_patched_metric(model, task, circuit, metric=None):
    """Mean of ``metric(logits, task)`` (default: the task's metric) with the edges outside ``circuit``
    (``[n_senders, n_receivers]`` bool) carrying the corrupted run's sender values."""
    graph = EAPGraph.from_model(model)
    edge = graph.edge_mask()
    cfg = model.cfg
    saved = (cfg.use_split_qkv_input, cfg.use_hook_mlp_in)
    cfg.use_split_qkv_input = True
    if graph.has_mlp:
        model.set_use_hook_mlp_in(True)
    try:
        corrupt = {}
        with model.hooks(fwd_hooks=sender_outputs_hooks(model, graph, corrupt)):
            model(task.corrupt)
        live = {}

        def rebuilt(act, receiver):
            j = graph.receivers.index(receiver)
            senders = [s for i, s in enumerate(graph.senders) if edge[i, j]]
            x = act - sum(live[s] for s in senders)
            for s in senders:  # one edge at a time
                x = x + (live[s] if circuit[graph.senders.index(s), j] else corrupt[s])
            return x

        def qkv(act, hook):
            l, letter = hook.layer(), hook.name[-7]
            out = act.clone()
            for h in range(graph.n_heads):
                out[:, :, h] = rebuilt(act[:, :, h], f"a{l}.h{h}.{letter}")
            return out

        def mlp_in(act, hook):
            return rebuilt(act, f"m{hook.layer()}")

        def final(act, hook):
            return rebuilt(act, "logits")

        hooks = sender_outputs_hooks(model, graph, live) + [
            (lambda n: n.endswith(("hook_q_input", "hook_k_input", "hook_v_input")), qkv),
            (f"blocks.{graph.n_layers - 1}.hook_resid_post", final)]
        if graph.has_mlp:
            hooks.append((lambda n: n.endswith("hook_mlp_in"), mlp_in))
        with model.hooks(fwd_hooks=hooks):
            logits = model(task.clean)
    finally:
        cfg.use_split_qkv_input = saved[0]
        cfg.use_hook_mlp_in = saved[1]
    return float((metric or task.metric)(logits).mean())
