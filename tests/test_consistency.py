"""Tests for tutorial_lib.methods.consistency (and its figures in tutorial_lib.viz.consistency)."""
from __future__ import annotations

import math


import numpy as np
import plotly.graph_objects as go
import pytest
import torch
from conftest import make_tiny_model
from transformer_lens import HookedTransformer

from tutorial_lib.methods import consistency as C
from tutorial_lib.studies import consistency as SC
from tutorial_lib.viz import consistency as VC
from tutorial_lib.methods.attribution import EAPScores, eap_scores
from tutorial_lib.core.circuits import Circuit
from tutorial_lib.core.components import all_components
from tutorial_lib.tasks.base import TaskData

torch.set_num_threads(1)
VOCAB = 30


@pytest.fixture(scope="module")
def model():
    return make_tiny_model(d_vocab=VOCAB, n_ctx=12, train=True)


def make_task(model, name, seed, n=12, pos=6, n_wrong=3):
    """Random prompts; the answer is the model's own top token at the end, so clean accuracy is 1;
    the wrong answers are the next ``n_wrong`` tokens of the model's ranking."""
    g = torch.Generator().manual_seed(seed)
    clean = torch.randint(0, VOCAB, (n, pos), generator=g)
    corrupt = clean.clone()
    corrupt[:, 1] = (clean[:, 1] + torch.randint(1, VOCAB, (n,), generator=g)) % VOCAB
    with torch.no_grad():
        final = model(clean)[:, -1]
    order = final.argsort(-1, descending=True)
    return TaskData(name, [""] * n, [""] * n, clean, corrupt, end_pos=torch.full((n,), pos - 1),
                    answers=order[:, 0], wrong=order[:, 1 : 1 + n_wrong])


def fake_scores(nodes, components):
    return EAPScores(nodes=nodes, components=components, edges=None, graph=None, metric=torch.zeros(len(nodes)),
                     signed_nodes=nodes)


# ------------------------------------------------------------------ consistency, against set-based references
def test_shared_set_and_reuse_match_set_reference():
    g = torch.Generator().manual_seed(0)
    member = torch.rand(9, 12, generator=g) < 0.4
    member[:, 3] = True  # in every circuit
    names = [f"a0.h{i}" for i in range(12)]
    circuits = [{names[j] for j in range(12) if member[i, j]} for i in range(9)]
    for p in (100, 95, 50, 34, 10):
        need = math.ceil(p / 100 * 9)
        ref = {c for c in names if sum(c in s for s in circuits) >= need}
        assert set(C.shared_set(member, names, p).nodes) == ref
        ref_reuse = np.mean([len(s & ref) / len(s) for s in circuits if s])
        assert C.reuse_at(member, p) == pytest.approx(ref_reuse)
    assert "a0.h3" in C.shared_set(member, names, 100)
    with pytest.raises(ValueError, match="percentage"):
        C.shared_set(member, names, 0)
    with pytest.raises(ValueError, match="names"):
        C.shared_set(member, names[:-1], 50)


def test_random_membership_is_seeded_and_sized():
    a, b = C.random_membership(20, 15, 4, seed=3), C.random_membership(20, 15, 4, seed=3)
    assert torch.equal(a, b) and torch.all(a.sum(1) == 4)
    assert not torch.equal(a, C.random_membership(20, 15, 4, seed=4))
    with pytest.raises(ValueError, match="k must"):
        C.random_membership(5, 4, 0)


def test_reuse_sweep_consistent_circuits_beat_random():
    names = [f"a{l}.h{h}" for l in range(4) for h in range(5)]
    g = torch.Generator().manual_seed(1)
    base = torch.linspace(2, 0, len(names))  # every example ranks the same components first
    scores = fake_scores(base + 0.05 * torch.rand(40, len(names), generator=g), names)
    sweep = C.reuse_sweep(scores, ks=(0.1, 0.2, 0.3), ps=(50, 100))
    for j, k in enumerate(sweep.ks):
        member = scores.top_k(k)
        assert sweep.reuse[1, j] == pytest.approx(C.reuse_at(member, 100))
        assert sweep.shared_size[0, j] == C.shared_mask(member, 50).sum()
    assert torch.all(sweep.reuse[:, 0] == 1.0)  # the top 2 never change
    assert torch.all(sweep.reuse > sweep.random_reuse)
    assert isinstance(VC.plot_reuse_sweep(sweep), go.Figure)


