"""Tests for tutorial_lib.methods.head_ablation: metrics, exact head ablation, controls, verdicts."""
from collections import Counter


import numpy as np
import pytest
import torch
import torch.nn.functional as F
from transformer_lens import HookedTransformer, HookedTransformerConfig

from tutorial_lib.core.circuits import ablation_hooks
from tutorial_lib.core.controls import paired_permutation_test
from tutorial_lib.core.hooks import count_hooks
from tutorial_lib.methods.head_ablation import (
    InductionEval,
    VerificationResult,
    cross_seed_ablation,
    evaluate_induction,
    induction_metrics,
    prev_token_dependency,
    verify_circuit,
)
from tutorial_lib.methods.selectivity import PlantedPairProbe, selectivity

torch.set_num_threads(1)
from conftest import PLANTED_T as T, PLANTED_V as V, make_tiny_model, planted_pair_tokens  # noqa: E402


@pytest.fixture
def probe():
    return PlantedPairProbe(*planted_pair_tokens(32))


# --------------------------------------------------------------------- metrics against a loop
def test_induction_metrics_match_a_loop():
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(6, 9, V, generator=g)
    pos = torch.randint(0, 9, (6, 3), generator=g)
    tgt = torch.randint(0, V, (6, 3), generator=g)
    ev = InductionEval(torch.zeros(6, 9, dtype=torch.long), pos, tgt)
    got = induction_metrics(logits, ev)
    for i in range(6):
        top1 = top5 = loss = lb = 0.0
        for j in range(3):
            row, t = logits[i, pos[i, j]], int(tgt[i, j])
            top1 += float(int(row.argmax()) == t)
            top5 += float(t in row.topk(5).indices.tolist())
            loss += float(-row.log_softmax(-1)[t])
            lb += float(row[t])
        assert float(got["top1"][i]) == pytest.approx(top1 / 3)
        assert float(got["top5"][i]) == pytest.approx(top5 / 3)
        assert float(got["loss"][i]) == pytest.approx(loss / 3, rel=1e-5)
        assert float(got["logit_b"][i]) == pytest.approx(lb / 3, rel=1e-5)


def test_ties_count_against_the_target():
    ev = InductionEval(torch.zeros(2, 3, dtype=torch.long), torch.tensor([[2], [2]]), torch.tensor([[4], [1]]))
    logits = torch.zeros(2, 3, V)
    logits[1, 2, :3] = 1.0  # target 1 tied with tokens 0 and 2 at the top
    got = induction_metrics(logits, ev)
    assert got["top1"].tolist() == [0.0, 0.0] and got["top5"].tolist() == [0.0, 1.0]


def test_eval_from_probe_and_repeated(probe):
    ev = InductionEval.from_probe(probe)
    assert (ev.positions == T - 1).all() and torch.equal(ev.targets[:, 0], probe.targets)
    seg = torch.randint(0, V, (3, 5), generator=torch.Generator().manual_seed(1))
    toks = torch.cat([torch.full((3, 1), 7), seg, seg, torch.full((3, 2), 9)], 1)
    rep = InductionEval.repeated(toks, period=5, start=1)
    assert rep.positions[0].tolist() == [6, 7, 8, 9]
    assert torch.equal(rep.targets, seg[:, 1:])
    with pytest.raises(ValueError, match="not repeated"):
        InductionEval.repeated(toks, period=5, start=0)
    with pytest.raises(ValueError, match="PlantedPairProbe or an InductionEval"):
        induction_metrics(torch.zeros(1, 2, 3), probe.tokens)


