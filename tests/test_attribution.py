"""Tests for tutorial_lib.methods.attribution: batched per-example EAP against slow, independent references."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from conftest import make_tiny_model

from tutorial_lib.methods.attribution import EAPGraph, eap_scores
from tutorial_lib.core.hooks import assert_no_hooks
from tutorial_lib.tasks.base import TaskData

torch.set_num_threads(1)
VOCAB = 40


def toy_task(n=8, pos=7, seed=0, vocab=VOCAB) -> TaskData:
    """Random prompts of lengths pos-2..pos, right-padded with token 0; one token corrupted."""
    g = torch.Generator().manual_seed(seed)
    clean = torch.randint(1, vocab, (n, pos), generator=g)
    lengths = torch.randint(pos - 2, pos + 1, (n,), generator=g)
    for i, length in enumerate(lengths.tolist()):
        clean[i, length:] = 0
    corrupt = clean.clone()
    where = torch.randint(1, pos - 2, (n,), generator=g)
    old = clean[torch.arange(n), where]
    shift = torch.randint(1, vocab - 1, (n,), generator=g)  # never the same token again
    corrupt[torch.arange(n), where] = 1 + (old - 1 + shift) % (vocab - 1)
    assert torch.all((corrupt != clean).sum(1) == 1)
    return TaskData("toy", [""] * n, [""] * n, clean, corrupt, end_pos=lengths - 1,
                    answers=torch.randint(1, vocab, (n,), generator=g),
                    wrong=torch.randint(1, vocab, (n, 3), generator=g))


# ------------------------------------------------------------------ slow reference, one example at a time
def upstream(sender: str, receiver: str, parallel: bool) -> bool:
    """Is ``sender`` upstream of ``receiver``? Written from the architecture, not from index prefixes."""
    if receiver == "logits" or sender == "embed":
        return True
    s_layer = int(sender[1:].split(".")[0])
    r_layer = int(receiver[1:].split(".")[0])
    if s_layer < r_layer:
        return True
    return s_layer == r_layer and sender.startswith("a") and receiver.startswith("m") and not parallel


def edge_table(cfg, outs: dict, grads: dict) -> dict:
    """``{(sender, receiver): score}``: each sender's corrupted-minus-clean output dotted with the gradient at each
    receiver's input (split q/k/v inputs, MLP inputs, the final residual stream), for every edge of the graph."""
    receivers = {}
    for l in range(cfg.n_layers):
        for letter in "qkv":
            for h in range(cfg.n_heads):
                receivers[f"a{l}.h{h}.{letter}"] = grads[f"blocks.{l}.hook_{letter}_input"][0, :, h]
        if not cfg.attn_only:
            receivers[f"m{l}"] = grads[f"blocks.{l}.hook_mlp_in"][0]
    receivers["logits"] = grads[f"blocks.{cfg.n_layers - 1}.hook_resid_post"][0]
    table = {}
    for s in outs["clean"]:
        delta = outs["corrupt"][s] - outs["clean"][s]
        for r, g in receivers.items():
            if upstream(s, r, cfg.parallel_attn_mlp):
                table[(s, r)] = float((delta * g).sum())
    return table


