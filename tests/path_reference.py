"""The slow, independent path-patching reference that the fast engine is tested against: one hooked
forward per sender (or group of senders patched together), two with ``receivers_mode="independent"``.

It uses TransformerLens' own machinery (split q/k/v inputs, ``hook_result``, ``hook_mlp_in``) and
follows the documented semantics literally:

* every non-receiver head and MLP up to the last receiver keeps its baseline output (hooks replace it);
* every head input of a receiving layer that is not a receiver keeps its baseline value;
* ``"joint"``: each receiver input (the live residual stream, which holds the changes of earlier
  receivers) gets ``+ Σ Δ_sender`` over the senders before it, at the chosen positions;
* ``"independent"`` (Wang et al.'s two runs): a first forward on the baseline input freezes *every*
  head and MLP at its baseline output except the senders, which take their new output at the sender
  positions, and records the residual stream each receiver reads; the second forward (as above)
  replaces each receiver input by that recording, at the receiver positions, so no receiver sees
  another receiver's change (the logits receiver adds the recorded change to the live stream);
* everything after the last receiver runs normally;
* under the OLMo family's shared QK-norm, a q or k receiver's layer has no frozen head: each moves as the norm
  makes it (its own inputs at baseline), at the receiver's output positions.

The toy model and data it is run on are the ``path_model`` and ``path_data`` fixtures of ``conftest.py``.
"""
import torch

from tutorial_lib.core.components import parse


def _mask(spec, B, P):
    m = torch.zeros(B, P)
    if spec is None:
        return m + 1
    m[torch.arange(B), spec] = 1.0
    return m


_RUNS = {}