# --------------------------------------------------------------------- ablation is exact
@pytest.mark.parametrize("attn_only", [True, False])
def test_ablation_zeroes_exactly_the_chosen_slices(attn_only):
    model = make_tiny_model("planted", attn_only=attn_only)
    toks, _ = planted_pair_tokens(8)
    _, clean = model.run_with_cache(toks)
    got = {}

    def grab(name):
        def hook(act, hook=None):
            got[name] = act.detach().clone()
        return hook

    grabs = [("blocks.0.attn.hook_z", grab("z")), ("blocks.0.hook_attn_out", grab("out"))]
    with model.hooks(fwd_hooks=ablation_hooks(model, ["a0.h1", "a0.h3"], "zero") + grabs):
        model(toks)
    z = clean["blocks.0.attn.hook_z"].clone()
    assert torch.equal(got["z"][:, :, [0, 2]], z[:, :, [0, 2]])  # other heads untouched
    assert (got["z"][:, :, [1, 3]] == 0).all()
    attn = model.blocks[0].attn
    manual = sum(z[:, :, h] @ attn.W_O[h] for h in (0, 2)) + attn.b_O  # the two remaining heads only
    assert torch.allclose(got["out"], manual, atol=1e-5)
    assert count_hooks(model) == 0


def test_evaluate_induction_matches_a_hand_written_ablation(probe):
    model = make_tiny_model("planted")
    heads = ["a0.h2", "a1.h0", "a1.h3"]

    def zero(idx):
        def hook(z, hook=None):
            z = z.clone()
            z[:, :, idx] = 0.0
            return z
        return hook

    with torch.no_grad():
        logits = model.run_with_hooks(probe.tokens, fwd_hooks=[("blocks.0.attn.hook_z", zero([2])), ("blocks.1.attn.hook_z", zero([0, 3]))])
    final = logits[:, -1]
    got = evaluate_induction(model, probe, heads, batch_size=5)
    assert torch.allclose(got["loss"], F.cross_entropy(final, probe.targets, reduction="none"), atol=1e-5)
    assert torch.allclose(got["logit_b"], final.gather(1, probe.targets[:, None])[:, 0], atol=1e-5)
    assert torch.equal(got["top1"], (final.argmax(1) == probe.targets).float())
    assert count_hooks(model) == 0


# --------------------------------------------------------------------- verify_circuit and its controls
def test_verify_circuit_numbers_and_controls(probe):
    model = make_tiny_model("planted", attn_only=False)
    heads = ["a0.h1", "a1.h0", "a1.h2"]
    res = verify_circuit(model, heads, probe, n_control_seeds=4, seed=10, n_permutations=2000)
    want = Counter(int(h[1]) for h in heads)
    for s in res.control_sets:  # the controls' layer constraint
        assert Counter(int(h[1]) for h in s) == want
        assert not set(s) & set(heads)
    assert len({tuple(s) for s in res.control_sets}) > 1  # different seeds, different draws
    assert res.upper_bound_heads == [f"a{l}.h{h}" for l in (0, 1) for h in range(4)]
    again = verify_circuit(model, heads, probe, n_control_seeds=4, seed=10, n_permutations=2000)
    assert again.control_sets == res.control_sets
    # every number equals a direct evaluation
    for name, hs in [("candidate", heads), ("upper bound", res.upper_bound_heads)]:
        direct = evaluate_induction(model, probe, hs)
        assert getattr(res, name.replace(" ", "_"))["loss"] == pytest.approx(float(direct["loss"].mean()), rel=1e-6)
    for s, c in zip(res.control_sets, res.controls):
        assert c["top1"] == pytest.approx(float(evaluate_induction(model, probe, s)["top1"].mean()))
    distinct = list(dict.fromkeys(map(tuple, res.control_sets)))  # the permutation test counts each draw once
    ctrl_loss = torch.stack([evaluate_induction(model, probe, list(s))["loss"] for s in distinct]).mean(0)
    cand_loss = evaluate_induction(model, probe, heads)["loss"]
    assert res.p_value == pytest.approx(paired_permutation_test(cand_loss, ctrl_loss, 2000, seed=10))
    assert res.baseline["top1"] == pytest.approx(float(evaluate_induction(model, probe)["top1"].mean()))
    assert "candidate head(s)" in res.verdict and "matched random" in res.table()
    assert res.control_seeds == [10, 11, 12, 13]
    assert sum(len(sd) for _, _, sd in res.distinct_controls()) == 4
    assert count_hooks(model) == 0