def reference_edges(model, task, i, alphas=(1.0,)):
    """Edge scores of example ``i`` from run_with_cache (per-head results) and autograd.grad.

    ``alphas``: the gradient is averaged over runs whose block-0 input is ``corrupt + alpha (clean - corrupt)``
    (EAP-IG; ``(1.0,)``, the clean run alone, is EAP)."""
    cfg = model.cfg
    saved = (cfg.use_attn_result, cfg.use_split_qkv_input, cfg.use_hook_mlp_in)
    cfg.use_attn_result = cfg.use_split_qkv_input = True
    cfg.use_hook_mlp_in = not cfg.attn_only
    try:
        outs = {}
        for name, toks in (("corrupt", task.corrupt[i : i + 1]), ("clean", task.clean[i : i + 1])):
            with torch.no_grad():
                _, cache = model.run_with_cache(toks)
            acts = {"embed": sum(cache[n][0] for n in ("hook_embed", "hook_pos_embed") if n in cache)}  # rotary: no pos
            for l in range(cfg.n_layers):
                for h in range(cfg.n_heads):
                    acts[f"a{l}.h{h}"] = cache[f"blocks.{l}.attn.hook_result"][0, :, h]
                if not cfg.attn_only:
                    acts[f"m{l}"] = cache[f"blocks.{l}.hook_mlp_out"][0]
            outs[name] = acts
        with torch.no_grad():
            inputs = {name: model.run_with_cache(toks, names_filter="blocks.0.hook_resid_pre")[1]["blocks.0.hook_resid_pre"]
                      for name, toks in (("corrupt", task.corrupt[i : i + 1]), ("clean", task.clean[i : i + 1]))}
        grads = {}
        for alpha in alphas:
            captured = {}

            def keep(act, hook):
                captured[hook.name] = act
                return act

            def interpolated(act, hook, alpha=alpha):
                return (inputs["corrupt"] + alpha * (inputs["clean"] - inputs["corrupt"])).requires_grad_(True)

            with model.hooks(fwd_hooks=[("blocks.0.hook_resid_pre", interpolated),
                                        (lambda n: n.endswith(("_input", "hook_mlp_in", f"{cfg.n_layers - 1}.hook_resid_post")), keep)]):
                logits = model(task.clean[i : i + 1])
            value = logits[0, task.end_pos[i]].log_softmax(-1)[task.answers[i]]
            names = list(captured)
            for n, gr in zip(names, torch.autograd.grad(value, [captured[n] for n in names])):
                grads[n] = grads.get(n, 0) + gr / len(alphas)
            model.zero_grad(set_to_none=True)
        table = edge_table(cfg, outs, grads)
        return table, value.item()
    finally:
        cfg.use_attn_result, cfg.use_split_qkv_input, cfg.use_hook_mlp_in = saved


def check_against_reference(model, task, scores, rtol, alphas=(1.0,)):
    g = scores.graph
    mask = g.edge_mask()
    worst = 0.0
    for i in range(len(task)):
        table, value = reference_edges(model, task, i, alphas)
        assert len(table) == int(mask.sum()), "edge sets differ in size"
        ref = torch.zeros(len(g.senders), len(g.receivers), dtype=torch.float64)
        for (s, r), v in table.items():
            ref[g.senders.index(s), g.receivers.index(r)] = v
        got = scores.edges[i].double()
        assert torch.all(got[~mask] == 0)
        worst = max(worst, float((got - ref).abs().max() / ref.abs().max()))
        assert abs(scores.metric[i].item() - value) <= 1e-4 * abs(value)
    assert worst <= rtol, f"max relative difference {worst:.2e} > {rtol}"
    return worst


@pytest.mark.parametrize(
    "kw",
    [{}, {"parallel_attn_mlp": True}, {"attn_only": True}, {"normalization_type": "LNPre"},
     {"normalization_type": "RMS"}, {"normalization_type": None},
     {"positional_embedding_type": "rotary", "rotary_dim": 8}],
    ids=["gpt2-like", "parallel", "attn-only", "LNPre", "RMS", "no-norm", "rotary"],
)
def test_matches_slow_reference_float64(kw):
    model, task = make_tiny_model("eap", **kw), toy_task(n=8 if not kw else 4)
    scores = eap_scores(model, task, batch_size=3, progress=False)
    worst = check_against_reference(model, task, scores, rtol=1e-4)
    assert worst < 1e-9  # float64 throughout: agreement should be near machine precision


def test_matches_slow_reference_float32():
    model, task = make_tiny_model("eap", dtype=torch.float32, seed=1), toy_task(seed=1)
    scores = eap_scores(model, task, batch_size=8, progress=False)
    check_against_reference(model, task, scores, rtol=1e-4)


def test_batch_size_and_logit_positions_do_not_change_scores():
    model, task = make_tiny_model("eap", seed=2), toy_task(n=7, seed=2)
    a = eap_scores(model, task, batch_size=1, logits_at="all", progress=False)
    b = eap_scores(model, task, batch_size=7, logits_at="end", progress=False)
    c = eap_scores(model, task, batch_size=3, logits_at="end", keep_edges=False, progress=False)
    assert torch.allclose(a.edges, b.edges, rtol=1e-9, atol=1e-12)
    assert torch.allclose(a.nodes, c.nodes, rtol=1e-9, atol=1e-12) and c.edges is None


