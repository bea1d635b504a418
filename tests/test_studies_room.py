"""studies.room: the deep zoo model's targets (room for the controls), measured on the small zoo model."""
import pytest
import torch

from tutorial_lib.studies.room import TARGETS, control_room, missed

torch.set_num_threads(1)


def test_missed_reads_each_bar():
    ok = {"01.mlps_fraction": 0.25, "01.heads_fraction": 0.1, "01.sufficiency": 0.9, "01.mlps_outside_minus_inside": 2,
          "02.tasks_sp_not_every_mlp": 4, "02.random_reuse": 0.05, "03.induction_room": 1}
    assert missed(ok) == {}
    bad = {**ok, "01.mlps_fraction": 0.75, "02.random_reuse": 0.0, "01.sufficiency": 0.79}
    assert set(missed(bad)) == {"01.mlps_fraction", "02.random_reuse", "01.sufficiency"}
    assert missed({**ok, "01.heads_fraction": 0.15}) == {}  # the bar itself passes


def test_control_room_on_the_small_zoo_model():
    from tutorial_lib import load_model

    model = load_model("zoo-multitask", verbose=False)
    room = control_room(model, n_search=16, n_eval=48, n_tasks=16, probe_n=32)
    assert set(TARGETS) <= set(room)
    # 2 layers: the circuit's MLPs are a fraction of 2, and the counts agree with the circuit it lists
    mlps = [c for c in room["01.circuit"] if c.startswith("m")]
    assert room["01.mlps_fraction"] == len(mlps) / 2 and room["01.mlps_outside_minus_inside"] == 2 - 2 * len(mlps)
    assert 0 <= room["02.tasks_sp_not_every_mlp"] <= len(room["02.performed"])