def test_distinct_control_draws(probe):
    model = make_tiny_model("planted")
    # 2 of layer 1's 4 heads are candidates: the only layer-matched control is the other two
    res = verify_circuit(model, ["a1.h0", "a1.h1"], probe, n_control_seeds=5, seed=0, n_permutations=500)
    assert [tuple(s) for s in res.control_sets] == [("a1.h2", "a1.h3")] * 5
    assert res.n_distinct_controls == 1 and res.n_possible_controls == 1
    (heads, metrics, seeds), = res.distinct_controls()
    assert heads == ["a1.h2", "a1.h3"] and seeds == [0, 1, 2, 3, 4]
    assert res.control_mean() == pytest.approx(metrics["top1"]) and res.control_std() == 0.0
    table = res.table()
    assert table.count("#1") == 2 and "#2" not in table  # one row of numbers and one line of heads, not five rows
    assert "matched random #1 (5 seeds)" in table and "a1.h2, a1.h3  (seeds 0, 1, 2, 3, 4)" in table
    assert "1 distinct draw from 5 seeds" in res.verdict and "±" not in res.verdict
    ctrl_loss = evaluate_induction(model, probe, heads)["loss"]
    cand_loss = evaluate_induction(model, probe, res.heads)["loss"]
    assert res.p_value == pytest.approx(paired_permutation_test(cand_loss, ctrl_loss, 500, seed=0))
    # one candidate head in a 4-head layer: 3 possible controls; statistics over the distinct draws only
    res = verify_circuit(model, ["a1.h0"], probe, n_control_seeds=6, seed=0, n_permutations=500)
    distinct = res.distinct_controls()
    assert res.n_possible_controls == 3 and len(distinct) == len({tuple(s) for s in res.control_sets})
    assert res.possible_controls_by_layer == {1: 3}
    assert res.control_mean() == pytest.approx(np.mean([c["top1"] for _, c, _ in distinct]))
    assert sorted(sd for _, _, s in distinct for sd in s) == list(range(6))
    # two layers: layer 0 with 2 of 4 candidates is forced (1 draw), layer 1 with 1 of 4 has 3; 3 in all
    res = verify_circuit(model, ["a0.h0", "a0.h1", "a1.h0"], probe, n_control_seeds=4, seed=0, n_permutations=200)
    assert res.possible_controls_by_layer == {0: 1, 1: 3} and res.n_possible_controls == 3
    assert all(sorted(h for h in s if h.startswith("a0.")) == ["a0.h2", "a0.h3"] for s in res.control_sets)


def test_verify_circuit_bad_input(probe):
    model = make_tiny_model("planted")
    with pytest.raises(ValueError, match="attention heads"):
        verify_circuit(model, ["m0"], probe)
    with pytest.raises(ValueError, match="unselected"):
        verify_circuit(model, [f"a1.h{h}" for h in range(4)], probe)  # a full layer leaves no control
    with pytest.raises(ValueError, match="does not exist"):
        verify_circuit(model, ["a5.h0"], probe)


def make_result(cand, controls, ub, p, base=0.8):
    m = lambda t: {"top1": t, "top5": t, "loss": 1 - t, "logit_b": t}  # noqa: E731
    sets = [[f"a1.h{i + 1}"] for i in range(len(controls))]  # distinct draws
    return VerificationResult(["a1.h0"], m(base), m(cand), [m(c) for c in controls], sets,
                              m(ub), [f"a1.h{i}" for i in range(len(controls) + 1)], p)


def test_causal_verdict_logic():
    good = make_result(0.1, [0.7, 0.75, 0.65], 0.05, p=0.001)
    assert good.causal and good.gap_closed == pytest.approx(0.7 / 0.75)
    assert "Causal" in good.verdict and "10.0%" in good.verdict
    assert good.control_mean() == pytest.approx(0.7) and good.control_std() == pytest.approx(0.05)
    assert not make_result(0.1, [0.7, 0.05], 0.05, p=0.001).causal  # one control draw hurts as much
    assert not make_result(0.1, [0.7, 0.75], 0.05, p=0.2).causal  # not significant
    assert "Not shown causal" in make_result(0.8, [0.8], 0.8, p=1.0).verdict


