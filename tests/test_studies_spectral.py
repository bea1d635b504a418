"""tutorial_lib.studies.spectral, the notebook glue of the spectral recipe: probe, candidate selection, panel evaluate, train-or-load cache."""
import pytest
import torch

from tutorial_lib.methods.head_ablation import evaluate_induction
from tutorial_lib.methods.selectivity import PATTERNS
from tutorial_lib.core.circuits import run_with_ablation
from tutorial_lib.core.controls import layer_matched_random, layer_upper_bound, paired_permutation_test
from tutorial_lib.methods.head_ablation import induction_metrics
from tutorial_lib.studies.spectral import (
    FLIP_CLAIMS, candidate_circuit, flip_table, control_induction_heads, verification_reading, damage, greedy_ablation_path, panel_evaluate, planted_probe,
    pr_rises_first, prev_token_heads, query_attention, threshold_label, train_or_load,
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


def test_verification_reading_and_the_controls_induction_heads():
    from tutorial_lib.methods.head_ablation import verify_circuit
    from tutorial_lib.methods.selectivity import classify_heads, selectivity
    from tutorial_lib.zoo import store

    model = store.load_model_from_zoo("zoo-induction-small")
    probe = planted_probe(64, 48)
    sel = selectivity(model, probe)
    candidate = candidate_circuit(sel, model)
    result = verify_circuit(model, candidate, probe, n_control_seeds=3, seed=0, n_permutations=200)
    drawn, ind = control_induction_heads(result, ["a1.h0", "a1.h1", "a1.h2", "a1.h3"])
    assert drawn == sorted({h for hs, _, _ in result.distinct_controls() for h in hs}) and set(drawn).isdisjoint(candidate)
    assert ind == [h for h in drawn if h.startswith("a1.")]
    classes = classify_heads(sel, 30.0, 50.0)
    text = verification_reading(result, candidate, classes)
    assert f"{100 * result.candidate['top1']:.1f}% without the {len(candidate)} candidate heads" in text
    assert f"{100 * result.control_mean():.1f}% without matched random heads" in text
    assert f"{100 * result.upper_bound['top1']:.1f}% without all {len(result.upper_bound_heads)} heads" in text
    assert f"p = {result.p_value:.2g}" in text
    for h in candidate:
        assert (f"{h} '{classes[h]}'" in text) == h.startswith("a0.")


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


def test_train_or_load_retrains_when_the_training_code_changes(tmp_path, monkeypatch):
    """The cache key holds a hash of the trainer's and the probe's source: an edit there means a fresh run, not a
    stale one (before issue 27 the key held only the config, seed and steps)."""
    import tutorial_lib.studies.spectral as study
    from tutorial_lib.methods import selectivity as sel_module
    from tutorial_lib.methods.spectral_monitor import RECORDING_CODE
    from tutorial_lib.zoo import induction_models, train

    assert {induction_models, train} <= set(study.TRAINING_CODE) and sel_module in RECORDING_CODE
    fake = tmp_path / "trainer_copy.py"
    fake.write_text("LEARNING_RATE = 1e-3\n")
    monkeypatch.setattr(study, "TRAINING_CODE", (*study.TRAINING_CODE, fake))
    probe = planted_probe(16, 48)
    root = tmp_path / "cache"
    a = train_or_load("small", 0, 4, probe, n_checkpoints=3, plot=False, root=root, progress=False)
    assert not a.cached
    assert train_or_load("small", 0, 4, probe, n_checkpoints=3, plot=False, root=root, progress=False).cached
    fake.write_text("LEARNING_RATE = 3e-3\n")  # the trainer's source changed
    c = train_or_load("small", 0, 4, probe, n_checkpoints=3, plot=False, root=root, progress=False)
    assert not c.cached
    assert len(list((root / "spectral").iterdir())) == 2


def test_candidate_circuit_leaves_bos_heads_out_unless_asked():
    from tutorial_lib.methods.selectivity import Selectivity

    model = make_model("small", 0)
    att = {p: torch.zeros(2, 4) for p in PATTERNS}
    att["induction"] = torch.tensor([[0.0, 0.0, 0.0, 0.0], [0.03, 0.5, 0.4, 0.0]])
    att["previous-token"] = torch.tensor([[0.6, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]])
    att["BOS"] = torch.tensor([[0.1, 0.9, 0.9, 0.9], [0.96, 0.1, 0.2, 0.9]])
    att["baseline"] = torch.tensor([[0.005, 0.001, 0.001, 0.001], [0.0005, 0.005, 0.005, 0.001]])
    sel = Selectivity.from_attention(att, "random_positions", 48)
    # a1.h0: 60x on 3% of its attention, 96% on BOS -- out; a1.h1 (100x) and a1.h2 (80x) in; a0.h0 prev-token 120x
    assert candidate_circuit(sel, model) == ["a0.h0", "a1.h1", "a1.h2"]
    assert candidate_circuit(sel, model, include_bos_heads=True, per_layer=3) == ["a0.h0", "a1.h1", "a1.h2", "a1.h0"]


# --- the "which conclusions flip" table ------------------------------------------------------------------

_IND = [[0.0, 1, 2, 3], [60, 90, 70, 200]]
_PREV = [[40, 2, 35, 1], [0, 0, 0, 0]]
_THRESHOLDS = ((50.0, 30.0), (95.0, 38.0), (1000.0, 1000.0))


@pytest.fixture(scope="module")
def flips_setup():
    model = make_model("small", 0)
    probe = planted_probe(48, 48, seed=1)
    flips = flip_table(model, probe, _THRESHOLDS, sel=_sel(_IND, _PREV), n_control_seeds=3, n_permutations=500)
    return model, probe, flips


def _direct_cell(model, probe, heads, mode, metric, n_seeds=3, n_perm=500):
    """One causal cell recomputed by another code path: run_with_ablation + induction_metrics, no memo."""
    def per_example(hs):
        if not hs:
            logits = model(probe.tokens)
        else:
            logits = run_with_ablation(model, probe.tokens, list(hs), mode, reference=None if mode == "zero" else probe.tokens)
        return induction_metrics(logits, probe)[metric]

    with torch.no_grad():
        base = per_example([])
        sign = 1.0 if metric == "loss" else -1.0
        d = sign * (per_example(heads) - base)
        sets = list(dict.fromkeys(tuple(sorted(layer_matched_random(model, heads, seed=i).nodes)) for i in range(n_seeds)))
        dc = [sign * (per_example(s) - base) for s in sets]
    dc_mean = torch.stack(dc).mean(0)
    p = paired_permutation_test(d, dc_mean, n_permutations=n_perm, seed=0)
    every = float(d.mean()) > max(float(x.mean()) for x in dc)
    return float(d.mean()), float(dc_mean.mean()), p, "pass" if every and p < 0.05 else "fail"


@pytest.mark.parametrize("thr", [(50.0, 30.0), (95.0, 38.0)])
@pytest.mark.parametrize("metric", ["loss", "top1"])
@pytest.mark.parametrize("mode", ["zero", "mean", "resample"])
def test_flip_cells_agree_with_direct_recomputation(flips_setup, mode, metric, thr):
    model, probe, flips = flips_setup
    cand = candidate_circuit(_sel(_IND, _PREV), model, *thr)
    value, control, p, verdict = _direct_cell(model, probe, cand, mode, metric)
    label = threshold_label(*thr)
    m = flips.measurements
    row = m[(m.claim == FLIP_CLAIMS[1]) & (m.ablation == mode) & (m.metric == metric) & (m.threshold == label)].iloc[0]
    assert row.heads == ", ".join(cand)
    assert row.value == pytest.approx(value, abs=1e-5) and row.control == pytest.approx(control, abs=1e-5)
    assert row.p == pytest.approx(p)
    assert flips.verdict(FLIP_CLAIMS[1], mode, metric, label) == verdict
    assert flips.verdict(FLIP_CLAIMS[2], mode, metric, label) == ("pass" if value > control else "fail")


def test_flip_table_layout_minority_prev_and_na(flips_setup):
    model, probe, flips = flips_setup
    cells = flips.cells
    assert list(cells.columns) == [threshold_label(*t) for t in _THRESHOLDS]
    assert len(cells) == 1 + 3 * 3 * 2  # the minority claim once; three claims x three ablations x two metrics
    assert set(cells.values.ravel()) <= {"pass", "fail", "n/a"}
    # the minority claim: 4 of 8 heads >= 50x (half: fail), 1 of 8 >= 95x (pass), none >= 1000x (fail)
    assert [flips.verdict(FLIP_CLAIMS[0], "", "", threshold_label(*t)) for t in _THRESHOLDS] == ["fail", "pass", "fail"]
    # nothing passes 1000x: the ablation claims cannot be tested there
    assert (cells[threshold_label(1000.0, 1000.0)].iloc[1:] == "n/a").all()
    # previous-token claim at (95, 38): only a0.h0 passes 38x; recompute zero / loss directly
    prev = prev_token_heads(_sel(_IND, _PREV), 38.0, max_heads=2)
    assert prev == ["a0.h0"]
    with torch.no_grad():
        base = induction_metrics(model(probe.tokens), probe)["loss"]
        ablated = lambda hs: induction_metrics(run_with_ablation(model, probe.tokens, hs, "zero"), probe)["loss"]
        d = float((ablated(prev) - base).mean())
        dc = float(torch.stack([ablated(sorted(layer_matched_random(model, prev, seed=i).nodes)) - base
                                for i in range(3)]).mean())
        ub = float((ablated(sorted(layer_upper_bound(model, prev).nodes)) - base).mean())
    m = flips.measurements
    row = m[(m.claim == FLIP_CLAIMS[3]) & (m.ablation == "zero") & (m.metric == "loss")
            & (m.threshold == threshold_label(95.0, 38.0))].iloc[0]
    assert row.value == pytest.approx(d, abs=1e-5) and row.upper_bound == pytest.approx(ub, abs=1e-5)
    assert row.verdict == ("pass" if d > dc and d >= 0.5 * ub else "fail")


def test_flip_table_summary_differences_and_errors(flips_setup):
    model, probe, flips = flips_setup
    text = flips.summary()
    assert all(c in text for c in FLIP_CLAIMS) and "holds in" in text
    other = type(flips)(cells=flips.cells.copy(), measurements=flips.measurements)
    col = threshold_label(50.0, 30.0)
    key = (FLIP_CLAIMS[1], "mean", "loss")
    i, j = list(other.cells.index).index(key), list(other.cells.columns).index(col)
    other.cells.iloc[i, j] = "pass" if flips.verdict(*key, col) == "fail" else "fail"
    assert flips.differences(other, FLIP_CLAIMS[1]) == [f"mean / loss / {col}"]
    assert flips.differences(flips) == []
    assert "<table" in flips._repr_html_()
    # alpha below the smallest p that 500 permutations can give (1/501): the causal claim cannot pass, the mean claim is unchanged
    strict = flip_table(model, probe, ((50.0, 30.0),), modes=("zero",), metrics=("loss",), sel=_sel(_IND, _PREV),
                              n_control_seeds=3, n_permutations=500, alpha=1e-6)
    assert strict.verdict(FLIP_CLAIMS[1], "zero", "loss", col) == "fail"
    assert strict.verdict(FLIP_CLAIMS[2], "zero", "loss", col) == flips.verdict(FLIP_CLAIMS[2], "zero", "loss", col)
    with pytest.raises(ValueError, match="bogus"):
        flip_table(model, probe, modes=("zero", "bogus"), sel=_sel(_IND, _PREV))
    with pytest.raises(ValueError, match="metrics"):
        flip_table(model, probe, metrics=("accuracy",), sel=_sel(_IND, _PREV))
    with pytest.raises(ValueError, match="pairs"):
        flip_table(model, probe, thresholds=((50.0,),), sel=_sel(_IND, _PREV))


def test_damage_signs():
    base, ablated = torch.tensor([1.0, 2.0]), torch.tensor([3.0, 1.0])
    assert damage("loss", base, ablated).tolist() == [2.0, -1.0]
    assert damage("top1", base, ablated).tolist() == [-2.0, 1.0]
    with pytest.raises(ValueError, match="metric"):
        damage("accuracy", base, ablated)


def test_greedy_ablation_path_takes_the_worst_single_head_first():
    model = make_model("small", 0)
    probe = planted_probe(24, 48, seed=2)
    path = greedy_ablation_path(model, probe, max_size=2, metric="loss")
    assert [len(hs) for hs, _ in path] == [0, 1, 2] and path[1][0][0] == path[2][0][0]
    singles = {f"a{l}.h{h}": float(evaluate_induction(model, probe, [f"a{l}.h{h}"])["loss"].mean())
               for l in range(2) for h in range(4)}
    worst = max(singles, key=singles.get)
    assert path[1] == ([worst], pytest.approx(singles[worst], abs=1e-6))
    assert path[0][1] == pytest.approx(float(evaluate_induction(model, probe)["loss"].mean()), abs=1e-6)
    with pytest.raises(ValueError, match="max_size"):
        greedy_ablation_path(model, probe, max_size=0)
