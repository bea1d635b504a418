"""The slow, independent path-patching reference that the fast engine is tested against: one hooked
forward per sender (or group of senders patched together).

It uses TransformerLens' own machinery (split q/k/v inputs, ``hook_result``, ``hook_mlp_in``) and
follows the documented semantics literally:

* every non-receiver head and MLP up to the last receiver keeps its baseline output (hooks replace it);
* the receiving head's non-receiver inputs keep their baseline value;
* each receiver input gets ``+ Σ Δ_sender`` over the senders before it, at the chosen positions;
* everything after the last receiver runs normally.

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
                         receiver_pos=None, direction="noising", head_out_pos=None):
    """One full hooked forward for the given senders (patched together); the two plain runs are memoised."""
    model.set_use_split_qkv_input(True)
    model.set_use_attn_result(True)
    if not model.cfg.attn_only:
        model.set_use_hook_mlp_in(True)
    try:
        base_t, new_t = (clean, corrupt) if direction == "noising" else (corrupt, clean)
        key = (id(model), direction, clean.data_ptr(), corrupt.data_ptr())
        if key not in _RUNS:
            with torch.no_grad():
                _RUNS.clear()
                # holding the model and the tokens keeps their ids and addresses from being reused
                _RUNS[key] = (model, clean, corrupt, model.run_with_cache(base_t)[1], model.run_with_cache(new_t)[1])
        *_, bc, nc = _RUNS[key]
        B, P = base_t.shape
        smask = _mask(sender_pos, B, P)[..., None]
        rmask = _mask(receiver_pos, B, P)[..., None]
        senders = [parse(s) for s in senders]
        recv = []
        for r in receivers:
            c = parse(r)
            recv += [parse(f"{c}.{x}") for x in "qkv"] if c.kind == "head" and c.input is None else [c]

        def delta(s):
            if s.kind == "embed":
                names = [n for n in ("hook_embed", "hook_pos_embed") if n in bc]  # rotary: no hook_pos_embed
                return sum(nc[n] for n in names) - sum(bc[n] for n in names)
            if s.kind == "mlp":
                return nc[f"blocks.{s.layer}.hook_mlp_out"] - bc[f"blocks.{s.layer}.hook_mlp_out"]
            name = f"blocks.{s.layer}.attn.hook_result"
            return nc[name][:, :, s.head] - bc[name][:, :, s.head]

        def order(c):
            if c.kind in ("embed", "logits"):
                return -1.0 if c.kind == "embed" else float("inf")
            return c.layer + (0.0 if c.kind == "head" else 0.5)

        def into(r):
            tot = torch.zeros_like(bc["blocks.0.hook_resid_pre"])
            for s in senders:
                if order(s) < order(r):
                    tot = tot + delta(s)
            return tot * smask * rmask

        last = max(order(r) for r in recv)
        recv_heads = {(r.layer, r.head) for r in recv if r.kind == "head"}
        hooks = []
        out_mask = _mask(head_out_pos, B, P)[..., None]
        for l in range(model.cfg.n_layers):
            if l <= last:
                frozen = [h for h in range(model.cfg.n_heads) if (l, h) not in recv_heads]
                receiving = [h for h in range(model.cfg.n_heads) if (l, h) in recv_heads]

                def freeze_heads(act, hook, l=l, frozen=frozen, receiving=receiving):
                    base_act = bc[f"blocks.{l}.attn.hook_result"]
                    act[:, :, frozen] = base_act[:, :, frozen]
                    for h in receiving:  # a receiving head changes only where it is read
                        act[:, :, h] = out_mask * act[:, :, h] + (1 - out_mask) * base_act[:, :, h]
                    return act
                hooks.append((f"blocks.{l}.attn.hook_result", freeze_heads))
            if not model.cfg.attn_only and l + 0.5 <= last and parse(f"m{l}") not in recv:
                hooks.append((f"blocks.{l}.hook_mlp_out", lambda act, hook, l=l: bc[f"blocks.{l}.hook_mlp_out"]))
        for l, h in recv_heads:
            for x in "qkv":
                name = f"blocks.{l}.hook_{x}_input"
                if parse(f"a{l}.h{h}.{x}") in recv:
                    d = into(parse(f"a{l}.h{h}.{x}"))

                    def add(act, hook, h=h, d=d):
                        act[:, :, h] = act[:, :, h] + d
                        return act
                else:
                    def add(act, hook, h=h, name=name):  # a receiving head's other inputs stay at baseline
                        act[:, :, h] = bc[name][:, :, h]
                        return act
                hooks.append((name, add))
        for r in recv:
            if r.kind == "mlp":
                hooks.append((f"blocks.{r.layer}.hook_mlp_in", lambda act, hook, d=into(r): act + d))
            if r.kind == "logits":
                name = f"blocks.{model.cfg.n_layers - 1}.hook_resid_post"
                hooks.append((name, lambda act, hook, d=into(r): act + d))
        with torch.no_grad(), model.hooks(fwd_hooks=hooks):
            return metric(model(base_t))
    finally:
        model.set_use_split_qkv_input(False)
        model.set_use_attn_result(False)
        if not model.cfg.attn_only:
            model.set_use_hook_mlp_in(False)


def all_senders(model):
    out = ["embed"]
    for l in range(model.cfg.n_layers):
        out += [f"a{l}.h{h}" for h in range(model.cfg.n_heads)]
        if not model.cfg.attn_only:
            out.append(f"m{l}")
    return out
