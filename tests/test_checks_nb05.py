"""The inline checks of notebook 05 accept right answers and reject the usual wrong ones with the intended message."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
import torch

from tutorial_lib.course import checks
from tutorial_lib.course.checks import ExerciseError
from tutorial_lib.studies import answer_key as ak
from tutorial_lib.zoo.answer_key import induction_key

sys.path.insert(0, str(Path(__file__).parent))
import learner_wrong_nb05 as wrong  # noqa: E402

torch.set_num_threads(1)


def _define(source: str, name: str):
    scope = {"torch": torch}
    exec(source, scope)
    return scope[name]


def set_previous_token(model, layer, head, pos):
    attn = model.blocks[layer].attn
    with torch.no_grad():
        for p in range(min(pos.stop - pos.start, attn.W_Q.shape[-1])):
            attn.W_Q[head, pos.start + p, p] = 12.0
            if p + 1 < attn.W_Q.shape[-1]:
                attn.W_K[head, pos.start + p, p + 1] = 1.0


def roc_from_ranking(scores, truth):
    from tutorial_lib.methods.recovery import roc

    r = roc(scores, truth)
    return r.fpr, r.tpr, r.auroc


def test_previous_token_right_and_wrong():
    checks.check_previous_token_head(set_previous_token)
    for label, (source, pattern) in wrong.PREVIOUS_TOKEN.items():
        with pytest.raises(ExerciseError, match=pattern):
            checks.check_previous_token_head(_define(source, "set_previous_token"))


def test_roc_right_and_wrong():
    checks.check_roc(roc_from_ranking)
    for label, (source, pattern) in wrong.ROC.items():
        with pytest.raises(ExerciseError, match=pattern):
            checks.check_roc(_define(source, "roc_from_ranking"))


@pytest.fixture(scope="module")
def facts():
    key = induction_key(seed=0)
    task = key.task(12, seed=0)
    sc, chk = ak.score_key(key, task, ig_steps=3, n_random=2), ak.verify_key(key, task, n_random=2)
    return [ak.edge_facts(sc, chk, f"{s}->{r}") for s, r in sorted(key.circuit.edges)]


def test_why_missed_right_and_wrong(facts):
    checks.check_why_missed(ak.why_missed_answer, facts)
    for label, (source, pattern) in wrong.WHY.items():
        with pytest.raises(ExerciseError, match=pattern):
            checks.check_why_missed(_define(source, "why_missed"), facts)
