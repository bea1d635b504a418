"""Path patching: the fast batched engine against a slow, independent reference (one hooked forward per
sender; ``path_reference.py`` says what it does)."""
import warnings

import numpy as np
import pytest
import torch

warnings.filterwarnings("ignore", category=DeprecationWarning)
torch.set_num_threads(1)

from conftest import PATH_VOCAB as VOCAB, TOY_LAYERS as N_LAYERS, make_tiny_model  # noqa: E402
from path_reference import all_senders, reference_path_patch  # noqa: E402

from tutorial_lib.core.hooks import assert_no_hooks  # noqa: E402
from tutorial_lib.methods.path_patching import (  # noqa: E402
    ReceiversMode,
    path_patch,
    path_patch_sweep,
    top_senders,
)


def end_metric(end):
    def metric(logits):
        final = logits[torch.arange(logits.shape[0]), end]
        return final[:, 3] - final[:, 7]
    return metric


def all_positions_metric(logits):  # reads every position: exercises the full-logits path
    return logits.log_softmax(-1)[..., 5].mean(-1)


def check_sweep(model, data, receivers, sender_pos_kind, metric_kind, direction="noising", receiver_pos=None,
                head_out=None, mode="independent", senders=None, min_effect=0.05):
    """Every sender's per-example metric from the engine against the reference (same ``receivers_mode``), to
    1e-5 + 1e-4 relative."""
    clean, corrupt, end, yy = data
    head_out = {"end": end, None: None}[head_out]
    sp = {"all": None, "end": end, "yy": yy}[sender_pos_kind]
    if callable(metric_kind):  # a task's metric, read at END
        metric, lp = metric_kind, end
    else:
        metric = end_metric(end) if metric_kind == "end" else all_positions_metric
        lp = end if metric_kind == "end" else None
    res = path_patch_sweep(model, clean, corrupt, receivers, metric, sender_positions=sp,
                           receiver_positions=receiver_pos, direction=direction, logit_positions=lp,
                           chunk_size=5, progress=False, head_output_positions=head_out, receivers_mode=mode,
                           senders=senders or "all")
    assert res.receivers_mode == mode
    assert_no_hooks(model)
    with torch.no_grad():
        base = metric(model(clean if direction == "noising" else corrupt))
    biggest = worst = 0.0
    for s in senders or all_senders(model):
        ref = reference_path_patch(model, clean, corrupt, [s], receivers if isinstance(receivers, list) else [receivers],
                                   metric, sp, receiver_pos, direction, head_out, receivers_mode=mode)
        fast = res.per_example[s]
        assert torch.allclose(fast, ref, atol=1e-5, rtol=1e-4), (receivers, s, (fast - ref).abs().max())
        assert abs(res.effects[s] - float((ref - base).mean())) < 1e-4
        biggest = max(biggest, float((ref - base).abs().max()))
        worst = max(worst, float((fast - ref).abs().max()))
    assert biggest > min_effect, f"effects too small ({biggest}) for the comparison to mean anything"
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
def test_sweep_matches_reference(path_model, path_data, receivers, spos, metric_kind):
    check_sweep(path_model, path_data, receivers, spos, metric_kind)


def test_several_receivers_at_different_layers(path_model, path_data):
    check_sweep(path_model, path_data, ["a1.h0.q", "a1.h2.v", "m1", "a2.h3.k"], "yy", "end")


# ----------------------------------------------------------------------------------------- several receivers
def modes_differ(results: dict, senders, at_least: float) -> float:
    """The largest per-example difference between the independent and joint sweeps; asserted large enough
    that a test comparing each with its reference cannot pass with the two modes computing the same."""
    gap = max(float((results["independent"].per_example[s] - results["joint"].per_example[s]).abs().max())
              for s in senders)
    assert gap > at_least, f"independent and joint agree to {gap:.2g}: the receivers do not test the difference"
    return gap


@pytest.mark.parametrize("receivers, spos, head_out", [
    (["a1.h0.k", "a1.h0.v", "a2.h1.k", "a2.h1.v"], "yy", "end"),  # k/v of heads in two layers, read at END
    (["a0.h2.q", "m0", "a1.h3.v", "m1", "a2.h0.k"], "all", None),  # heads and MLPs interleaved
])
def test_several_receivers_independent_and_joint_match_their_references(path_model, path_data, receivers, spos,
                                                                          head_out):
    """With receivers at different depths the two modes differ, and each matches its own reference."""
    got = {m: check_sweep(path_model, path_data, receivers, spos, "end", head_out=head_out, mode=m)
           for m in ("independent", "joint")}
    gap = modes_differ(got, all_senders(path_model), at_least=1e-2)
    print(f"{receivers}: independent vs joint differ by up to {gap:.3g}")