def test_nodes_are_sums_of_abs_edges_and_topk():
    model, task = make_tiny_model("eap", seed=3), toy_task(seed=3)
    s = eap_scores(model, task, batch_size=4, progress=False)
    assert s.components == s.graph.senders[1:]
    assert torch.allclose(s.nodes, s.edges.abs().sum(2)[:, 1:])
    assert torch.allclose(s.signed_nodes, s.edges.sum(2)[:, 1:])
    member = s.top_k(0.2)
    k = s.k_for(0.2)
    assert k == 3  # ceil(0.2 * 15)
    assert torch.all(member.sum(1) == k)
    for i, circuit in enumerate(s.circuits(0.2)):
        chosen = {s.components[j] for j in s.nodes[i].argsort(descending=True)[:k].tolist()}
        assert set(circuit.nodes) == chosen
    with pytest.raises(ValueError, match="frac"):
        s.top_k(10)


def test_node_vector_is_what_node_curve_ranks():
    """embed first (the signed sum of its edges), then every head and MLP: node_curve takes it as it is."""
    from tutorial_lib.methods.faithfulness import node_curve, node_names

    model, task = make_tiny_model("eap", seed=3), toy_task(seed=3)
    s = eap_scores(model, task, batch_size=4, progress=False)
    v = s.node_vector()
    assert len(v) == len(node_names(s.graph)) and node_names(s.graph)[0] == "embed"
    assert torch.allclose(v, torch.cat([s.edges[:, 0].sum(1).mean()[None], s.signed_nodes.mean(0)]).float())
    curve = node_curve(model, task, "EAP", v, fractions=[0.0, 0.5, 1.0])
    assert len(curve.f) == 3 and curve.kind == "nodes"
    with pytest.raises(ValueError, match="one value per node"):
        node_curve(model, task, "EAP", s.signed_nodes.mean(0), fractions=[0.5])


def test_settings_restored_and_no_hooks_left_even_on_error():
    model, task = make_tiny_model("eap", seed=4), toy_task(seed=4)
    model.cfg.use_split_qkv_input = True  # the user's setting must survive (EAP turns it off inside)
    model.blocks[0].attn.W_Q.requires_grad_(False)

    def bad_metric(logits, sub):
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        eap_scores(model, task, metric=bad_metric, progress=False)
    assert model.cfg.use_split_qkv_input is True and model.cfg.use_hook_mlp_in is False
    assert not model.blocks[0].attn.W_Q.requires_grad and model.blocks[0].attn.W_K.requires_grad
    assert_no_hooks(model)
    eap_scores(model, task, progress=False)
    assert_no_hooks(model)
    with pytest.raises(ValueError, match="unknown metric"):
        eap_scores(model, task, metric="accuracy_typo")
    with pytest.raises(ValueError, match="logits_at"):
        eap_scores(model, task, logits_at="middle")


def test_graph_layout():
    g = EAPGraph.from_model(make_tiny_model("eap"))
    assert g.senders[:6] == ["embed", "a0.h0", "a0.h1", "a0.h2", "a0.h3", "m0"]
    assert g.receivers[:5] == ["a0.h0.q", "a0.h1.q", "a0.h2.q", "a0.h3.q", "a0.h0.k"]
    assert g.receivers[12] == "m0" and g.receivers[-1] == "logits"
    # embed -> 3 * 4 heads * 3 layers (qkv) + 3 MLPs + logits; total edges counted from the rule
    mask = g.edge_mask()
    expected = sum(upstream(s, r, False) for s in g.senders for r in g.receivers)
    assert int(mask.sum()) == expected
    gqa = EAPGraph.from_model(make_tiny_model("eap", n_key_value_heads=2))  # one k/v receiver per *query* head
    assert gqa.receivers == g.receivers and gqa.senders == g.senders
    with pytest.raises(ValueError, match="positional_embedding_type='shortformer'"):
        EAPGraph.from_model(make_tiny_model("eap", positional_embedding_type="shortformer"))
    with pytest.raises(ValueError, match="TaskData"):
        eap_scores(make_tiny_model("eap"), (torch.zeros(2, 3), torch.zeros(2, 3)))


