"""Path-patching discovery: ``discover_step`` against ``path_patch_sweep`` and the slow reference, on a toy
task, the real greater-than task and the shipped zoo model; the paper's circuit."""
import warnings

import pytest
import torch

warnings.filterwarnings("ignore", category=DeprecationWarning)
torch.set_num_threads(1)

from conftest import PATH_BATCH as BATCH, make_tiny_model  # noqa: E402
from path_reference import all_senders, reference_path_patch  # noqa: E402

from tutorial_lib.methods.circuit_eval import circuit_sufficiency  # noqa: E402
from tutorial_lib.core.circuits import Circuit  # noqa: E402
from tutorial_lib.methods.path_discovery import (  # noqa: E402
    PAPER_GREATER_THAN,
    discover_step,
    head_inputs,
    paper_greater_than_circuit,
)
from tutorial_lib.methods.path_patching import path_patch_sweep, top_senders  # noqa: E402
from tutorial_lib.tasks.base import TaskData  # noqa: E402


def test_discover_step_uses_task_positions(path_model, path_data):
    clean, corrupt, end, yy = path_data
    task = TaskData("toy", [""] * BATCH, [""] * BATCH, clean, corrupt, end, torch.full((BATCH,), 3),
                    torch.full((BATCH, 1), 7), positions={"YY": yy})
    metric = task.metric
    a = discover_step(path_model, task, "logits", "END", progress=False)
    b = path_patch_sweep(path_model, clean, corrupt, "logits", metric, sender_positions=end, progress=False)
    assert torch.allclose(a.heads, b.heads, atol=1e-5) and torch.allclose(a.mlps, b.mlps, atol=1e-5)
    assert a.positions == "END"
    recv = head_inputs(["a2.h1", "a2.h3"], "kv")
    assert recv == ["a2.h1.k", "a2.h1.v", "a2.h3.k", "a2.h3.v"]
    c = discover_step(path_model, task, recv, "YY", progress=False)  # heads read at END by default
    for s in ["a0.h2", "m1"]:
        ref = reference_path_patch(path_model, clean, corrupt, [s], recv, metric, yy, head_out_pos=end)
        assert torch.allclose(c.per_example[s], ref, atol=1e-4)
    with pytest.raises(ValueError, match="unknown position"):
        discover_step(path_model, task, "logits", "XX", progress=False)
    with pytest.raises(ValueError, match="inputs"):
        head_inputs(["a0.h0"], "qz")


def test_paper_circuit_and_greater_than_task_end_to_end():
    """The real greater-than task (zoo tokenizer) on a random model: discovery, then circuit tests."""
    from tutorial_lib.tasks.greater_than import make_greater_than

    circ = paper_greater_than_circuit()
    assert len(circ) == 19 and circ.meta["positions"]["m10"] == "END" and circ.meta["positions"]["a0.h5"] == "YY"
    assert set(circ.nodes) == set(PAPER_GREATER_THAN["END"]) | set(PAPER_GREATER_THAN["YY"])
    task = make_greater_than("zoo", 12, seed=0)
    vocab = int(max(task.clean.max(), task.corrupt.max(), task.year_ids.max())) + 1
    gt_model = make_tiny_model(d_vocab=vocab, act_fn="gelu_new", scale=4.0)
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
    from tutorial_lib.zoo.loading import load_model
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
