"""tutorial_lib.studies.spectral, the notebook glue of the spectral recipe: probe, candidate selection, panel evaluate, train-or-load cache."""
import pytest
import torch

from tutorial_lib.methods.head_ablation import evaluate_induction
from tutorial_lib.methods.selectivity import PATTERNS
from tutorial_lib.studies.spectral import (
    candidate_circuit, panel_evaluate, planted_probe, pr_rises_first, prev_token_heads, query_attention, train_or_load,
)
from tutorial_lib.zoo.induction_models import make_model

torch.set_num_threads(1)


def test_planted_probe_is_valid_and_seeded():
    p = planted_probe(64, 48, seed=3)
    assert p.n <= 64 and p.n > 40 and p.seq_len == 48
    assert bool(((p.a_pos >= 1) & (p.a_pos <= 40)).all())
    assert torch.equal(p.tokens, planted_probe(64, 48, seed=3).tokens)


def _sel(ind, prev):
    s = {k: torch.zeros(2, 4) for k in PATTERNS}
    s["induction"], s["previous-token"] = torch.tensor(ind), torch.tensor(prev)
    return s


def test_candidate_circuit_keeps_one_head_per_layer_free():
    model = make_model("small", 0)
    s = _sel([[0.0, 1, 2, 3], [60, 90, 70, 200]], [[40, 2, 35, 1], [0, 0, 0, 0]])
    # induction: all 4 layer-1 heads pass, only the best 2 (n_heads // 2) are kept; prev-token: a0.h0, a0.h2
    assert candidate_circuit(s, model) == ["a1.h3", "a1.h1", "a0.h0", "a0.h2"]
    assert candidate_circuit(s, model, prev_threshold=None, per_layer=3) == ["a1.h3", "a1.h1", "a1.h2"]
    assert candidate_circuit(s, model, k=2) == ["a1.h3", "a1.h1"]
    assert candidate_circuit(s, model, induction_threshold=95, prev_threshold=38) == ["a1.h3", "a0.h0"]
    with pytest.raises(ValueError, match="per_layer"):
        candidate_circuit(s, model, per_layer=4)
    assert prev_token_heads(s, 30) == ["a0.h0", "a0.h2"]
    assert prev_token_heads(s, 50) == []
    assert prev_token_heads(s, 30, max_heads=1) == ["a0.h0"]


def test_panel_evaluate_matches_evaluate_induction():
    model = make_model("small", 0)
    probe = planted_probe(16, 48)
    ev = panel_evaluate(model, probe)
    out = ev(frozenset({"a1.h0"}))
    ref = evaluate_induction(model, probe, ["a1.h0"])
    assert out["metrics"]["loss on B (nats)"] == pytest.approx(float(ref["loss"].mean()), abs=1e-3)
    assert out["y"][0] == pytest.approx(100 * float(ref["top1"].mean()))
    assert len(out["x"]) == len(out["y"]) == 2


def test_query_attention_rows_sum_to_one():
    model = make_model("small", 0)
    probe = planted_probe(8, 48)
    att = query_attention(model, probe)
    assert att.shape == (probe.n, 2, 4, 48)
    assert torch.allclose(att.sum(-1), torch.ones(probe.n, 2, 4), atol=1e-5)


def test_pr_rises_first():
    t = {"a1.h0": (2, 5), "a1.h1": (5, 5), "a1.h2": (None, 3)}
    assert pr_rises_first(t, ["a1.h0", "a1.h1", "a1.h2"]) == {"a1.h0": True, "a1.h1": False, "a1.h2": None}


def test_train_or_load_caches(tmp_path):
    probe = planted_probe(16, 48)
    a = train_or_load("small", 0, 4, probe, n_checkpoints=3, plot=False, root=tmp_path, progress=False)
    assert not a.cached and a.monitor.steps == [0, 1, 4] and a.monitor.pr.shape == (3, 2, 4)
    b = train_or_load("small", 0, 4, probe, n_checkpoints=3, plot=False, root=tmp_path, progress=False)
    assert b.cached and b.monitor.steps == a.monitor.steps
    assert torch.allclose(b.monitor.pr, a.monitor.pr)
    for k, v in a.model.state_dict().items():
        assert torch.equal(v, b.model.state_dict()[k]), k
    with pytest.raises(ValueError, match="steps"):
        train_or_load("small", 0, 1, probe, root=tmp_path)
