"""zoo.answer_key and tasks.answer_key: the hand-built models do their task through their ground-truth circuit only."""
from __future__ import annotations

import pytest
import torch

from tutorial_lib.core.components import all_components
from tutorial_lib.methods.eap_graph import EAPGraph
from tutorial_lib.studies.answer_key import verify_key
from tutorial_lib.zoo.answer_key import answer_key, induction_key, successor_key

torch.set_num_threads(1)


@pytest.fixture(scope="module", params=["induction", "successor"])
def built(request):
    key = answer_key(request.param, seed=0)
    task = key.task(24, seed=0)
    return key, task, verify_key(key, task, n_random=20)


def test_the_model_does_the_task(built):
    key, task, chk = built
    with torch.no_grad():
        assert float(task.accuracy(key.model(task.clean)).mean()) == 1.0
        assert float(task.metric(key.model(task.corrupt)).mean()) < -0.5 * chk.clean  # the corruption flips it
    assert chk.clean > 5


def test_ablating_the_circuit_destroys_the_task(built):
    _, _, chk = built
    for mode in ("zero", "mean", "resample"):
        assert chk.destroyed(mode), (mode, chk.circuit[mode], chk.clean)


def test_no_distractor_alone_or_random_set_destroys_it(built):
    key, _, chk = built
    assert len(chk.random_sets["resample"]) == 20
    for mode in ("zero", "mean", "resample"):
        assert chk.harmless(mode), mode
        assert set(chk.distractors[mode]) == set(key.distractors)


def test_every_ground_truth_edge_cut_alone_changes_the_metric(built):
    key, _, chk = built
    assert set(chk.edges_that_matter("zero")) == {f"{s}->{r}" for s, r in key.circuit.edges}
    # the positional / flag edges are the same in both runs: patching in the corrupted run cannot see them
    assert "embed->a0.h0.q" not in chk.edges_that_matter("corrupt")


def test_circuit_and_distractors_cover_the_model(built):
    key, _, _ = built
    assert set(key.circuit.nodes) | set(key.distractors) == set(all_components(key.model))
    graph = EAPGraph.from_model(key.model)
    for s, r in key.circuit.edges:
        assert s in graph.senders and r in graph.receivers
    used = sum(b.stop - b.start for b in key.layout.values())
    assert used < key.model.cfg.d_model  # spare residual dimensions: the circuit does not fill the model


def test_distractors_move_between_clean_and_corrupted(built):
    """Some distractors change their output at the read position: a method cannot win by ignoring what moves."""
    key, task, _ = built
    key.model.set_use_attn_result(True)
    try:
        with torch.no_grad():
            _, c = key.model.run_with_cache(task.clean)
            _, k = key.model.run_with_cache(task.corrupt)
    finally:
        key.model.set_use_attn_result(False)
    end = task.end_pos
    moved = []
    for d in key.distractors:
        name = f"blocks.{d[1:]}.hook_mlp_out" if d.startswith("m") else f"blocks.{d[1]}.attn.hook_result"
        pick = (lambda a: a) if d.startswith("m") else (lambda a, h=int(d.split(".h")[1]): a[:, :, h])
        diff = (pick(c[name]) - pick(k[name]))[torch.arange(len(end)), end].norm(dim=-1).mean()
        moved.append(float(diff) > 0.3)
    assert sum(moved) >= 2


def test_seeded():
    a, b, c = induction_key(seed=3), induction_key(seed=3), induction_key(seed=4)
    assert torch.equal(a.model.W_Q, b.model.W_Q) and not torch.equal(a.model.W_Q, c.model.W_Q)
    t1, t2 = successor_key(seed=0).task(8, seed=1), successor_key(seed=0).task(8, seed=1)
    assert torch.equal(t1.clean, t2.clean) and torch.equal(t1.corrupt, t2.corrupt)
    with pytest.raises(ValueError, match="unknown answer key"):
        answer_key("nope")


def test_tasks_shapes():
    from tutorial_lib.tasks.answer_key import make_repeat_task, make_successor_task

    t = make_repeat_task(range(1, 13), bos=0, n=16, seed=0)
    assert (t.clean[:, 7:] == t.corrupt[:, 7:]).all() and (t.wrong[:, 0] != t.answers).all()
    src = t.positions["ANSWER_SRC"]
    assert (t.clean[torch.arange(16), src] == t.answers).all()  # the answer follows the cue's first occurrence
    s = make_successor_task([1, 2, 3], [4, 5], 6, 0, {1: 2, 2: 3, 3: 1}, n=10, seed=0)
    where = s.positions["NUMBER"]
    assert ((s.clean != s.corrupt).sum(1) == 1).all() and (s.clean[torch.arange(10), where] != s.corrupt[torch.arange(10), where]).all()
    with pytest.raises(ValueError, match="at least"):
        make_repeat_task(range(1, 5), bos=0)