# --------------------------------------------------------------------- seeds and composition
def test_cross_seed_ablation_matches_direct(probe):
    models = {"s0": make_tiny_model("planted", seed=0), "s1": make_tiny_model("planted", seed=1)}
    circuits = {"s0": ["a1.h0"], "s1": ["a0.h2", "a1.h3"]}
    out = cross_seed_ablation(models, circuits, probe, metric="loss")
    for mname, model in models.items():
        assert out[mname]["none"] == pytest.approx(float(evaluate_induction(model, probe)["loss"].mean()))
        for cname, hs in circuits.items():
            assert out[mname][cname] == pytest.approx(float(evaluate_induction(model, probe, hs)["loss"].mean()))
    wide = make_tiny_model("planted", n_heads=2, d_head=16)
    with pytest.raises(ValueError, match="one shape"):
        cross_seed_ablation({"a": models["s0"], "b": wide}, circuits, probe)


def test_prev_token_dependency_matches_direct(probe):
    model = make_tiny_model("planted")
    out = prev_token_dependency(model, ["a0.h1"], ["a1.h2", "a1.h0"], probe, n_control_seeds=2)
    conds = out["conditions"]
    assert list(conds) == ["none", "previous-token heads", "matched random s0", "matched random s1"]
    for s in out["control_sets"]:
        assert len(s) == 1 and s[0].startswith("a0.") and s[0] != "a0.h1"
    sel = selectivity(model, probe, ("induction",), fwd_hooks=ablation_hooks(model, ["a0.h1"]))["induction"]
    assert conds["previous-token heads"]["induction_selectivity"]["a1.h2"] == pytest.approx(float(sel[1, 2]))
    assert conds["previous-token heads"]["top1"] == pytest.approx(float(evaluate_induction(model, probe, ["a0.h1"])["top1"].mean()))
    assert conds["none"]["induction_selectivity"]["a1.h0"] == pytest.approx(float(selectivity(model, probe, ("induction",))["induction"][1, 0]))
    assert count_hooks(model) == 0


# --------------------------------------------------------------------- a model whose circuit we know
def wired_induction_model(prev=(0, 0), ind=(1, 0), vocab=20, seq_len=16, seed=0, beta=60.0, noise=0.05):
    """Hand-set weights: a previous-token head ``prev`` and an induction head ``ind`` (K-composition).

    Residual subspaces (one-hot): token | position | previous token | induction output. The unembedding
    reads only the induction output, so the model predicts ``B`` exactly when the circuit works. The
    other heads get small random weights.
    """
    V, T = vocab, seq_len
    TOK, POS, PRV, OUT = 0, V, V + T, 2 * V + T
    cfg = HookedTransformerConfig(n_layers=2, d_model=3 * V + T, n_heads=4, d_head=max(V, T), n_ctx=T, d_vocab=V,
                                  attn_only=True, normalization_type=None, seed=seed)
    model = HookedTransformer(cfg)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * noise)
        for b in model.blocks:
            for name in ("b_Q", "b_K", "b_V", "b_O"):
                getattr(b.attn, name).zero_()
        model.embed.W_E.zero_()
        model.pos_embed.W_pos.zero_()
        model.unembed.W_U.zero_()
        model.unembed.b_U.zero_()
        for t in range(V):
            model.embed.W_E[t, TOK + t] = 1.0
            model.unembed.W_U[OUT + t, t] = 1.0
        for p in range(T):
            model.pos_embed.W_pos[p, POS + p] = 1.0
        a = model.blocks[prev[0]].attn
        h = prev[1]
        for w in (a.W_Q, a.W_K, a.W_V, a.W_O):
            w[h].zero_()
        for i in range(T):
            a.W_Q[h, POS + i, i] = beta  # query at i ...
        for j in range(T - 1):
            a.W_K[h, POS + j, j + 1] = 1.0  # ... matches key j = i - 1
        for t in range(V):
            a.W_V[h, TOK + t, t] = 1.0
            a.W_O[h, t, PRV + t] = 1.0  # writes "my previous token was t"
        a = model.blocks[ind[0]].attn
        h = ind[1]
        for w in (a.W_Q, a.W_K, a.W_V, a.W_O):
            w[h].zero_()
        for t in range(V):
            a.W_Q[h, TOK + t, t] = beta  # query: my token is t ...
            a.W_K[h, PRV + t, t] = 1.0  # ... key: my previous token was t
            a.W_V[h, TOK + t, t] = 1.0
            a.W_O[h, t, OUT + t] = 1.0  # copy the key's token to the output
    return model.eval()