def test_composition_matches_loop():
    names = ["a0.h0", "a0.h1", "m0", "a1.h0", "a1.h1", "m1"]
    g = torch.Generator().manual_seed(2)
    scores = fake_scores(torch.rand(10, 6, generator=g), names)
    res = C.composition(scores, ks=(0.2, 0.5))
    for j, k in enumerate(res.ks):
        circuits = [[names[c] for c in range(6) if m[c]] for m in scores.top_k(k).tolist()]
        assert res.mlp_share[j] == pytest.approx(np.mean([sum(c.startswith("m") for c in s) / len(s) for s in circuits]))
        layer1 = np.mean([sum(c[1] == "1" for c in s) / len(s) for s in circuits])
        assert res.layer_share[j, 1] == pytest.approx(layer1)
        assert res.layer_share[j].sum() == pytest.approx(1.0)
    fig = VC.plot_composition(res)
    assert fig.layout.xaxis.title.text and fig.layout.yaxis.title.text


# ------------------------------------------------------------------ ablations, against hand-written hooks
def manual_accuracy(model, task, names):
    """Accuracy with ``names`` zero-ablated, with hooks written here (not tutorial_lib.core.circuits)."""
    hooks = []
    for name in names:
        if name.startswith("a"):
            l, h = (int(x) for x in name[1:].split(".h"))

            def f(act, hook, h=h):
                act = act.clone()
                act[:, :, h] = 0
                return act
            hooks.append((f"blocks.{l}.attn.hook_z", f))
        else:
            hooks.append((f"blocks.{int(name[1:])}.hook_mlp_out", lambda act, hook: torch.zeros_like(act)))
    with torch.no_grad(), model.hooks(fwd_hooks=hooks):
        return task.accuracy(model(task.clean))


def test_necessity_against_manual_ablation(model):
    task = make_task(model, "t1", seed=0)
    circuit = Circuit(["m0", "a1.h2", "a0.h1"], name="S")
    res = C.necessity(model, task, circuit, seeds=(0, 1, 2), n_permutations=500, batch_size=5)
    assert torch.all(res.clean == 1.0)
    assert torch.allclose(res.circuit_drop, 1.0 - manual_accuracy(model, task, circuit.nodes))
    for ctrl, drops in zip(res.controls, res.random_drops):
        assert len(ctrl.heads) == 2 and len(ctrl.mlps) == 1 and not (ctrl.nodes & circuit.nodes)
        assert torch.allclose(drops, 1.0 - manual_accuracy(model, task, ctrl.nodes))
    diff = res.circuit_drop - res.random_drops.mean(0)
    assert res.excess == pytest.approx(float(diff.mean()), abs=1e-6)
    if res.random_drop > 0:
        assert res.ratio == pytest.approx(float(res.circuit_drop.mean()) / res.random_drop)
    assert 0 < res.p_value <= 1 and len(res.p_values) == 3
    if torch.all(diff == 0):
        assert res.p_value == 1.0  # identical per-example drops cannot be significant
    assert isinstance(VC.plot_necessity(res), go.Figure)


@pytest.mark.parametrize("mode", ["mean", "resample"])
def test_necessity_other_ablation_modes(model, mode):
    task = make_task(model, "t1", seed=5, n=10)
    circuit = Circuit(["m1", "a0.h2"])
    res = C.necessity(model, task, circuit, mode=mode, measure="logit_diff", seeds=(0,), n_permutations=200, batch_size=4)
    assert torch.isfinite(res.circuit_drop).all() and res.mode == mode
    # mean ablation with the whole task as reference equals one pass with the library's hooks
    if mode == "mean":
        from tutorial_lib.core.circuits import run_with_ablation
        ref = task.logit_diff(run_with_ablation(model, task.clean, circuit, "mean", reference=task.clean))
        assert torch.allclose(res.clean - res.circuit_drop, ref, atol=1e-5)
    with pytest.raises(ValueError, match="measure"):
        C.necessity(model, task, circuit, measure="nope")


