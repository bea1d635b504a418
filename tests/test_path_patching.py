"""Path patching: the fast batched engine against a slow, independent reference (one hooked forward per sender).

The reference below uses TransformerLens' own machinery (split q/k/v inputs, ``hook_result``,
``hook_mlp_in``) and follows the documented semantics literally:

* every non-receiver head and MLP up to the last receiver keeps its baseline output (hooks replace it);
* the receiving head's non-receiver inputs keep their baseline value;
* each receiver input gets ``+ Σ Δ_sender`` over the senders before it, at the chosen positions;
* everything after the last receiver runs normally.
"""
import warnings

import numpy as np
import pytest
import torch

warnings.filterwarnings("ignore", category=DeprecationWarning)
torch.set_num_threads(1)

from transformer_lens import HookedTransformer, HookedTransformerConfig  # noqa: E402

from tutorial_lib.components import parse  # noqa: E402
from tutorial_lib.hooks import assert_no_hooks  # noqa: E402
from tutorial_lib.path_patching import (  # noqa: E402
    path_patch,
    path_patch_sweep,
    top_senders,
)

N_LAYERS, N_HEADS, BATCH, POS, VOCAB = 3, 4, 6, 9, 61


def make_model(seed=0, normalization="LN", attn_only=False, scale=2.0):
    cfg = HookedTransformerConfig(n_layers=N_LAYERS, d_model=48, n_heads=N_HEADS, d_head=12, d_mlp=96,
                                  d_vocab=VOCAB, n_ctx=16, act_fn="gelu_new", normalization_type=normalization,
                                  attn_only=attn_only, seed=seed, device="cpu")
    model = HookedTransformer(cfg)
    with torch.no_grad():  # larger weights than the default init, so effects are O(1), not O(1e-4)
        for p in model.parameters():
            p.mul_(scale)
    model.eval()
    return model


@pytest.fixture(scope="module")
def model():
    return make_model()


@pytest.fixture(scope="module")
def data():
    g = torch.Generator().manual_seed(0)
    clean = torch.randint(0, VOCAB, (BATCH, POS), generator=g)
    corrupt = clean.clone()
    corrupt[:, 2] = torch.randint(0, VOCAB, (BATCH,), generator=g)
    corrupt[:, 5] = torch.randint(0, VOCAB, (BATCH,), generator=g)
    end = torch.tensor([8, 8, 7, 8, 6, 8])  # "END" differs per example, as with right padding
    yy = torch.full((BATCH,), 5)
    return clean, corrupt, end, yy


def end_metric(end):
    def metric(logits):
        final = logits[torch.arange(logits.shape[0]), end]
        return final[:, 3] - final[:, 7]
    return metric


def all_positions_metric(logits):  # reads every position: exercises the full-logits path
    return logits.log_softmax(-1)[..., 5].mean(-1)


# ----------------------------------------------------------------------------------------- reference
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
                # holding the model keeps its id from being reused by a later model
                _RUNS[key] = (model, model.run_with_cache(base_t)[1], model.run_with_cache(new_t)[1])
        _, bc, nc = _RUNS[key]
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
                return (nc["hook_embed"] + nc["hook_pos_embed"]) - (bc["hook_embed"] + bc["hook_pos_embed"])
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


def check_sweep(model, data, receivers, sender_pos_kind, metric_kind, direction="noising", receiver_pos=None,
                head_out=None):
    clean, corrupt, end, yy = data
    head_out = {"end": end, None: None}[head_out]
    sp = {"all": None, "end": end, "yy": yy}[sender_pos_kind]
    metric = end_metric(end) if metric_kind == "end" else all_positions_metric
    lp = end if metric_kind == "end" else None
    res = path_patch_sweep(model, clean, corrupt, receivers, metric, sender_positions=sp,
                           receiver_positions=receiver_pos, direction=direction, logit_positions=lp,
                           chunk_size=5, progress=False, head_output_positions=head_out)
    assert_no_hooks(model)
    with torch.no_grad():
        base = metric(model(clean if direction == "noising" else corrupt))
    biggest = worst = 0.0
    for s in all_senders(model):
        ref = reference_path_patch(model, clean, corrupt, [s], receivers if isinstance(receivers, list) else [receivers],
                                   metric, sp, receiver_pos, direction, head_out)
        fast = res.per_example[s]
        assert torch.allclose(fast, ref, atol=1e-4, rtol=0), (receivers, s, (fast - ref).abs().max())
        assert abs(res.effects[s] - float((ref - base).mean())) < 1e-4
        biggest = max(biggest, float((ref - base).abs().max()))
        worst = max(worst, float((fast - ref).abs().max()))
    assert biggest > 0.05, f"effects too small ({biggest}) for the comparison to mean anything"
    print(f"{receivers}: largest effect {biggest:.3g}, largest fast-vs-reference difference {worst:.2g}")
    return res