def test_several_receivers_on_the_zoo_model():
    """The shipped tiny zoo model on the real greater-than task (senders at every position, metric the
    logit difference at END): into a layer-0 head, the input of MLP 0 and two layer-1 heads, where joint lets
    the earlier receivers' changes reach the later ones."""
    from tutorial_lib.tasks.greater_than import make_greater_than
    from tutorial_lib.zoo.loading import load_model

    zoo = load_model("zoo-multitask", verbose=False)
    task = make_greater_than(zoo.tokenizer, 12, seed=5)
    data = (task.clean, task.corrupt, task.end_pos, task.positions["YY"])
    receivers = ["a0.h1", "m0", "a1.h0", "a1.h3"]
    got = {m: check_sweep(zoo, data, receivers, "all", task.logit_diff, mode=m) for m in ("independent", "joint")}
    print(f"zoo: independent vs joint differ by up to {modes_differ(got, ['embed', 'a0.h0', 'a0.h1'], 0.05):.3g}")


def test_several_receivers_on_a_gpt2_shaped_model(path_data):
    """GPT-2 small's shape (12 layers, 12 heads, d_head 64, d_model 768, d_mlp 3072; random weights x2.5; a
    vocabulary of 1,000, which no receiver here reads) and the paper's receivers, the keys and values of a5.h1 and
    a9.h1 (senders at every position): joint lets a5.h1's changed output reach a9.h1's keys and values; independent
    does not. In float64: in float32 the engine and the reference round differently over 12 layers of weights x2.5
    (up to 1e-4 on metrics of ~10 with one torch thread). The first three prompts (END at 8, 8 and 7): the float64
    reference costs ~3 s a sender at this shape."""
    model = make_tiny_model("toy", n_layers=12, d_model=768, n_heads=12, d_head=64, d_mlp=3072, d_vocab=1000,
                            scale=2.5, seed=4, dtype=torch.float64)
    senders = ["embed", "a0.h3", "m0", "a2.h7", "m3", "a4.h1", "m5", "a6.h2", "m8"]
    receivers = ["a5.h1.k", "a5.h1.v", "a9.h1.k", "a9.h1.v"]
    three = tuple(t[:3] for t in path_data)
    got = {m: check_sweep(model, three, receivers, "all", "end", mode=m, senders=senders)
           for m in ("independent", "joint")}
    print(f"GPT-2 shape: independent vs joint differ by up to {modes_differ(got, senders[:5], 1e-2):.3g}")


def test_receivers_in_one_layer_or_with_the_logits_agree_in_both_modes(path_model, path_data):
    """The modes differ only when a receiver reads the residual stream after another one (not the logits)."""
    clean, corrupt, end, yy = path_data
    for recv in (["a2.h0.q", "a2.h1.k", "a2.h3.v"], ["m1", "logits"]):
        a, b = (path_patch_sweep(path_model, clean, corrupt, recv, end_metric(end), logit_positions=end,
                                 progress=False, receivers_mode=m) for m in ("independent", "joint"))
        for s in a.per_example:
            assert torch.equal(a.per_example[s], b.per_example[s]), (recv, s)


def test_receivers_mode_is_checked_and_recorded(path_model, path_data):
    clean, corrupt, end, yy = path_data
    with pytest.raises(ValueError, match=r"unknown receivers_mode 'together'; accepted: \['independent', 'joint'\]"):
        path_patch(path_model, clean, corrupt, ["a0.h0"], ["m1", "a2.h0.q"], end_metric(end), receivers_mode="together")
    res = path_patch_sweep(path_model, clean, corrupt, "m1", end_metric(end), senders=["a0.h0"], progress=False,
                           receivers_mode=ReceiversMode.JOINT)
    assert res.receivers_mode == "joint" and res.normalized().receivers_mode == "joint"
    assert path_patch_sweep(path_model, clean, corrupt, "m1", end_metric(end), senders=["a0.h0"],
                            progress=False).receivers_mode == "independent"  # the papers' way is the default


def test_head_receivers_read_at_end_only(path_model, path_data):
    """The paper's step (c): senders at YY into the keys/values of heads that are read at END."""
    res = check_sweep(path_model, path_data, ["a1.h1.k", "a1.h1.v", "a2.h0.v"], "yy", "end", head_out="end")
    assert res.heads[0].abs().max() > 0.01
    clean, corrupt, end, yy = path_data
    q_only = path_patch_sweep(path_model, clean, corrupt, ["a2.h0.q"], all_positions_metric, sender_positions=yy,
                              head_output_positions=end, progress=False)
    assert q_only.heads.abs().max() == 0 and q_only.mlps.abs().max() == 0  # no direct path YY -> query at END