def test_necessity_detects_a_planted_necessary_mlp(model):
    """Make m1 dominate the output: ablating it must beat random single heads, with a small p."""
    big = HookedTransformer(model.cfg)
    big.load_state_dict(model.state_dict())
    with torch.no_grad():
        big.blocks[1].mlp.W_out.mul_(50.0)
    task = make_task(big, "planted", seed=1, n=40, n_wrong=VOCAB - 1)  # accuracy = top-1
    res = C.necessity(big, task, Circuit(["m1"]), measure="logit_diff", seeds=range(3), n_permutations=2000)
    print(f"planted: logit-diff drop {float(res.circuit_drop.mean()):.2f} vs random {res.random_drop:.2f}")
    assert res.circuit_drop.mean() > 0.5 * res.clean.mean()
    assert res.p_value < 0.01 and res.ratio > 2


def test_cross_task_and_decomposition_against_manual(model):
    tasks = {"t1": make_task(model, "t1", seed=2), "t2": make_task(model, "t2", seed=3)}
    shared = {"t1": Circuit(["m0", "a0.h1", "a1.h3"]), "t2": Circuit(["m0", "a1.h0"])}
    res = C.cross_task_matrix(model, tasks, shared, control_seeds=(0, 1))
    for i, src in enumerate(res.names):
        for j, tgt in enumerate(res.names):
            ref = 1.0 - manual_accuracy(model, tasks[tgt], shared[src].nodes).mean()
            assert res.drop[i, j] == pytest.approx(float(ref), abs=1e-6)
    spec = res.specificity()
    assert spec["t1"] == pytest.approx(float(res.drop[0, 0] - res.drop[1, 0]))
    assert isinstance(VC.plot_cross_task(res), go.Figure)

    dec = C.decompose(model, tasks["t1"], tasks["t2"], shared["t1"], shared["t2"], seeds=(0,))
    assert set(dec.sets["shared core"].nodes) == {"m0"}
    assert set(dec.sets["task-specific"].nodes) == {"a0.h1", "a1.h3"} and set(dec.sets["complementary"].nodes) == {"a1.h0"}
    ref = 1.0 - manual_accuracy(model, tasks["t2"], ["a0.h1", "a1.h3"]).mean()
    assert dec.drop["task-specific"]["t2"] == pytest.approx(float(ref), abs=1e-6)
    assert isinstance(VC.plot_decomposition(dec), go.Figure)
    with pytest.raises(ValueError, match="same names"):
        C.cross_task_matrix(model, tasks, {"t1": shared["t1"]})


def _pmf(x, n, k, draws):
    """Hypergeometric P(X = x): x of ``draws`` items fall in a marked subset of size k out of n."""
    return math.comb(k, x) * math.comb(n - k, draws - x) / math.comb(n, draws)


def _expected_jaccard(n_h, n_m, a, b):
    """Exact E[J] for random sets with (a_h, a_m) and (b_h, b_m) heads/MLPs from n_h heads and n_m MLPs."""
    total = 0.0
    for xh in range(min(a[0], b[0]) + 1):
        ph = _pmf(xh, n_h, a[0], b[0])
        for xm in range(min(a[1], b[1]) + 1):
            pm = _pmf(xm, n_m, a[1], b[1])
            x = xh + xm
            union = sum(a) + sum(b) - x
            total += ph * pm * (x / union if union else 1.0)
    return total


def test_jaccard_matrix_observed_and_random_baseline(model):
    shared = {"x": Circuit(["m0", "m1", "a0.h0", "a0.h1"]), "y": Circuit(["m0", "a0.h1", "a1.h2"]),
              "z": Circuit(["a1.h3"])}
    res = C.jaccard_matrix(model, shared, n_random=3000, seed=0)
    assert res.observed[0, 1] == pytest.approx(2 / 5) and res.observed[0, 2] == 0 and res.observed[1, 1] == 1
    assert torch.equal(res.random_mean, res.random_mean.T)
    sizes = {"x": (2, 2), "y": (2, 1), "z": (1, 0)}
    for i, a in enumerate(shared):
        for j, b in enumerate(shared):
            exact = _expected_jaccard(8, 2, sizes[a], sizes[b])
            se = max(float(res.random_std[i, j]) / math.sqrt(3000), 1e-9)
            assert abs(float(res.random_mean[i, j]) - exact) < 5 * se + 1e-9, (a, b)
    assert isinstance(VC.plot_jaccard(res), go.Figure)