# ----------------------------------------------------------------------------------------- tests
@pytest.mark.parametrize("receivers,spos,metric_kind", [
    ("logits", "all", "end"),
    ("logits", "end", "end"),
    ("logits", "all", "all"),
    ("m2", "end", "end"),
    ("m1", "all", "all"),
    ("a2.h1.q", "end", "end"),
    ("a2.h1.k", "yy", "end"),
    ("a1.h3.v", "yy", "all"),
    ("a2.h2", "all", "end"),  # bare head: q, k and v together
])
def test_sweep_matches_reference(model, data, receivers, spos, metric_kind):
    check_sweep(model, data, receivers, spos, metric_kind)


def test_several_receivers_at_different_layers(model, data):
    check_sweep(model, data, ["a1.h0.q", "a1.h2.v", "m1", "a2.h3.k"], "yy", "end")


def test_head_receivers_read_at_end_only(model, data):
    """The paper's step (c): senders at YY into the keys/values of heads that are read at END."""
    res = check_sweep(model, data, ["a1.h1.k", "a1.h1.v", "a2.h0.v"], "yy", "end", head_out="end")
    assert res.heads[0].abs().max() > 0.01
    clean, corrupt, end, yy = data
    q_only = path_patch_sweep(model, clean, corrupt, ["a2.h0.q"], all_positions_metric, sender_positions=yy,
                              head_output_positions=end, progress=False)
    assert q_only.heads.abs().max() == 0 and q_only.mlps.abs().max() == 0  # no direct path YY -> query at END


def test_denoising_and_receiver_positions(model, data):
    clean, corrupt, end, yy = data
    check_sweep(model, data, "m1", "all", "end", direction="denoising", receiver_pos=end)


def test_rmsnorm_and_attention_only_models(data):
    check_sweep(make_model(seed=1, normalization="RMS"), data, ["m1", "logits"], "all", "end")
    check_sweep(make_model(seed=2, attn_only=True), data, "a2.h0.k", "yy", "end")


def test_multiple_senders_patch_together(model, data):
    clean, corrupt, end, yy = data
    metric = end_metric(end)
    senders = ["a0.h1", "m0", "a1.h2"]
    out = path_patch(model, clean, corrupt, senders, "m2", metric, sender_positions=end)
    ref = reference_path_patch(model, clean, corrupt, senders, ["m2"], metric, end)
    assert torch.allclose(out["patched"], ref, atol=1e-4)
    assert torch.allclose(out["baseline"], metric(model(clean)), atol=1e-5)
    assert torch.allclose(out["new"], metric(model(corrupt)), atol=1e-5)


def test_no_path_gives_exactly_zero(model, data):
    clean, corrupt, end, yy = data
    res = path_patch_sweep(model, clean, corrupt, "a1.h0.q", end_metric(end), progress=False)
    assert res.heads[1:].abs().max() == 0  # heads in layer >= 1 cannot reach a layer-1 query
    assert res.mlps[1:].abs().max() == 0
    assert res.heads[0].abs().max() > 0.01
    # senders at a position the receiver does not read: no change either
    res = path_patch_sweep(model, clean, corrupt, "logits", end_metric(end), sender_positions=yy,
                           logit_positions=end, progress=False)
    assert res.heads.abs().max() == 0 and res.mlps.abs().max() == 0


def test_metric_reading_outside_logit_positions_raises(model, data):
    clean, corrupt, end, yy = data
    with pytest.raises(ValueError, match="logit_positions"):
        path_patch_sweep(model, clean, corrupt, "logits", all_positions_metric, logit_positions=end,
                         progress=False)


def test_bad_inputs_raise_clear_errors(model, data):
    clean, corrupt, end, yy = data
    metric = end_metric(end)
    with pytest.raises(ValueError, match="differ in shape"):
        path_patch(model, clean, corrupt[:, :-1], ["a0.h0"], "logits", metric)
    with pytest.raises(ValueError, match="receiver"):
        path_patch(model, clean, corrupt, ["a0.h0"], "embed", metric)
    with pytest.raises(ValueError, match="does not exist"):
        path_patch(model, clean, corrupt, ["a7.h0"], "logits", metric)
    with pytest.raises(ValueError, match="direction"):
        path_patch(model, clean, corrupt, ["a0.h0"], "logits", metric, direction="sideways")
    with pytest.raises(ValueError, match="sender_positions"):
        path_patch(model, clean, corrupt, ["a0.h0"], "logits", metric, sender_positions=torch.tensor([1, 2]))
    with pytest.raises(ValueError, match="metric must return"):
        path_patch(model, clean, corrupt, ["a0.h0"], "logits", lambda l: l.sum())
    assert_no_hooks(model)