def test_denoising_and_receiver_positions(path_model, path_data):
    clean, corrupt, end, yy = path_data
    check_sweep(path_model, path_data, "m1", "all", "end", direction="denoising", receiver_pos=end)


def test_rmsnorm_and_attention_only_models(path_data):
    check_sweep(make_tiny_model("toy", d_vocab=VOCAB, seed=1, normalization_type="RMS"), path_data, ["m1", "logits"], "all", "end")
    check_sweep(make_tiny_model("toy", d_vocab=VOCAB, seed=2, attn_only=True), path_data, "a2.h0.k", "yy", "end")


@pytest.mark.parametrize("receivers, spos", [(["a1.h0.q", "a2.h1.k", "a2.h0.v"], "yy"), (["m1", "logits"], "all")])
def test_rotary_model_matches_reference(path_data, receivers, spos):
    """Rotary positions (the multi-task zoo model's): queries and keys of a patched head input are rotated by
    their own positions, also when the engine starts at a later position than 0."""
    check_sweep(make_tiny_model("toy", d_vocab=VOCAB, seed=3, positional_embedding_type="rotary", rotary_dim=8), path_data, receivers, spos, "end")


def test_unsupported_positional_embedding_is_named(path_data):
    clean, corrupt, end, yy = path_data
    with pytest.raises(ValueError, match="shortformer.*accepted: 'standard', 'rotary'"):
        path_patch(make_tiny_model("toy", d_vocab=VOCAB, positional_embedding_type="shortformer"), clean, corrupt, ["a0.h0"], "logits", end_metric(end))


def test_multiple_senders_patch_together(path_model, path_data):
    clean, corrupt, end, yy = path_data
    metric = end_metric(end)
    senders = ["a0.h1", "m0", "a1.h2"]
    out = path_patch(path_model, clean, corrupt, senders, "m2", metric, sender_positions=end)
    ref = reference_path_patch(path_model, clean, corrupt, senders, ["m2"], metric, end)
    assert torch.allclose(out["patched"], ref, atol=1e-4)
    assert torch.allclose(out["baseline"], metric(path_model(clean)), atol=1e-5)
    assert torch.allclose(out["new"], metric(path_model(corrupt)), atol=1e-5)


def test_no_path_gives_exactly_zero(path_model, path_data):
    clean, corrupt, end, yy = path_data
    res = path_patch_sweep(path_model, clean, corrupt, "a1.h0.q", end_metric(end), progress=False)
    assert res.heads[1:].abs().max() == 0  # heads in layer >= 1 cannot reach a layer-1 query
    assert res.mlps[1:].abs().max() == 0
    assert res.heads[0].abs().max() > 0.01
    # senders at a position the receiver does not read: no change either
    res = path_patch_sweep(path_model, clean, corrupt, "logits", end_metric(end), sender_positions=yy,
                           logit_positions=end, progress=False)
    assert res.heads.abs().max() == 0 and res.mlps.abs().max() == 0


def test_metric_reading_outside_logit_positions_raises(path_model, path_data):
    clean, corrupt, end, yy = path_data
    with pytest.raises(ValueError, match="logit_positions"):
        path_patch_sweep(path_model, clean, corrupt, "logits", all_positions_metric, logit_positions=end,
                         progress=False)


def test_bad_inputs_raise_clear_errors(path_model, path_data):
    clean, corrupt, end, yy = path_data
    metric = end_metric(end)
    with pytest.raises(ValueError, match="differ in shape"):
        path_patch(path_model, clean, corrupt[:, :-1], ["a0.h0"], "logits", metric)
    with pytest.raises(ValueError, match="receiver"):
        path_patch(path_model, clean, corrupt, ["a0.h0"], "embed", metric)
    with pytest.raises(ValueError, match="does not exist"):
        path_patch(path_model, clean, corrupt, ["a7.h0"], "logits", metric)
    with pytest.raises(ValueError, match="direction"):
        path_patch(path_model, clean, corrupt, ["a0.h0"], "logits", metric, direction="sideways")
    with pytest.raises(ValueError, match="sender_positions"):
        path_patch(path_model, clean, corrupt, ["a0.h0"], "logits", metric, sender_positions=torch.tensor([1, 2]))
    with pytest.raises(ValueError, match="metric must return"):
        path_patch(path_model, clean, corrupt, ["a0.h0"], "logits", lambda l: l.sum())
    assert_no_hooks(path_model)