# ------------------------------------------------------------------ end to end on EAP scores
def test_end_to_end_from_eap(model):
    task = make_task(model, "t1", seed=4, n=16)
    scores = eap_scores(model, task, batch_size=8, progress=False)
    member = scores.top_k(0.2)
    s50 = C.shared_set(member, scores.components, 50)
    assert set(s50.nodes) <= set(all_components(model))
    assert set(C.shared_set(member, scores.components, 100).nodes) <= set(s50.nodes)  # S_P shrinks as P grows
    fig = scores.plot()
    assert fig.layout.xaxis.title.text == "head (or MLP)" and len(fig.data[0].z) == 2
    assert isinstance(scores.plot(example=0), go.Figure)
    with pytest.raises(ValueError, match="example"):
        scores.plot(example=99)


# ------------------------------------------------------------------ the study's helpers
def test_study_tasks_match_the_generators():
    from types import SimpleNamespace

    from tutorial_lib.tasks import make_task as make

    zoo_like = SimpleNamespace(tokenizer="zoo", zoo_entry={"mix": {"boolean_ops": [1, 3]}})
    tasks = SC.study_tasks(zoo_like, n=6, seed=2)
    assert list(tasks) == list(SC.STUDY_TASKS) and all(len(t) == 6 for t in tasks.values())
    assert tasks["boolean"].prompts == make("boolean", "zoo", n=6, seed=2, min_ops=1, max_ops=3).prompts
    assert tasks["ioi"].prompts == make("ioi", "zoo", n=6, seed=2).prompts
    zoo_new = SimpleNamespace(tokenizer="zoo", zoo_entry={"mix": {"boolean_ops": [1, 5], "boolean_eval_ops": [2, 4]}})
    assert (SC.study_tasks(zoo_new, n=6, seed=2, names=["boolean"])["boolean"].prompts
            == make("boolean", "zoo", n=6, seed=2, min_ops=2, max_ops=4).prompts)
    hub_like = SimpleNamespace(tokenizer="zoo")  # no zoo entry: the paper's 2-6 operators
    assert SC.study_tasks(hub_like, n=6, seed=2, names=["boolean"])["boolean"].prompts == make("boolean", "zoo", n=6, seed=2).prompts
    with pytest.raises(ValueError, match="unknown task"):
        SC.study_tasks(hub_like, names=["nope"])


def test_shared_sets_per_task():
    names = ["a0.h0", "a0.h1", "m0", "a1.h0", "a1.h1", "m1"]
    g = torch.Generator().manual_seed(5)
    scores = {"x": fake_scores(torch.rand(8, 6, generator=g), names), "y": fake_scores(torch.rand(8, 6, generator=g), names)}
    out = C.shared_sets(scores, 0.5, 75)
    for k, s in scores.items():
        assert out[k].nodes == C.shared_set(s.top_k(0.5), names, 75).nodes and k in out[k].name


def test_matched_control_type_auto_and_count(model):
    from tutorial_lib.core.controls import size_matched_random

    c = Circuit(["m0", "a0.h1", "a1.h2"])
    for seed in range(4):  # type-matching possible: identical to the paper's control
        ctrl = C.matched_control(model, c, seed=seed)
        assert ctrl.nodes == size_matched_random(model, c, seed=seed).nodes and ctrl.meta["match"] == "type"
    both = Circuit(["m0", "m1", "a0.h1"])  # no MLP left outside
    with pytest.raises(ValueError, match="MLPs"):
        C.matched_control(model, both, match="type")
    draws = [C.matched_control(model, both, seed=s) for s in range(10)]
    for d in draws:
        assert len(d) == 3 and len(d.heads) == 3 and not (d.nodes & both.nodes)
        assert d.meta["match"].startswith("auto: 2 MLP(s) replaced by heads")
    assert len({d.nodes for d in draws}) > 1
    assert C.matched_control(model, both, seed=3).nodes == draws[3].nodes  # seeded
    cnt = C.matched_control(model, Circuit(["m0", "a0.h0"]), seed=0, match="count")
    assert len(cnt) == 2 and "m0" not in cnt and "a0.h0" not in cnt and cnt.meta["match"] == "count"
    with pytest.raises(ValueError, match="match"):
        C.matched_control(model, c, match="nope")
    everything = Circuit(all_components(model))
    with pytest.raises(ValueError, match="outside"):
        C.matched_control(model, everything)