# ------------------------------------------------------------------ agreement with exact activation patching
def exact_node_effects_reference(model, task, components, metric="answer_logprob"):
    """metric(clean run with one node's output taken from the corrupted run) - metric(clean run)."""
    metric = getattr(task, metric)
    with torch.no_grad():
        _, cache = model.run_with_cache(task.corrupt)
        base = metric(model(task.clean))
        out = torch.zeros(len(task), len(components), dtype=torch.float64)
        for j, c in enumerate(components):
            if c.startswith("a"):
                l, h = (int(x) for x in c[1:].split(".h"))
                name = f"blocks.{l}.attn.hook_z"

                def patch(act, hook, h=h, name=name):
                    act = act.clone()
                    act[:, :, h] = cache[name][:, :, h]
                    return act
            else:
                name = f"blocks.{int(c[1:])}.hook_mlp_out"

                def patch(act, hook, name=name):
                    return cache[name].clone()
            with model.hooks(fwd_hooks=[(name, patch)]):
                out[:, j] = metric(model(task.clean)) - base
    return out


def _pearson(a, b):
    return float(np.corrcoef(np.asarray(a).ravel(), np.asarray(b).ravel())[0, 1])


def _spearman(a, b):
    ra = np.argsort(np.argsort(np.asarray(a).ravel()))
    rb = np.argsort(np.argsort(np.asarray(b).ravel()))
    return _pearson(ra, rb)


def test_correlates_with_exact_activation_patching_random_model():
    model, task = make_tiny_model("eap", seed=5), toy_task(n=24, seed=5)
    s = eap_scores(model, task, batch_size=8, progress=False)
    exact = exact_node_effects_reference(model, task, s.components)
    r = _pearson(s.signed_nodes, exact)
    rho = _spearman(s.nodes, exact.abs())
    print(f"random model: Pearson(signed EAP, exact) = {r:.3f}; Spearman(|EAP| node score, |exact|) = {rho:.3f}")
    assert r > 0.8 and rho > 0.5  # measured 0.960 and 0.762 (seed 5)


def test_correlation_with_exact_patching_on_a_trained_model():
    """A 2-layer model trained (300 steps) to copy the token at position 2 to the end; corrupting that
    token is a large change. The ranking EAP uses stays informative; the signed linear estimate of a
    saturated log-probability does not (p(answer) ~ 1 has a tiny gradient), that of a logit difference does."""
    model = make_tiny_model("eap", dtype=torch.float32, seed=7, n_layers=2)
    torch.manual_seed(0)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    g = torch.Generator().manual_seed(0)
    for _ in range(300):
        toks = torch.randint(1, VOCAB, (64, 7), generator=g)
        loss = torch.nn.functional.cross_entropy(model(toks)[:, -1], toks[:, 2])
        opt.zero_grad()
        loss.backward()
        opt.step()
    g = torch.Generator().manual_seed(1)
    clean = torch.randint(1, VOCAB, (24, 7), generator=g)
    corrupt = clean.clone()
    corrupt[:, 2] = 1 + (clean[:, 2] - 1 + torch.randint(1, VOCAB - 1, (24,), generator=g)) % (VOCAB - 1)
    task = TaskData("copy", [""] * 24, [""] * 24, clean, corrupt, end_pos=torch.full((24,), 6),
                    answers=clean[:, 2], wrong=corrupt[:, 2:3])
    with torch.no_grad():
        assert task.accuracy(model(clean)).mean() > 0.95
    found = {}
    for metric in ("answer_logprob", "logit_diff"):
        s = eap_scores(model, task, metric=metric, batch_size=8, progress=False)
        exact = exact_node_effects_reference(model, task, s.components, metric)
        found[metric] = (_pearson(s.signed_nodes, exact), _spearman(s.nodes, exact.abs()))
        print(f"trained model, {metric}: Pearson(signed EAP, exact) = {found[metric][0]:.3f}; "
              f"Spearman(|EAP|, |exact|) = {found[metric][1]:.3f}")
    # measured (seeded): log-prob 0.102 / 0.695, logit diff 0.772 / 0.894
    assert found["answer_logprob"][1] > 0.5 and found["answer_logprob"][0] > 0
    assert found["logit_diff"][0] > 0.6 and found["logit_diff"][1] > 0.7


