"""tutorial_lib.studies.spectral_loaded: the recipe's steps 2-3 on a loaded model, and step 1 on shipped checkpoints."""
import pytest
import torch

from conftest import make_tiny_model
from tutorial_lib.methods.head_ablation import evaluate_induction
from tutorial_lib.methods.selectivity import induction_circuit, selectivity
from tutorial_lib.methods.spectral import head_participation_ratios
from tutorial_lib.studies.spectral import planted_probe
from tutorial_lib.studies.spectral_loaded import (
    checkpoint_prs, induction_minority, model_probe, probe_vocabulary, zoo_name,
)
from tutorial_lib.zoo import store

torch.set_num_threads(1)


def test_probe_draws_the_zoo_models_filler_words():
    from tutorial_lib.zoo.multitask import induction_ids

    model = store.load_model_from_zoo("zoo-multitask")
    assert zoo_name(model) == "zoo-multitask"
    filler = set(induction_ids(model.tokenizer, "filler"))
    p = model_probe(model, n=32, seq_len=40, seed=1)
    assert p.seq_len == 40 and 20 < p.n <= 32
    assert set(p.tokens[:, 1:].flatten().tolist()) <= filler
    assert torch.equal(p.tokens, model_probe(model, n=32, seq_len=40, seed=1).tokens)
    with pytest.raises(ValueError, match="longer than the model's context"):
        model_probe(model, seq_len=model.cfg.n_ctx + 1)
    assert set(probe_vocabulary(model)) == filler


def test_probe_of_a_split_trained_zoo_model_draws_its_held_out_tokens():
    """A zoo model whose induction rows used the split vocabulary (issue 30) is probed on the tokens it never saw
    repeated: the probe then tests induction, not memory."""
    from tutorial_lib.zoo.split_induction import split_ids

    model = store.load_model_from_zoo("zoo-multitask")
    model.zoo_entry = {**model.zoo_entry, "mix": {**model.zoo_entry["mix"], "induction_vocab": "split",
                                                  "rows": {**model.zoo_entry["mix"]["rows"], "induction": 32}}}
    held, trained = split_ids(model.tokenizer, 0, 0.5)
    assert set(probe_vocabulary(model)) == set(held.tolist())
    p = model_probe(model, n=32, seq_len=40, seed=1)
    assert set(p.tokens[:, 1:].flatten().tolist()) <= set(held.tolist())
    assert not set(p.tokens[:, 1:].flatten().tolist()) & set(trained.tolist())


def test_probe_needs_a_tokenizer():
    with pytest.raises(ValueError, match="no tokenizer"):
        model_probe(make_tiny_model("planted"))


def test_induction_minority_filters_caps_and_tests_against_direct_ablation():
    model = store.load_model_from_zoo("zoo-induction-small")
    probe = planted_probe(96, 48, seed=0)
    found = induction_minority(model, probe, n_control_seeds=3, n_permutations=500)
    sel = selectivity(model, probe)["induction"]
    assert set(found.heads) == set(induction_circuit(selectivity(model, probe)))
    vals = [float(sel[int(h[1]), int(h.split(".h")[1])]) for h in found.heads]
    assert vals == sorted(vals, reverse=True)
    H = model.cfg.n_heads
    for layer in {h.split(".")[0] for h in found.tested}:
        assert sum(h.startswith(layer + ".") for h in found.tested) <= H // 2
    assert found.tested == [h for h in found.heads if h in found.tested]
    assert found.n_heads == model.cfg.n_layers * H and found.fraction == len(found.heads) / found.n_heads
    assert found.minority == (1 <= len(found.heads) <= found.n_heads / 4)
    direct = float(evaluate_induction(model, probe, found.tested)["top1"].mean())
    assert found.result.candidate["top1"] == pytest.approx(direct, abs=1e-6)
    assert f"{len(found.heads)} of {found.n_heads} heads" in found.summary()
    text = found.reading(30.0)
    assert text.startswith(found.summary())
    assert found.n_classed == sum(c != "unclassified" for c in found.classes.values())
    assert f"{found.n_classed} of {found.n_heads} heads take some class at 30×" in text
    verdict = "carry induction" if found.result.causal else "does not beat the matched random heads"
    assert verdict in text
    # both baselines side by side, with the absolute attention (issue 27, item 8)
    uni = selectivity(model, probe, baseline="uniform")["induction"]
    sel_all = selectivity(model, probe)
    rand_pass = induction_circuit(sel_all, include_bos_heads=True)
    uni_pass = [f"a{l}.h{h}" for l in range(model.cfg.n_layers) for h in range(H) if float(uni[l, h]) >= 50]
    assert found.passing("random_positions") == rand_pass and found.passing("uniform") == uni_pass
    table = found.table()
    assert set(table.index) == set(rand_pass) | set(uni_pass)
    for h, row in table.iterrows():
        l, hh = int(h[1]), int(h.split(".h")[1])
        assert row["× 1/T"] == pytest.approx(float(uni[l, hh]), abs=0.01)
        assert row["attention on B (%)"] == pytest.approx(100 * float(sel_all.attention["induction"][l, hh]), abs=0.05)
        assert row["× 1/T"] == pytest.approx(row["attention on B (%)"] / 100 * probe.seq_len, abs=0.05)
        assert row["in the circuit"] == (h in found.heads) and row["BOS head"] == (h in sel_all.bos_heads())
    assert found.baselines_reading() in text
    assert f"{len(rand_pass)} of {found.n_heads} heads pass on the random-positions baseline and {len(uni_pass)} on the uniform" in text