def test_task_evaluator_and_necessity_all(model):
    tasks = {"t1": make_task(model, "t1", seed=6, n=9), "t2": make_task(model, "t2", seed=7, n=9)}
    evaluate = C.task_evaluator(model, tasks)
    base = evaluate(frozenset())
    assert base["x"] == ["t1", "t2"] and base["y"] == pytest.approx([1.0, 1.0])
    res = evaluate(frozenset({"m0", "a1.h1"}))
    for k, t in tasks.items():
        assert res["metrics"][k] == pytest.approx(float(manual_accuracy(model, t, ["m0", "a1.h1"]).mean()))
    sets = [{"a0.h2"}, frozenset({"m0", "a1.h1"}), set(), Circuit(["m1", "a0.h0"]).nodes]
    for one, stacked in zip(sets, evaluate.many(sets)):  # several sets in one stacked pass: each as alone
        assert stacked["metrics"] == pytest.approx(evaluate(one)["metrics"], abs=1e-6)
        for k, t in tasks.items():
            assert stacked["metrics"][k] == pytest.approx(float(manual_accuracy(model, t, sorted(one)).mean()))
    shared = {"t1": Circuit(["m0"]), "t2": Circuit(["a1.h1", "m1"])}
    out = SC.necessity_all(model, tasks, shared, seeds=(0, 1), n_permutations=100)
    assert list(out) == ["t1", "t2"]
    for k, r in out.items():
        assert torch.allclose(r.circuit_drop, 1.0 - manual_accuracy(model, tasks[k], shared[k].nodes))
        assert r.meta["match"] == ["type"]


def test_largest_shared_p_picks_the_largest_p_with_a_shared_component():
    from types import SimpleNamespace

    from tutorial_lib.methods.consistency import largest_shared_p

    def scores(member):  # an object with top_k(k) -> membership, like EAPScores
        return SimpleNamespace(top_k=lambda k, m=torch.tensor(member, dtype=torch.bool): m)

    every = scores([[1, 0, 0], [1, 1, 0], [1, 0, 1], [1, 0, 0]])  # component 0 in all 4
    most = scores([[1, 0, 0], [1, 1, 0], [0, 1, 1], [1, 0, 0]])  # component 0 in 3 of 4
    assert largest_shared_p({"a": every}, 0.1) == 100
    assert largest_shared_p({"a": every, "b": most}, 0.1) == 75
    assert largest_shared_p({"a": every, "b": most}, 0.1, ps=(100, 95)) is None
    assert largest_shared_p({"a": every, "b": most}, 0.1, ps=(100, 95), tasks=["a"]) == 100


# ------------------------------------------------------------------ one meaning per ablation (issue 27)
@pytest.mark.parametrize("batch_size", [1, 2, 4, 5])
def test_resample_is_over_the_whole_task_whatever_the_batch(model, batch_size):
    """Example i takes example resample_sources(n, seed)[i]'s activations, as in core ablation, whatever the
    batch size (the old code shuffled within each batch, so a last batch of one row was never ablated)."""
    from tutorial_lib.core.circuits import run_with_ablation

    task = make_task(model, "t", seed=7, n=9)
    comps = ["m1", "a1.h0"]
    for seed in (0, 3):
        got = C.per_example_after_ablation(model, task, comps, mode="resample", measure="logit_diff", seed=seed,
                                           batch_size=batch_size)
        want = task.logit_diff(run_with_ablation(model, task.clean, comps, "resample", reference=task.clean, seed=seed))
        assert torch.allclose(got["clean"] - got["drop"], want, atol=1e-5)
        assert (got["drop"].abs() > 1e-6).all(), "an example kept its own activations"