def test_per_sender_position_dict_and_top_senders(path_model, path_data):
    clean, corrupt, end, yy = path_data
    metric = end_metric(end)
    spos = {"a0.h1": yy, "m0": yy}  # others: every position
    res = path_patch_sweep(path_model, clean, corrupt, "a2.h1.v", metric, senders=["a0.h1", "m0", "a1.h2"],
                           sender_positions=spos, logit_positions=end, progress=False)
    for s in ["a0.h1", "m0"]:
        ref = reference_path_patch(path_model, clean, corrupt, [s], ["a2.h1.v"], metric, yy)
        assert torch.allclose(res.per_example[s], ref, atol=1e-4)
    ref = reference_path_patch(path_model, clean, corrupt, ["a1.h2"], ["a2.h1.v"], metric, None)
    assert torch.allclose(res.per_example["a1.h2"], ref, atol=1e-4)
    eff = res.effects
    ranked = top_senders(res)
    assert [abs(eff[n]) for n in ranked] == sorted([abs(v) for v in eff.values()], reverse=True)
    assert top_senders(res, k=1) == ranked[:1]
    neg = top_senders(res, sign="negative")
    assert all(eff[n] < 0 for n in neg) and len(neg) == sum(v < 0 for v in eff.values())
    thr = sorted(abs(v) for v in eff.values())[1]
    assert set(top_senders(res, threshold=thr)) == {n for n, v in eff.items() if abs(v) >= thr}