def test_no_induction_head_means_no_test():
    model = make_tiny_model("planted", seed=3)
    probe = planted_probe(32, 16, seed=0, vocab=model.cfg.d_vocab)
    found = induction_minority(model, probe, induction_threshold=1e9)
    assert found.heads == [] and found.result is None and not found.minority
    assert found.summary().startswith("no head passes the induction filter")
    assert "there is no step 3" in found.reading()


def test_checkpoint_prs_equal_prs_of_each_checkpoint_loaded_by_hand(tmp_path):
    model = make_tiny_model("planted", seed=0)
    store.save_model(model, "toy", meta={"steps": 20}, directory=tmp_path, tokenizer_dir=None)
    states = {s: make_tiny_model("planted", seed=s + 5).state_dict() for s in (0, 10, 20)}
    store.save_checkpoints("toy", states, {s: 7 * s for s in states}, directory=tmp_path)
    probe = planted_probe(24, 16, seed=0, vocab=model.cfg.d_vocab)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    steps, tokens, pr = checkpoint_prs("toy", model, probe, directory=tmp_path)
    assert steps == [0, 10, 20] and tokens == [0, 70, 140] and pr.shape == (3, 2, 4)
    for i, s in enumerate(steps):
        ref = make_tiny_model("planted", seed=0)
        ref.load_state_dict({k: (v.half().float() if v.is_floating_point() and not k.endswith(("IGNORE", "mask")) else v)
                             for k, v in states[s].items()})
        assert torch.allclose(pr[i], head_participation_ratios(ref, probe), atol=1e-5)
    assert all(torch.equal(v, before[k]) for k, v in model.state_dict().items())  # weights restored


def test_induction_count_range_counts_as_the_filter_does_and_brackets_it():
    """The count on all examples is induction_circuit's (BOS heads left out), and the bootstrap interval holds it."""
    from tutorial_lib.methods.selectivity import induction_circuit, selectivity
    from tutorial_lib.studies.spectral_loaded import induction_count_range
    from tutorial_lib.zoo.induction_models import make_model

    model, probe = make_model("small", 0), planted_probe(48, 48, seed=1)
    sel = selectivity(model, probe)
    ratios = sorted(float(v) for v in sel["induction"].flatten())
    mid = len(ratios) // 2
    for thr in (ratios[0] / 2, (ratios[mid - 1] + ratios[mid]) / 2, ratios[-1] * 2):  # away from any head's ratio
        n, (lo, hi) = induction_count_range(model, probe, thr, n_boot=50)
        assert n == len(induction_circuit(sel, thr))
        assert lo <= hi and lo - 1 <= n <= hi + 1  # a percentile interval of a count sits around it
        assert induction_count_range(model, probe, thr, n_boot=50) == (n, (lo, hi))  # seeded
    assert induction_count_range(model, probe, ratios[-1] * 2, n_boot=50) == (0, (0.0, 0.0))