@pytest.fixture
def wired_probe():
    return PlantedPairProbe(*planted_pair_tokens(64, seq_len=16, vocab=20, seed=5))


def test_recipe_recovers_a_wired_circuit(wired_probe):
    model = wired_induction_model()
    sel = selectivity(model, wired_probe)
    from tutorial_lib.methods.selectivity import classify_heads, induction_circuit

    classes = classify_heads(sel)
    assert classes["a0.h0"] == "previous-token" and classes["a1.h0"] == "induction"
    assert induction_circuit(sel) == ["a1.h0"]
    assert sum(c == "unclassified" for c in classes.values()) == 6
    res = verify_circuit(model, induction_circuit(sel), wired_probe, n_control_seeds=3)
    assert res.baseline["top1"] >= 0.95 and res.candidate["top1"] <= 0.2
    assert min(c["top1"] for c in res.controls) >= 0.9 and res.upper_bound["top1"] <= 0.2
    assert res.causal and res.gap_closed >= 0.8 and res.p_value < 0.01
    dep = prev_token_dependency(model, ["a0.h0"], ["a1.h0"], wired_probe, n_control_seeds=2)["conditions"]
    assert dep["none"]["induction_selectivity"]["a1.h0"] >= 50
    assert dep["previous-token heads"]["induction_selectivity"]["a1.h0"] < 5
    assert dep["previous-token heads"]["top1"] < 0.5
    assert all(dep[f"matched random s{i}"]["top1"] >= 0.9 for i in range(2))


def test_seed_specificity_on_two_wired_models(wired_probe):
    models = {"A": wired_induction_model(), "B": wired_induction_model(prev=(0, 2), ind=(1, 3), seed=1)}
    circuits = {"A": ["a0.h0", "a1.h0"], "B": ["a0.h2", "a1.h3"]}
    out = cross_seed_ablation(models, circuits, wired_probe)
    for m in "AB":
        assert out[m]["none"] >= 0.95
        assert out[m][m] <= 0.2  # its own circuit matters ...
        assert out[m]["B" if m == "A" else "A"] >= 0.9  # ... the other seed's does not


# --------------------------------------------------------------------- every family the papers used
from family_reference import ablated_logits  # noqa: E402
from tutorial_lib.core.view import engine_view  # noqa: E402
from tutorial_lib.core.circuits import resample_sources, run_with_ablation  # noqa: E402
from tutorial_lib.core.components import parse_many  # noqa: E402
from tutorial_lib.methods import head_ablation as head_ablation_mod  # noqa: E402
from tutorial_lib.zoo.families import FAMILIES  # noqa: E402

FAMILY_HEADS = ["a0.h1", "a1.h2", "a1.h3"]  # under GQA (2 groups of 2): h1 shares group 0, h2 and h3 group 1
PAIRS = [(c.layer, c.head) for c in parse_many(FAMILY_HEADS)]


def family_probe(n=8, seed=1):
    return PlantedPairProbe(*planted_pair_tokens(n, 20, 61, seed=seed))


from family_reference import family_model  # noqa: E402,F401  (one stand-in model per family for these tests)