def reference_path_patch(model, clean, corrupt, senders, receivers, metric, sender_pos=None,
                         receiver_pos=None, direction="noising", head_out_pos=None, receivers_mode="joint"):
    """One full hooked forward for the given senders (patched together), preceded by the sender run (run 1);
    the two plain runs are memoised. Any family: under grouped-query attention the split inputs are ungrouped
    (one key and value input per query head); with a norm on the attention's summed output (Gemma 2, OLMo-2)
    the model recomputes it on the frozen and patched heads' results, and a layer's sender heads change the
    residual stream by run 1's change of its ``hook_attn_out``; with parallel attention + MLP (Pythia) an MLP
    reads the layer's input."""
    assert receivers_mode in ("joint", "independent"), receivers_mode
    cfg = model.cfg
    saved_ungroup = cfg.ungroup_grouped_query_attention
    cfg.ungroup_grouped_query_attention = cfg.n_key_value_heads is not None
    model.set_use_split_qkv_input(True)
    model.set_use_attn_result(True)
    if not cfg.attn_only:
        model.set_use_hook_mlp_in(True)
    try:
        base_t, new_t = (clean, corrupt) if direction == "noising" else (corrupt, clean)
        key = (id(model), direction, clean.data_ptr(), corrupt.data_ptr(), cfg.ungroup_grouped_query_attention)
        if key not in _RUNS:
            with torch.no_grad():
                _RUNS.clear()
                # holding the model and the tokens keeps their ids and addresses from being reused
                _RUNS[key] = (model, clean, corrupt, model.run_with_cache(base_t)[1], model.run_with_cache(new_t)[1])
        *_, bc, nc = _RUNS[key]
        B, P = base_t.shape
        parallel = bool(cfg.parallel_attn_mlp)
        smask = _mask(sender_pos, B, P)[..., None]
        rmask = _mask(receiver_pos, B, P)[..., None]
        senders = [parse(s) for s in senders]
        recv = []
        for r in receivers:
            c = parse(r)
            recv += [parse(f"{c}.{x}") for x in "qkv"] if c.kind == "head" and c.input is None else [c]

        def order(c):  # where a sender writes
            if c.kind in ("embed", "logits"):
                return -1.0 if c.kind == "embed" else float("inf")
            return c.layer + (0.0 if c.kind == "head" else 0.5)

        def site(r):  # where a receiver reads
            return float(r.layer) if (r.kind == "mlp" and parallel) else order(r)

        last = max(site(r) for r in recv)
        recv_heads = {(r.layer, r.head) for r in recv if r.kind == "head"}
        L = cfg.n_layers

        def read_at(r):  # the hook whose activation a receiver reads
            if r.kind == "head":
                return f"blocks.{r.layer}.hook_resid_pre"
            return f"blocks.{r.layer}.hook_mlp_in" if r.kind == "mlp" else f"blocks.{L - 1}.hook_resid_post"

        # run 1: only the senders change, at the sender positions; every other head and MLP keeps its baseline
        # output (the model recomputes any output norm); record what each receiver reads and each layer's
        # attention output
        recorded = {}
        by_s = {(s.kind, s.layer, s.head) for s in senders}
        run1 = []
        for l in range(L):
            def heads1(act, hook, l=l):
                base_act = bc[f"blocks.{l}.attn.hook_result"]
                out = base_act.clone()
                for h in range(cfg.n_heads):
                    if ("head", l, h) in by_s:
                        out[:, :, h] = base_act[:, :, h] + smask * (nc[hook.name][:, :, h] - base_act[:, :, h])
                return out
            run1.append((f"blocks.{l}.attn.hook_result", heads1))
            if not cfg.attn_only:
                def mlp1(act, hook, send=("mlp", l, None) in by_s):
                    b = bc[hook.name]
                    return b + smask * (nc[hook.name] - b) if send else b
                run1.append((f"blocks.{l}.hook_mlp_out", mlp1))
        embed_hooks = ["blocks.0.hook_resid_pre"]
        if any(s.kind == "embed" for s in senders):
            run1.append((embed_hooks[0], lambda act, hook: bc[hook.name] + smask * (nc[hook.name] - bc[hook.name])))
        wanted = {read_at(r) for r in recv} | {f"blocks.{l}.hook_attn_out" for l in range(L)}
        for name in wanted:
            run1.append((name, lambda act, hook: recorded.__setitem__(hook.name, act.clone())))
        with torch.no_grad(), model.hooks(fwd_hooks=run1):
            model(base_t, return_type=None)

        def delta(s):  # what sender s (with the other senders of its layer) writes into the residual stream
            if s.kind == "embed":
                return smask * (nc[embed_hooks[0]] - bc[embed_hooks[0]])
            if s.kind == "mlp":
                return nc[f"blocks.{s.layer}.hook_mlp_out"] - bc[f"blocks.{s.layer}.hook_mlp_out"]
            name = f"blocks.{s.layer}.hook_attn_out"
            return recorded[name] - bc[name]

        def into(r):
            tot = torch.zeros_like(bc["blocks.0.hook_resid_pre"])
            head_layers = set()
            for s in senders:
                if order(s) < site(r):
                    if s.kind == "head":
                        if s.layer in head_layers:
                            continue  # the layer's sender heads are counted once, together
                        head_layers.add(s.layer)
                        tot = tot + delta(s)
                    else:
                        tot = tot + delta(s) * (smask if s.kind == "mlp" else 1.0)
            return tot * rmask

        def recorded_change(r):  # run 1's change of what r reads, kept at the receiver positions
            return (recorded[read_at(r)] - bc[read_at(r)]) * rmask

        hooks = []
        out_mask = _mask(head_out_pos, B, P)[..., None]
        # the OLMo family's QK-norm spans all heads: a q/k receiver moves every head of its layer (the course's one
        # definition, core.arch.shares_qk_norm), so none of them is frozen there
        shared = (getattr(cfg, "original_architecture", None) in ("OlmoeForCausalLM", "Olmo2ForCausalLM", "Olmo3ForCausalLM")
                  and not getattr(cfg, "use_qk_norm", False))
        qk_layers = {r.layer for r in recv if r.kind == "head" and r.input in ("q", "k")} if shared else set()
        for l in range(L):
            if l <= last:
                frozen = [h for h in range(cfg.n_heads) if (l, h) not in recv_heads and l not in qk_layers]
                receiving = [h for h in range(cfg.n_heads) if (l, h) in recv_heads or l in qk_layers]

                def freeze_heads(act, hook, l=l, frozen=frozen, receiving=receiving):
                    base_act = bc[f"blocks.{l}.attn.hook_result"]
                    act[:, :, frozen] = base_act[:, :, frozen]
                    for h in receiving:  # a receiving head changes only where it is read
                        act[:, :, h] = out_mask * act[:, :, h] + (1 - out_mask) * base_act[:, :, h]
                    return act
                hooks.append((f"blocks.{l}.attn.hook_result", freeze_heads))
            mlp_site = float(l) if parallel else l + 0.5
            if not cfg.attn_only and mlp_site <= last and parse(f"m{l}") not in recv:
                hooks.append((f"blocks.{l}.hook_mlp_out", lambda act, hook, l=l: bc[f"blocks.{l}.hook_mlp_out"]))
        # every input of a receiving layer that is not a receiver keeps its baseline value (where a QK-norm spans
        # all heads, as in the OLMo family, the other heads' inputs reach a receiver's keys through it)
        for l, h in {(l, h) for l, _ in recv_heads for h in range(cfg.n_heads)}:
            for x in "qkv":
                name = f"blocks.{l}.hook_{x}_input"
                r = parse(f"a{l}.h{h}.{x}")
                if r in recv and receivers_mode == "independent":
                    def add(act, hook, h=h, r=r):  # baseline input + run 1's change: no other receiver's
                        act[:, :, h] = bc[hook.name][:, :, h] + recorded_change(r)
                        return act
                elif r in recv:
                    d = into(r)

                    def add(act, hook, h=h, d=d):
                        act[:, :, h] = act[:, :, h] + d
                        return act
                else:
                    def add(act, hook, h=h, name=name):  # a receiving head's other inputs stay at baseline
                        act[:, :, h] = bc[name][:, :, h]
                        return act
                hooks.append((name, add))
        for r in recv:
            if r.kind == "mlp" and receivers_mode == "independent":
                hooks.append((f"blocks.{r.layer}.hook_mlp_in",
                              lambda act, hook, r=r: bc[hook.name] + recorded_change(r)))
            elif r.kind == "mlp":
                hooks.append((f"blocks.{r.layer}.hook_mlp_in", lambda act, hook, d=into(r): act + d))
            if r.kind == "logits":
                d = recorded_change(r) if receivers_mode == "independent" else into(r)
                name = f"blocks.{L - 1}.hook_resid_post"
                hooks.append((name, lambda act, hook, d=d: act + d))
        with torch.no_grad(), model.hooks(fwd_hooks=hooks):
            return metric(model(base_t))
    finally:
        model.set_use_split_qkv_input(False)
        model.set_use_attn_result(False)
        if not cfg.attn_only:
            model.set_use_hook_mlp_in(False)
        cfg.ungroup_grouped_query_attention = saved_ungroup


def all_senders(model):
    out = ["embed"]
    for l in range(model.cfg.n_layers):
        out += [f"a{l}.h{h}" for h in range(model.cfg.n_heads)]
        if not model.cfg.attn_only:
            out.append(f"m{l}")
    return out