def test_exact_node_effects_match_the_independent_reference():
    from tutorial_lib.methods.attribution import exact_node_effects

    model, task = make_tiny_model("eap", seed=3), toy_task(n=10, seed=3)
    comps = EAPGraph.from_model(model).components
    for metric in ("answer_logprob", "logit_diff"):
        got = exact_node_effects(model, task, metric=metric)
        ref = exact_node_effects_reference(model, task, comps, metric)
        assert got.shape == (10, len(comps))
        assert torch.allclose(got.double(), ref, atol=1e-6)
    assert_no_hooks(model)
    sub = exact_node_effects(model, task, "logit_diff", components=["m2", "a0.h1"])
    assert torch.allclose(sub.double(), exact_node_effects_reference(model, task, ["m2", "a0.h1"], "logit_diff"), atol=1e-6)


def test_eap_for_tasks_equals_one_call_per_task():
    from tutorial_lib.methods.attribution import eap_for_tasks

    model = make_tiny_model("eap", seed=1)
    tasks = {"a": toy_task(n=6, seed=1), "b": toy_task(n=5, seed=2)}
    out = eap_for_tasks(model, tasks, metric="logit_diff", batch_size=4, keep_edges=False)
    assert list(out) == ["a", "b"] and out["a"].edges is None
    for k, t in tasks.items():
        assert torch.allclose(out[k].nodes, eap_scores(model, t, "logit_diff", batch_size=3, progress=False).nodes)


# ------------------------------------------------------------------ EAP-IG
@pytest.mark.parametrize("kw", [{}, {"positional_embedding_type": "rotary", "rotary_dim": 8}, {"attn_only": True}],
                         ids=["gpt2-like", "rotary", "attn-only"])
def test_eap_ig_matches_the_slow_reference_and_m1_is_eap(kw):
    """EAP-IG with m steps = the gradient averaged over alpha = 1/m, 2/m, ..., 1 (slow reference, one example and
    one alpha at a time); its m = 1 reference is the plain-EAP reference."""
    model, task = make_tiny_model("eap", **kw), toy_task(n=3)
    ig = eap_scores(model, task, batch_size=2, progress=False, ig_steps=3)
    check_against_reference(model, task, ig, rtol=1e-8, alphas=(1 / 3, 2 / 3, 1.0))
    plain = eap_scores(model, task, batch_size=2, progress=False)
    check_against_reference(model, task, plain, rtol=1e-8, alphas=(1.0,))
    assert not torch.allclose(ig.edges, plain.edges)
    assert torch.allclose(ig.metric, plain.metric)  # the metric reported is the clean run's


def test_ig_completeness_embed_scores_sum_to_the_metric_difference():
    """IG is complete: the embed node's edges, summed over all receivers, are the gradient of the metric with
    respect to the input times (corrupt - clean); integrated along the line this tends to
    metric(corrupt) - metric(clean) as m grows (right Riemann sum: error O(1/m))."""
    model, task = make_tiny_model("eap", seed=2, scale=1.5), toy_task(n=4, seed=3)
    with torch.no_grad():
        want = (task.answer_logprob(model(task.corrupt)) - task.answer_logprob(model(task.clean))).double()
    errs = {}
    for m in (1, 4, 32):
        s = eap_scores(model, task, batch_size=4, progress=False, ig_steps=m)
        errs[m] = float((s.edges[:, 0].sum(-1) - want).abs().max())
    assert errs[32] < errs[4] < errs[1]
    assert errs[32] < 0.15 * errs[1] and errs[32] < 0.02 * float(want.abs().max()) + 1e-6, errs
    with pytest.raises(ValueError, match="ig_steps"):
        eap_scores(model, task, progress=False, ig_steps=0)


# ------------------------------------------------------------------ the papers' families (issue 28)
from tutorial_lib.zoo.families import FAMILIES, tiny_family_model  # noqa: E402


