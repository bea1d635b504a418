"""viz.answer_key: the figures of notebook 05 have the traces they claim."""
from __future__ import annotations

import torch

from tutorial_lib.studies.answer_key import score_key
from tutorial_lib.viz.answer_key import plot_patterns, plot_roc, plot_weight_circuits
from tutorial_lib.zoo.answer_key import induction_key, successor_key

torch.set_num_threads(1)


def test_figures():
    key = induction_key(seed=0)
    task = key.task(8, seed=0)
    pat = plot_patterns(key, task)
    assert len(pat.data) == 2 and pat.data[0].z.shape == (task.clean.shape[1],) * 2
    w = plot_weight_circuits(key)
    qk = w.data[0].z
    assert qk.shape == (16, 16) and all(qk[i].argmax() == i - 1 for i in range(1, 16))  # a shifted diagonal
    s = successor_key(seed=0)
    ws = plot_weight_circuits(s)
    lut = ws.data[1].z  # number n -> logit of n + 1
    assert all(lut[i].argmax() == (i + 1) % len(s.vocab["numbers"]) for i in range(len(s.vocab["numbers"])))
    sc = score_key(s, s.task(8, seed=0), ig_steps=2, n_random=2)
    fig = plot_roc({"successor": sc}, "edges")
    names = [t.name for t in fig.data]
    assert any("EAP-IG (AUROC" in n for n in names) and any("path-patching search" in n for n in names)