def close(got, want):
    return bool(torch.allclose(got, want, atol=1e-5, rtol=1e-4))


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_family_ablation_matches_the_slow_reference(family):
    """Zero, mean and resample ablation of heads (a query head's own slice of hook_z, the model recomputing
    every norm, the soft caps, windows and experts after it) against ablation through hook_result in a reference
    that runs one example per forward; and the induction metrics evaluate_induction reads from it, per example."""
    model, probe = family_model(family), family_probe()
    ref_tokens = family_probe(seed=2).tokens
    sources = resample_sources(probe.n, seed=0)
    with torch.no_grad():
        clean = model(probe.tokens)
    for mode in ("zero", "mean", "resample"):
        got = run_with_ablation(model, probe.tokens, FAMILY_HEADS, mode, reference=None if mode == "zero" else ref_tokens,
                                sources=sources if mode == "resample" else None)
        want = ablated_logits(model, probe.tokens, PAIRS, mode, ref_tokens, sources)
        assert close(got, want), (family, mode, float((got - want).abs().max()))
        assert (want - clean).abs().max() > 1e-2  # the ablation matters
    metrics = evaluate_induction(model, probe, FAMILY_HEADS, batch_size=3)
    want = induction_metrics(ablated_logits(model, probe.tokens, PAIRS), probe)
    for m in ("top1", "top5", "loss", "logit_b"):
        assert close(metrics[m].double(), want[m].double()), (family, m)
    assert count_hooks(model) == 0


def additive_shortcut(model, heads, mode="zero", **kw):
    """Planted bug: subtract each ablated head's z_h @ W_O[h] from hook_attn_out (the norm on the summed output
    frozen: exact only where there is none)."""
    store, hooks = {}, []
    for l in sorted({c.layer for c in parse_many(list(heads))}):
        hs = [c.head for c in parse_many(list(heads)) if c.layer == l]

        def grab(z, hook, l=l):
            store[l] = z

        def sub(out, hook, l=l, hs=hs):
            return out - torch.einsum("bphk,hkd->bpd", store[l][:, :, hs], model.blocks[l].attn.W_O[hs])
        hooks += [(f"blocks.{l}.attn.hook_z", grab), (f"blocks.{l}.hook_attn_out", sub)]
    return hooks


def through_values(group):
    """Planted bug (``group(h, n_kv)`` = the value head zeroed for query head h): ablate a head through hook_v."""
    def make(model, heads, mode="zero", **kw):
        G = model.cfg.n_key_value_heads or model.cfg.n_heads
        hooks = []
        for c in parse_many(list(heads)):
            def zero(v, hook, g=group(c.head, G)):
                v = v.clone()
                v[:, :, g] = 0.0
                return v
            hooks.append((f"blocks.{c.layer}.attn.hook_v", zero))
        return hooks
    return make


def test_planted_bugs_are_caught(monkeypatch):
    """Each planted bug fails the comparison with the hook_result reference where it is wrong, and only there:
    the additive shortcut on Gemma 2 and OLMo-2 (exact on pre-norm Llama); zeroing the value head h % groups on
    the grouped families; zeroing query head h's own value under the ungrouped view (core.view.engine_view) is exact everywhere."""
    probe = family_probe()

    def gap(family, bug, ungroup=False):
        m = family_model(family)
        want = induction_metrics(ablated_logits(m, probe.tokens, PAIRS), probe)["logit_b"].double()
        with monkeypatch.context() as mp:
            mp.setattr(head_ablation_mod, "ablation_hooks", bug)
            if ungroup:
                with engine_view(m):
                    got = evaluate_induction(m, probe, FAMILY_HEADS)["logit_b"].double()
            else:
                got = evaluate_induction(m, probe, FAMILY_HEADS)["logit_b"].double()
        return float(((got - want).abs() / (1e-5 + 1e-4 * want.abs())).max())  # > 1: outside the tolerance

    assert gap("gemma2", additive_shortcut) > 1 and gap("olmo2", additive_shortcut) > 1
    assert gap("llama", additive_shortcut) < 1 and gap("pythia", additive_shortcut) < 1
    for f in ("llama", "qwen3", "gemma2"):
        assert gap(f, through_values(lambda h, G: h % G)) > 1, f
        assert gap(f, through_values(lambda h, G: h), ungroup=True) < 1, f  # one value per query head: exact