def reference_family_edges(model, task, i):
    """Edge scores and head node scores of example ``i`` on any family, written from TransformerLens' own
    hooks: split (and, for grouped-query attention, ungrouped) q/k/v inputs as receivers, per-head results as
    senders -- passed through the model's own output-norm module when one sits on the summed attention output
    (``N(A + Δ_h) - N(A)``) -- and autograd for the gradients."""
    cfg = model.cfg
    saved = (cfg.use_attn_result, cfg.use_split_qkv_input, cfg.use_hook_mlp_in, cfg.ungroup_grouped_query_attention)
    cfg.use_attn_result = cfg.use_split_qkv_input = True
    cfg.use_hook_mlp_in = not cfg.attn_only
    cfg.ungroup_grouped_query_attention = cfg.n_key_value_heads is not None
    post = cfg.original_architecture == "Olmo2ForCausalLM"
    out_norm = (lambda l: model.blocks[l].ln1_post) if cfg.use_normalization_before_and_after else \
        (lambda l: model.blocks[l].ln1) if post else None
    try:
        outs, zs = {}, {}
        for name, toks in (("corrupt", task.corrupt[i : i + 1]), ("clean", task.clean[i : i + 1])):
            with torch.no_grad():
                _, cache = model.run_with_cache(toks)
            acts = {"embed": cache["blocks.0.hook_resid_pre"][0]}
            for l in range(cfg.n_layers):
                for h in range(cfg.n_heads):
                    acts[f"a{l}.h{h}"] = cache[f"blocks.{l}.attn.hook_result"][0, :, h]
                    zs[(name, l, h)] = cache[f"blocks.{l}.attn.hook_z"][0, :, h]
                if not cfg.attn_only:
                    acts[f"m{l}"] = cache[f"blocks.{l}.hook_mlp_out"][0]
            outs[name] = acts
        if out_norm is not None:  # a head alone changed, the layer's summed output renormalised
            with torch.no_grad():
                for l in range(cfg.n_layers):
                    A = sum(outs["clean"][f"a{l}.h{h}"] for h in range(cfg.n_heads)) + model.blocks[l].attn.b_O
                    for h in range(cfg.n_heads):
                        d = outs["corrupt"][f"a{l}.h{h}"] - outs["clean"][f"a{l}.h{h}"]
                        outs["corrupt"][f"a{l}.h{h}"] = out_norm(l)(A + d) - out_norm(l)(A)
                        outs["clean"][f"a{l}.h{h}"] = torch.zeros_like(A)
        captured = {}

        def keep(act, hook):
            captured[hook.name] = act
            return act

        with model.hooks(fwd_hooks=[(lambda n: n.endswith(("_input", "hook_mlp_in", "attn.hook_z",
                                                            f"{cfg.n_layers - 1}.hook_resid_post")), keep)]):
            logits = model(task.clean[i : i + 1])
        value = logits[0, task.end_pos[i]].log_softmax(-1)[task.answers[i]]
        names = list(captured)
        grads = dict(zip(names, torch.autograd.grad(value, [captured[n] for n in names])))
        table = edge_table(cfg, outs, grads)
        head_nodes = {f"a{l}.h{h}": float(((zs[("corrupt", l, h)] - zs[("clean", l, h)])
                                           * grads[f"blocks.{l}.attn.hook_z"][0, :, h]).sum())
                      for l in range(cfg.n_layers) for h in range(cfg.n_heads)}
        return table, value.item(), head_nodes
    finally:
        (cfg.use_attn_result, cfg.use_split_qkv_input, cfg.use_hook_mlp_in,
         cfg.ungroup_grouped_query_attention) = saved


