"""A slow, independent reference for edge patching: one hooked forward per circuit, a Python loop over edges.

At each receiver's input hook the input is rebuilt from scratch, edge by edge::

    input_r = (live input_r - Σ_s out_s(live))            # what no sender writes: biases
              + Σ_s [ out_s(live) if (s -> r) in C else out_s(corrupted) ]

with every sender's live output read from the same forward pass. Where a norm sits on the attention's summed
output (Gemma 2, OLMo-2), a layer's heads enter through it: their live term is ``N(Σ_h out_h(live) + b_O)`` and the
rebuilt one ``N(Σ_h [live or corrupted out_h] + b_O)``, with the model's own norm module. Under grouped-query
attention the split inputs are ungrouped (one key and value input per query head). Shared by the tests and
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
def reference_patched_metric(model, task, circuit, metric=None, ablation="corrupt", sources=None):
    """Mean of ``metric(logits, task)`` (default: the task's metric) with the edges outside ``circuit``
    (``[n_senders, n_receivers]`` bool) carrying the corrupted run's sender values (``ablation="corrupt"``), zeros
    (``"zero"``), the clean run's mean over the examples at each position (``"mean"``; prompts of one length), or
    the clean outputs of example ``sources[i]`` (``"resample"``)."""
    graph = EAPGraph.from_model(model)
    edge = graph.edge_mask()
    cfg = model.cfg
    saved = (cfg.use_split_qkv_input, cfg.use_hook_mlp_in, cfg.ungroup_grouped_query_attention)
    cfg.use_split_qkv_input = True
    cfg.ungroup_grouped_query_attention = cfg.n_key_value_heads is not None
    post = cfg.original_architecture == "Olmo2ForCausalLM"
    out_norm = (lambda l: model.blocks[l].ln1_post) if cfg.use_normalization_before_and_after else \
        (lambda l: model.blocks[l].ln1) if post else None
    if graph.has_mlp:
        model.set_use_hook_mlp_in(True)
    try:
        corrupt = {}
        with model.hooks(fwd_hooks=sender_outputs_hooks(model, graph, corrupt)):
            model(task.corrupt if ablation == "corrupt" else task.clean)
        if ablation == "zero":
            corrupt = {k: torch.zeros_like(v) for k, v in corrupt.items()}
        elif ablation == "mean":
            corrupt = {k: v.mean(0, keepdim=True).expand_as(v) for k, v in corrupt.items()}
        elif ablation == "resample":
            corrupt = {k: v[sources] for k, v in corrupt.items()}
        elif ablation != "corrupt":
            raise ValueError(ablation)
        live = {}

        def rebuilt(act, receiver):
            j = graph.receivers.index(receiver)
            senders = [s for i, s in enumerate(graph.senders) if edge[i, j]]
            chosen = {s: live[s] if circuit[graph.senders.index(s), j] else corrupt[s] for s in senders}  # per edge
            if out_norm is None:
                return act - sum(live[s] for s in senders) + sum(chosen.values())
            x = act
            for s in senders:
                if not s.startswith("a"):
                    x = x - live[s] + chosen[s]
            for l in sorted({int(s[1:].split(".")[0]) for s in senders if s.startswith("a")}):
                heads = [f"a{l}.h{h}" for h in range(graph.n_heads)]
                b_O = model.blocks[l].attn.b_O
                x = x - out_norm(l)(sum(live[h] for h in heads) + b_O) + out_norm(l)(sum(chosen[h] for h in heads) + b_O)
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
        cfg.use_split_qkv_input, cfg.use_hook_mlp_in, cfg.ungroup_grouped_query_attention = saved
    return float((metric or task.metric)(logits).mean())