def test_mean_ablation_of_a_padded_task_leaves_padding_out(model):
    """Right-padded prompts of different lengths: the mean per position is over real tokens only."""
    from tutorial_lib.core.circuits import run_with_ablation

    task = make_task(model, "padded", seed=8, n=8)
    end = torch.tensor([5, 3, 5, 2, 4, 5, 3, 5])
    clean = task.clean.clone()
    for b, e in enumerate(end.tolist()):
        clean[b, e + 1:] = 0  # padding
    task = TaskData("padded", [""] * 8, [""] * 8, clean, clean.clone(), end, task.answers, task.wrong)
    valid = torch.arange(6)[None] <= end[:, None]
    got = C.per_example_after_ablation(model, task, ["m0"], mode="mean", measure="logit_diff", batch_size=3)
    _, cache = model.run_with_cache(clean)
    act = cache["blocks.0.hook_mlp_out"]
    mean = torch.stack([act[valid[:, p], p].mean(0) for p in range(6)])

    def hook(a, hook):
        return mean[None].expand_as(a).clone()

    with torch.no_grad(), model.hooks(fwd_hooks=[("blocks.0.hook_mlp_out", hook)]):
        want = task.logit_diff(model(clean))
    assert torch.allclose(got["clean"] - got["drop"], want, atol=1e-5)
    with_pads = task.logit_diff(run_with_ablation(model, clean, ["m0"], "mean", reference=clean))
    assert not torch.allclose(with_pads, want, atol=1e-4)


def test_necessity_says_when_its_control_is_weaker_than_the_papers(model):
    task = make_task(model, "t1", seed=0)
    typed = C.necessity(model, task, Circuit(["m0", "a1.h2"]), seeds=(0, 1), n_permutations=50)
    assert typed.type_matched and typed.control_kind.startswith("type-matched")
    assert typed.summary()["control"] == typed.control_kind
    weak = C.necessity(model, task, Circuit(["m0", "m1", "a1.h2"]), seeds=(0, 1), n_permutations=50)  # no MLP left
    assert not weak.type_matched and "weaker than the paper's" in weak.control_kind
    assert all(len(c.mlps) == 0 and len(c) == 3 for c in weak.controls)
    with pytest.raises(ValueError, match="size-matched"):
        C.necessity(model, task, Circuit(["m0", "m1", "a1.h2"]), seeds=(0,), n_permutations=50, match="type")


def test_mean_edge_scores_is_the_mean_over_each_components_own_edges(model):
    """mean-edge node score against a slow loop over the edge tensor: mean |edge| over the edges leaving each component."""
    task = make_task(model, "t", seed=3)
    scores = eap_scores(model, task, metric="logit_diff", progress=False)
    mean = C.mean_edge_scores(scores)
    mask = scores.graph.edge_mask()
    for j, comp in enumerate(scores.components):
        s = scores.graph.senders.index(comp)
        receivers = [r for r in range(mask.shape[1]) if mask[s, r]]
        want = torch.stack([scores.edges[:, s, r].abs() for r in receivers]).mean(0)
        torch.testing.assert_close(mean.nodes[:, j], want, rtol=1e-4, atol=1e-6)
    assert mean.meta["node_score"] == "mean-edge" and scores.meta.get("node_score") is None
    # the sum favours fan-out: the last layer's components have fewer edges, so their mean is their sum over fewer
    assert not torch.allclose(mean.nodes, scores.nodes)


@pytest.mark.parametrize("mode", ["zero", "mean", "resample"])
@pytest.mark.parametrize("batch_size", [1, 2, 5])
def test_stacked_jobs_equal_one_run_each(model, mode, batch_size):
    """Several ablations stacked along the batch (necessity's clean run, circuit and controls in one pass) give
    what core's run_with_ablation gives for each alone, with each job's own resample seed."""
    from tutorial_lib.core.circuits import run_with_ablation

    task = make_task(model, "t", seed=9, n=7)
    jobs = [((), 0), (["m1", "a1.h0"], 0), (["a0.h2"], 3), (Circuit(["m0", "a0.h1", "a1.h3"]), 1), (["m1"], 2)]
    got = C._values_many(model, task, jobs, mode, "logit_diff", batch_size)
    for (comps, seed), vals in zip(jobs, got):
        want = task.logit_diff(run_with_ablation(model, task.clean, comps, mode, reference=task.clean, seed=seed)
                               if len(comps) else model(task.clean))
        assert torch.allclose(vals, want, atol=1e-5), (comps, seed)