@pytest.mark.parametrize("family", sorted(FAMILIES))
@pytest.mark.parametrize("ig_steps", [1, 3])
def test_every_family_matches_the_slow_reference(family, ig_steps):
    """EAP (and EAP-IG's m = 1 path agreement) on a tiny model of each family, built from TransformerLens' own
    conversion of the family's config, float64: edge scores and signed head node scores per example."""
    model = tiny_family_model(family, dtype=torch.float64, scale=3.0, seed=1)
    task = toy_task(n=3, pos=11, seed=4)
    scores = eap_scores(model, task, batch_size=2, progress=False, ig_steps=ig_steps)
    g = scores.graph
    mask = g.edge_mask()
    if ig_steps > 1:  # EAP-IG on these families: its m = 1 equals plain EAP (checked below) and runs
        assert torch.isfinite(scores.edges).all() and scores.edges.abs().sum() > 0
        return
    for i in range(len(task)):
        table, value, head_nodes = reference_family_edges(model, task, i)
        assert len(table) == int(mask.sum())
        ref = torch.zeros(len(g.senders), len(g.receivers), dtype=torch.float64)
        for (s, r), v in table.items():
            ref[g.senders.index(s), g.receivers.index(r)] = v
        got = scores.edges[i].double()
        assert torch.allclose(got, ref, atol=1e-9, rtol=1e-7), (family, float((got - ref).abs().max()))
        assert abs(scores.metric[i].item() - value) < 1e-9
        heads = [scores.components.index(h) for h in head_nodes]
        want = torch.tensor(list(head_nodes.values()), dtype=torch.float64)
        assert torch.allclose(scores.signed_nodes[i, heads].double(), want, atol=1e-9, rtol=1e-7), family
    assert_no_hooks(model)
    assert model.cfg.ungroup_grouped_query_attention is False  # settings restored


def _worst_vs_reference(model, task) -> float:
    scores = eap_scores(model, task, batch_size=2, progress=False)
    g, worst = scores.graph, 0.0
    for i in range(len(task)):
        table, _, _ = reference_family_edges(model, task, i)
        for (s, r), v in table.items():
            worst = max(worst, abs(float(scores.edges[i, g.senders.index(s), g.receivers.index(r)]) - v))
    return worst


def test_planted_bugs_are_caught(monkeypatch):
    """Each planted bug makes the family test above fail: a norm on the summed output ignored (the additive
    share used as a head's change), OLMo-2's output norm taken for an input norm, and a key/value group
    mis-mapped (query head h reading the keys of group h % groups instead of h // (heads / groups))."""
    import tutorial_lib.methods.attribution as A
    from tutorial_lib.core import arch

    task = toy_task(n=2, pos=11, seed=4)
    gemma = tiny_family_model("gemma2", dtype=torch.float64, scale=3.0, seed=1)
    olmo = tiny_family_model("olmo2", dtype=torch.float64, scale=3.0, seed=1)
    llama = tiny_family_model("llama", dtype=torch.float64, scale=3.0, seed=1)
    assert max(_worst_vs_reference(m, task) for m in (gemma, olmo, llama)) < 1e-9
    with monkeypatch.context() as mp:  # the norm frozen out: a head's change taken as additive
        mp.setattr(A, "head_contributions", lambda model, l, zc, dz: torch.einsum(
            "bphk,hkd->bhpd", dz, model.blocks[l].attn.W_O))
        assert _worst_vs_reference(gemma, task) > 1e-4 and _worst_vs_reference(olmo, task) > 1e-4
    with monkeypatch.context() as mp:  # post-norm's ln1 mistaken for an input norm
        mp.setattr(A, "input_norm_type", lambda cfg: cfg.normalization_type)
        assert _worst_vs_reference(olmo, task) > 1e-4
    with monkeypatch.context() as mp:  # k/v groups mis-mapped in the input-gradient formula
        real = A._input_grads

        def misgrouped(model, l, letter, grad, *rest):
            attn = model.blocks[l].attn
            if letter not in "kv" or model.cfg.n_key_value_heads is None:
                return real(model, l, letter, grad, *rest)
            rep = model.cfg.n_heads // model.cfg.n_key_value_heads
            wrong = getattr(attn, f"_W_{letter.upper()}").repeat(rep, 1, 1)  # group h % groups, not h // rep
            name = f"W_{letter.upper()}"
            expanded = type(attn).__dict__[name]
            setattr(type(attn), name, property(lambda self: wrong))  # for this call only
            try:
                return real(model, l, letter, grad, *rest)
            finally:
                setattr(type(attn), name, expanded)

        mp.setattr(A, "_input_grads", misgrouped)
        assert _worst_vs_reference(llama, task) > 1e-4