def test_per_sender_position_dict_and_top_senders(model, data):
    clean, corrupt, end, yy = data
    metric = end_metric(end)
    spos = {"a0.h1": yy, "m0": yy}  # others: every position
    res = path_patch_sweep(model, clean, corrupt, "a2.h1.v", metric, senders=["a0.h1", "m0", "a1.h2"],
                           sender_positions=spos, logit_positions=end, progress=False)
    for s in ["a0.h1", "m0"]:
        ref = reference_path_patch(model, clean, corrupt, [s], ["a2.h1.v"], metric, yy)
        assert torch.allclose(res.per_example[s], ref, atol=1e-4)
    ref = reference_path_patch(model, clean, corrupt, ["a1.h2"], ["a2.h1.v"], metric, None)
    assert torch.allclose(res.per_example["a1.h2"], ref, atol=1e-4)
    eff = res.effects
    ranked = top_senders(res)
    assert [abs(eff[n]) for n in ranked] == sorted([abs(v) for v in eff.values()], reverse=True)
    assert top_senders(res, k=1) == ranked[:1]
    neg = top_senders(res, sign="negative")
    assert all(eff[n] < 0 for n in neg) and len(neg) == sum(v < 0 for v in eff.values())
    thr = sorted(abs(v) for v in eff.values())[1]
    assert set(top_senders(res, threshold=thr)) == {n for n, v in eff.items() if abs(v) >= thr}


def test_plot_and_normalized(model, data):
    clean, corrupt, end, yy = data
    res = path_patch_sweep(model, clean, corrupt, "logits", end_metric(end), logit_positions=end,
                           progress=False, metric_name="logit difference")
    fig = res.plot()
    assert fig.data[0].type == "heatmap" and fig.data[1].type == "bar"
    assert list(fig.data[1].y) == ["embed"] + [f"m{l}" for l in range(N_LAYERS)]
    assert "logit difference" in fig.layout.xaxis2.title.text
    assert isinstance(fig.data[1].marker.color, str)  # plain bars: the x axis gives the value
    lim = max(abs(v) for v in res.effects.values())
    assert fig.data[0].zmax == pytest.approx(lim) and fig.data[0].zmin == pytest.approx(-lim)
    assert list(fig.layout.xaxis2.range) == pytest.approx([-1.05 * lim, 1.05 * lim])  # the heatmap's range
    # into m1: only embed, m0 and the heads of layers 0-1 can send; later senders are left out, not drawn as 0
    into = path_patch_sweep(model, clean, corrupt, "m1", end_metric(end), sender_positions=end, logit_positions=end,
                            progress=False)
    f = into.plot()
    assert list(f.data[1].y) == ["embed", "m0"]
    z = np.asarray(f.data[0].z, dtype=float)
    assert np.isnan(z[2:]).all() and not np.isnan(z[:2]).any()
    assert into.reaches("a1.h3") and not into.reaches("m1") and not into.reaches("a2.h0")
    lim = np.nanmax(np.abs(np.concatenate([z.ravel(), [into.embed, into.effects["m0"]]])))
    assert list(f.layout.xaxis2.range) == pytest.approx([-1.05 * lim, 1.05 * lim])
    # into a layer-0 head's keys: only the embedding can send, so the figure is its bar alone
    k0 = path_patch_sweep(model, clean, corrupt, "a0.h1.k", end_metric(end), logit_positions=end, progress=False)
    g = k0.plot()
    assert [t.type for t in g.data] == ["bar"] and list(g.data[0].y) == ["embed"]
    n = res.normalized()
    scale = res.new - res.baseline
    assert torch.allclose(n.heads, res.heads / scale, equal_nan=True)
    assert abs(n.effects["m0"] - res.effects["m0"] / scale) < 1e-6


