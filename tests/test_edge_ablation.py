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
