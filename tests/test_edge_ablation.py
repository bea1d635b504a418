"""methods.edge_ablation: one edge cut with any ablation, against path patching and an analytic reference."""
from __future__ import annotations

import pytest
import torch

from tutorial_lib.methods.edge_ablation import edge_cut_effects
from tutorial_lib.methods.eap_graph import EAPGraph
from tutorial_lib.methods.path_patching import path_patch_sweep
from tutorial_lib.zoo.answer_key import induction_key

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def setup():
    key = induction_key(seed=0)
    return key, key.task(12, seed=0), EAPGraph.from_model(key.model)


def test_corrupt_cut_equals_path_patching(setup):
    key, task, g = setup
    for r in ("a1.h0.k", "a1.h0.v", "m1", "logits"):
        eff, _ = edge_cut_effects(key.model, task, "corrupt", edges=[(s, r) for s in ("embed", "a0.h0", "a0.h1")])
        pp = path_patch_sweep(key.model, task.clean, task.corrupt, r, task.metric, senders=["embed", "a0.h0", "a0.h1"],
                              logit_positions=task.end_pos, progress=False)
        for s in ("embed", "a0.h0", "a0.h1"):
            assert float(eff[g.senders.index(s), g.receivers.index(r)]) == pytest.approx(pp.effects[s], abs=1e-3)


def test_zero_cut_into_logits_is_subtracting_the_direct_path(setup):
    key, task, g = setup
    model = key.model
    eff, base = edge_cut_effects(model, task, "zero", edges=[("a1.h0", "logits")])
    model.set_use_attn_result(True)
    try:
        with torch.no_grad():
            logits, cache = model.run_with_cache(task.clean)
    finally:
        model.set_use_attn_result(False)
    direct = (cache["blocks.1.attn.hook_result"][:, :, 0] @ model.W_U).detach()  # no final norm: the logits are linear in it
    want = float(task.metric(logits - direct).mean()) - base
    assert float(eff[g.senders.index("a1.h0"), g.receivers.index("logits")]) == pytest.approx(want, abs=1e-4)


def test_modes_and_errors(setup):
    key, task, g = setup
    e = [("embed", "a0.h0.q")]
    zero, _ = edge_cut_effects(key.model, task, "zero", edges=e)
    mean, _ = edge_cut_effects(key.model, task, "mean", edges=e)
    i, j = g.senders.index("embed"), g.receivers.index("a0.h0.q")
    assert zero[i, j] < -3 and abs(float(mean[i, j])) < 0.1  # positions are the same in every row: their mean is themselves
    assert int((zero != 0).sum()) == 1
    with pytest.raises(ValueError, match="unknown edge ablation"):
        edge_cut_effects(key.model, task, "noise")


# ------------------------------------------------------------------ every family of the course
from faithfulness_reference import reference_patched_metric  # noqa: E402
from test_faithfulness import family_task  # noqa: E402

from tutorial_lib.core.circuits import resample_sources  # noqa: E402
from tutorial_lib.methods.path_patching import path_patch  # noqa: E402
from tutorial_lib.zoo.families import FAMILIES, tiny_family_model  # noqa: E402

FAMILY_EDGES = [("a0.h1", "a1.h1.k"), ("a0.h2", "a1.h0.v"), ("a0.h1", "a1.h3.k"), ("embed", "a1.h2.q"),
                ("embed", "logits"), ("a1.h3", "logits"), ("m0", "a1.h3.k")]


@pytest.fixture(scope="module", params=sorted(FAMILIES))
def family(request):
    return request.param, tiny_family_model(request.param, dtype=torch.float64, scale=2.5, seed=6), family_task()


def test_corrupt_cut_is_path_patching_on_every_family(family):
    """The review's cases among them: GQA's a0.h1 -> a1.h1.k / a1.h3.k, Gemma 2's a0.h2 -> a1.h0.v, rotary embed edges."""
    name, model, task = family
    eff, base = edge_cut_effects(model, task, "corrupt", metric="logit_diff", edges=FAMILY_EDGES)
    g = EAPGraph.from_model(model)
    for s, r in FAMILY_EDGES:
        want = path_patch(model, task.clean, task.corrupt, [s], [r], task.logit_diff)["patched"].mean().item() - base
        got = float(eff[g.senders.index(s), g.receivers.index(r)])
        assert got == pytest.approx(want, abs=2e-5), (name, s, r, got, want)
    assert float(eff.abs().max()) > 1e-3  # the cuts move the metric


@pytest.mark.parametrize("mode", ["zero", "mean", "resample"])
def test_ablated_cuts_match_the_slow_reference_on_every_family(family, mode):
    name, model, task = family
    g = EAPGraph.from_model(model)
    eff, base = edge_cut_effects(model, task, mode, metric="logit_diff", edges=FAMILY_EDGES[:4], seed=3)
    src = resample_sources(len(task), 3)
    clean = reference_patched_metric(model, task, g.edge_mask(), metric=task.logit_diff)
    assert base == pytest.approx(clean, abs=2e-5)
    for s, r in FAMILY_EDGES[:4]:
        circuit = g.edge_mask().clone()
        circuit[g.senders.index(s), g.receivers.index(r)] = False
        want = reference_patched_metric(model, task, circuit, metric=task.logit_diff, ablation=mode, sources=src) - clean
        assert float(eff[g.senders.index(s), g.receivers.index(r)]) == pytest.approx(want, abs=2e-5), (name, mode, s, r)


def test_an_edge_that_is_not_in_the_graph_is_refused(setup):
    key, task, g = setup
    with pytest.raises(ValueError, match="not an edge"):
        edge_cut_effects(key.model, task, "zero", edges=[("a1.h0", "a0.h0.q")])