# ----------------------------------------------------------------------------------------- discovery
def test_discover_step_uses_task_positions(model, data):
    from tutorial_lib.path_patching import discover_step, head_inputs
    from tutorial_lib.tasks.base import TaskData

    clean, corrupt, end, yy = data
    task = TaskData("toy", [""] * BATCH, [""] * BATCH, clean, corrupt, end, torch.full((BATCH,), 3),
                    torch.full((BATCH, 1), 7), positions={"YY": yy})
    metric = task.metric
    a = discover_step(model, task, "logits", "END", progress=False)
    b = path_patch_sweep(model, clean, corrupt, "logits", metric, sender_positions=end, progress=False)
    assert torch.allclose(a.heads, b.heads, atol=1e-5) and torch.allclose(a.mlps, b.mlps, atol=1e-5)
    assert a.positions == "END"
    recv = head_inputs(["a2.h1", "a2.h3"], "kv")
    assert recv == ["a2.h1.k", "a2.h1.v", "a2.h3.k", "a2.h3.v"]
    c = discover_step(model, task, recv, "YY", progress=False)  # heads read at END by default
    for s in ["a0.h2", "m1"]:
        ref = reference_path_patch(model, clean, corrupt, [s], recv, metric, yy, head_out_pos=end)
        assert torch.allclose(c.per_example[s], ref, atol=1e-4)
    with pytest.raises(ValueError, match="unknown position"):
        discover_step(model, task, "logits", "XX", progress=False)
    with pytest.raises(ValueError, match="inputs"):
        head_inputs(["a0.h0"], "qz")


def test_paper_circuit_and_greater_than_task_end_to_end():
    """The real greater-than task (zoo tokenizer) on a random model: discovery, then circuit tests."""
    from tutorial_lib.circuits import Circuit
    from tutorial_lib.patching import circuit_sufficiency
    from tutorial_lib.path_patching import PAPER_GREATER_THAN, discover_step, paper_greater_than_circuit
    from tutorial_lib.tasks.greater_than import make_greater_than

    circ = paper_greater_than_circuit()
    assert len(circ) == 19 and circ.meta["positions"]["m10"] == "END" and circ.meta["positions"]["a0.h5"] == "YY"
    assert set(circ.nodes) == set(PAPER_GREATER_THAN["END"]) | set(PAPER_GREATER_THAN["YY"])
    task = make_greater_than("zoo", 12, seed=0)
    vocab = int(max(task.clean.max(), task.corrupt.max(), task.year_ids.max())) + 1
    cfg = HookedTransformerConfig(n_layers=2, d_model=32, n_heads=4, d_head=8, d_mlp=64, d_vocab=vocab,
                                  n_ctx=32, act_fn="gelu_new", normalization_type="LN", seed=0, device="cpu")
    gt_model = HookedTransformer(cfg).eval()
    with torch.no_grad():
        for p in gt_model.parameters():
            p.mul_(4.0)
    step = discover_step(gt_model, task, "m1", "END", progress=False)
    picked = top_senders(step, k=3)
    assert len(picked) == 3 and step.metric_name == "probability difference"
    ref = reference_path_patch(gt_model, task.clean, task.corrupt, [picked[0]], ["m1"], task.metric, task.end_pos)
    assert torch.allclose(step.per_example[picked[0]], ref, atol=1e-4)
    small = Circuit(picked + ["embed"], name="found", meta={"positions": {p: "END" for p in picked} | {"embed": "YY"}})
    ev = circuit_sufficiency(gt_model, task, small)
    assert ev.metric_name == "probability difference" and ev.per_example.shape == (12,)


@pytest.mark.parametrize("receiver", ["logits", "m1", "m0"])
def test_shipped_zoo_model_sweep_matches_reference(receiver):
    """On the trained zoo model and the real greater-than task (senders at END, metric the probability
    difference), every sender's path effect equals the one-forward-per-sender reference to 1e-4."""
    from tutorial_lib.models import load_model
    from tutorial_lib.path_patching import discover_step
    from tutorial_lib.tasks.greater_than import make_greater_than

    zoo = load_model("zoo-multitask", verbose=False)
    task = make_greater_than(zoo.tokenizer, 16, seed=3)
    res = discover_step(zoo, task, receiver, "END", progress=False)
    base = task.metric(zoo(task.clean)).detach()
    biggest = 0.0
    for s in all_senders(zoo):
        ref = reference_path_patch(zoo, task.clean, task.corrupt, [s], [receiver], task.metric, task.end_pos)
        assert torch.allclose(res.per_example[s], ref, atol=1e-4, rtol=0), (receiver, s)
        biggest = max(biggest, float((ref - base).abs().max()))
    assert biggest > 0.01, f"no sender moves the metric into {receiver} ({biggest}): the comparison means nothing"