def test_plot_and_normalized(path_model, path_data):
    clean, corrupt, end, yy = path_data
    res = path_patch_sweep(path_model, clean, corrupt, "logits", end_metric(end), logit_positions=end,
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
    into = path_patch_sweep(path_model, clean, corrupt, "m1", end_metric(end), sender_positions=end, logit_positions=end,
                            progress=False)
    f = into.plot()
    assert list(f.data[1].y) == ["embed", "m0"]
    z = np.asarray(f.data[0].z, dtype=float)
    assert np.isnan(z[2:]).all() and not np.isnan(z[:2]).any()
    assert into.reaches("a1.h3") and not into.reaches("m1") and not into.reaches("a2.h0")
    lim = np.nanmax(np.abs(np.concatenate([z.ravel(), [into.embed, into.effects["m0"]]])))
    assert list(f.layout.xaxis2.range) == pytest.approx([-1.05 * lim, 1.05 * lim])
    # into a layer-0 head's keys: only the embedding can send, so the figure is its bar alone
    k0 = path_patch_sweep(path_model, clean, corrupt, "a0.h1.k", end_metric(end), logit_positions=end, progress=False)
    g = k0.plot()
    assert [t.type for t in g.data] == ["bar"] and list(g.data[0].y) == ["embed"]
    n = res.normalized()
    scale = res.new - res.baseline
    assert torch.allclose(n.heads, res.heads / scale, equal_nan=True)
    assert abs(n.effects["m0"] - res.effects["m0"] / scale) < 1e-6


# ------------------------------------------------------------------ the papers' families (issue 28)
from tutorial_lib.zoo.families import FAMILIES, tiny_family_model  # noqa: E402


def family_data(seed=0, n=3, pos=12, vocab=61):
    """Random prompts, positions 4 and 9 corrupted; END is the last position, "YY" position 9."""
    g = torch.Generator().manual_seed(seed)
    clean = torch.randint(1, vocab, (n, pos), generator=g)
    corrupt = clean.clone()
    corrupt[:, [4, 9]] = (clean[:, [4, 9]] + torch.randint(1, vocab - 1, (n, 2), generator=g)) % vocab
    return clean, corrupt, torch.full((n,), pos - 1), torch.full((n,), 9)


FAMILY_CASES = [  # receivers, sender positions, head output positions, receivers_mode
    ("logits", "all", None, "independent"),
    ("m1", "all", None, "independent"),
    (["a1.h2"], "all", "end", "independent"),                   # q, k and v of one (query) head
    (["a1.h0.k", "a1.h1.v", "a1.h3.q"], "yy", "end", "joint"),  # heads sharing a key/value group
    (["a0.h1.v", "m0", "a1.h3.k"], "all", None, "joint"),       # three sites: receivers see earlier receivers
    (["a0.h1.v", "m0", "a1.h3.k"], "all", None, "independent"),
]


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_family_matches_the_slow_reference(family):
    """Every sender into head (q/k/v, query heads of one key/value group), MLP and logit receivers, in both
    receivers modes, per example, against the hooked reference, on a tiny model of each family (float64); and
    two heads of one layer patched together (their layer's output norm recomputed on the joint change)."""
    model = tiny_family_model(family, dtype=torch.float64, scale=2.5, seed=5)
    data = family_data()
    clean, corrupt, end, yy = data
    for receivers, spos, head_out, mode in FAMILY_CASES:
        check_sweep(model, (clean, corrupt, end, yy), receivers, spos, "end", head_out=head_out, mode=mode,
                    min_effect=1e-5)
    metric = end_metric(end)
    for receivers in ("logits", ["a1.h2.v", "m1"]):
        got = path_patch(model, clean, corrupt, ["a0.h0", "a0.h2"], receivers, metric, logit_positions=end)
        want = reference_path_patch(model, clean, corrupt, ["a0.h0", "a0.h2"],
                                    [receivers] if isinstance(receivers, str) else receivers, metric,
                                    receivers_mode="independent")
        assert torch.allclose(got["patched"], want, atol=1e-5, rtol=1e-4), (family, receivers)


def test_planted_bugs_are_caught(monkeypatch):
    """Each planted bug breaks the family comparison: the output norm frozen (a head's change taken as additive)
    on Gemma 2 and OLMo-2, cached keys of a key/value group given to the wrong query heads on Llama 3.2, and a
    parallel block's MLP fed by its own layer's heads on Pythia."""
    import tutorial_lib.methods._path_engine as PP

    def worst(family, receivers, mode="independent", senders=("a0.h1", "m0", "embed")):
        model = tiny_family_model(family, dtype=torch.float64, scale=2.5, seed=5)
        clean, corrupt, end, yy = family_data()
        metric = end_metric(end)  # senders at YY (9): the engine resumes from the cache of positions 0-8
        res = path_patch_sweep(model, clean, corrupt, receivers, metric, senders=list(senders), logit_positions=end,
                               progress=False, receivers_mode=mode, sender_positions=yy)
        return max(float((res.per_example[s] - reference_path_patch(model, clean, corrupt, [s], receivers, metric, yy,
                                                                    receivers_mode=mode)).abs().max()) for s in senders)

    cases = {"norm": [("gemma2", ["a1.h2.k"]), ("olmo2", ["a1.h2.v"])], "group": [("llama", ["a1.h1.k"])],
             "parallel": [("pythia", ["m0"])]}
    for group in cases.values():
        for family, receivers in group:
            assert worst(family, receivers) < 1e-9, (family, receivers)
    with monkeypatch.context() as mp:  # the norm frozen: the sum of the heads' results, no renormalising
        mp.setattr(PP, "heads_change", lambda model, base, layer, dz, p0: torch.einsum(
            "nbphk,hkd->nbpd", dz, model.blocks[layer].attn.W_O))
        for family, receivers in cases["norm"]:
            assert worst(family, receivers) > 1e-4, family
    with monkeypatch.context() as mp:  # cached keys of group g handed to query heads h % groups
        mp.setattr(PP, "per_query_head", lambda kv, cfg: kv.repeat(1, 1, cfg.n_heads // cfg.n_key_value_heads, 1))
        for family, receivers in cases["group"]:
            assert worst(family, receivers) > 1e-4, family
    with monkeypatch.context() as mp:  # the parallel MLP read after its own layer's heads
        import tutorial_lib.methods.path_patching as public

        for module in (PP, public):
            mp.setattr(module, "_site_order", lambda r, parallel=False: r.order)
        for family, receivers in cases["parallel"]:
            assert worst(family, receivers, senders=("a0.h1", "a0.h2")) > 1e-4, family


def test_reaches_follows_the_engines_site_order_on_a_parallel_model():
    """Pythia: a layer's heads and its MLP read the same stream, so a head cannot reach its own layer's MLP; the
    result says so ("no path", NaN in the plot) instead of a measured 0."""
    from tutorial_lib.methods.path_patching import path_patch_sweep
    from tutorial_lib.zoo.families import tiny_family_model

    model = tiny_family_model("pythia", seed=1)
    clean = torch.randint(1, 61, (2, 6), generator=torch.Generator().manual_seed(0))
    corrupt = clean.clone()
    corrupt[:, 2] = (corrupt[:, 2] + 1) % 61
    res = path_patch_sweep(model, clean, corrupt, "m1", lambda logits: logits[:, -1, 0], progress=False)
    assert res.parallel and not res.reaches("a1.h0") and res.reaches("a0.h2") and res.reaches("m0")
    seq = path_patch_sweep(tiny_family_model("gpt2", seed=1), clean, corrupt, "m1", lambda logits: logits[:, -1, 0],
                           progress=False)
    assert not seq.parallel and seq.reaches("a1.h0")
