"""tutorial_lib.studies.spectral_circuit: what the control drew, composition per sender, the greater-than overlap."""
import numpy as np
import pytest
import torch

from conftest import make_tiny_model
from tutorial_lib.methods.composition import composition_scores, random_baseline
from tutorial_lib.methods.head_ablation import verify_circuit
from tutorial_lib.methods.selectivity import induction_circuit, selectivity
from tutorial_lib.studies.spectral import candidate_circuit, planted_probe
from tutorial_lib.studies.spectral_circuit import (composition_summary, control_choices_reading, control_filters,
                                                   greater_than_overlap)
from tutorial_lib.zoo import store

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def small():
    model = store.load_model_from_zoo("zoo-induction-small")
    probe = planted_probe(64, 48, seed=0)
    sel = selectivity(model, probe)
    cand = candidate_circuit(sel, model)
    return model, probe, sel, cand, verify_circuit(model, cand, probe, n_control_seeds=3, n_permutations=200)


def test_control_filters_reads_each_drawn_head(small):
    model, probe, sel, cand, res = small
    table = control_filters(res, sel, 50.0, 30.0)
    drawn = {h for hs, _, _ in res.distinct_controls() for h in hs}
    assert set(table.index) == drawn and not drawn & set(cand)
    for h, row in table.iterrows():
        l, hh = int(h[1]), int(h.split(".h")[1])
        assert row["induction ×"] == pytest.approx(float(sel["induction"][l, hh]), abs=0.06)
        assert row["passes induction filter"] == (float(sel["induction"][l, hh]) >= 50 and h not in sel.bos_heads())
        assert row["passes previous-token filter"] == (l == 0 and float(sel["previous-token"][l, hh]) >= 30
                                                       and h not in sel.bos_heads())
        assert 1 <= row["draws holding it"] <= res.n_distinct_controls
    # on this model the candidate is the top half of the filtered heads: the control's layer-1 heads pass the filter too
    assert table.loc[[h for h in table.index if h.startswith("a1.")], "passes induction filter"].all()


def test_control_choices_reading_names_forced_layers(small):
    *_, res = small
    text = control_choices_reading(res)
    for layer, n in res.possible_controls_by_layer.items():
        assert f"layer {layer}: " in text and f"= {n} possible draw(s)" in text
    forced = [l for l, n in res.possible_controls_by_layer.items() if n == 1]
    assert ("forced: every control ablates" in text) == bool(forced)
    assert f"the {len(res.control_sets)} seeds drew {res.n_distinct_controls} distinct one(s)" in text
    assert "pass the filter themselves" not in text  # nothing said about the filter unless it is given


def test_control_choices_reading_names_drawn_heads_that_pass_the_filter(small):
    model, probe, sel, cand, res = small
    filtered = induction_circuit(sel, 50.0)
    drawn = {h for hs, _, _ in res.distinct_controls() for h in hs}
    in_class = sorted(drawn & set(filtered))
    assert in_class  # on this model the layer-1 control heads pass the filter (see the test above)
    text = control_choices_reading(res, filtered=filtered)
    assert f"The draws hold {len(in_class)} head(s) that pass the filter themselves ({', '.join(in_class)})" in text
    assert "pass the filter themselves" not in control_choices_reading(res, filtered=list(cand))


def test_composition_summary_means_of_the_pair_scores(small):
    model, *_ = small
    senders, receivers = ["a0.h0", "a0.h1", "a0.h2", "a0.h3"], ["a1.h0", "a1.h2"]
    comp = composition_summary(model, senders, receivers, n_random=50, seed=4)
    for mode in "QKV":
        pairs = composition_scores(model, senders, receivers, mode)
        for s in senders:
            assert comp.scores[mode][s] == pytest.approx(np.mean([pairs[s, r] for r in receivers]))
        assert comp.baseline[mode] == random_baseline(model, mode, 50, 4)
    best = comp.best("K")
    assert comp.scores["K"][best] == max(comp.scores["K"].values())
    m, sd = comp.baseline["K"]
    assert comp.z(best) == pytest.approx((comp.scores["K"][best] - m) / sd)
    assert len(comp.table()) == len(senders) + 1
    with pytest.raises(ValueError, match="earlier layer"):
        composition_summary(model, ["a1.h0"], ["a0.h1"], n_random=5)


def test_greater_than_overlap_on_the_zoo_model():
    model = store.load_model_from_zoo("zoo-multitask")
    gt = greater_than_overlap(model, ["a1.h0", "a1.h1", "a0.h2"], n_prompts=8)
    assert gt is not None and gt.n_prompts == 8
    assert gt.shared == [h for h in gt.heads if h in gt.circuit]
    assert set(gt.attention_yy) == set(gt.heads) | set(gt.circuit)
    # the attention from END to YY, read directly for one head
    from tutorial_lib.tasks.greater_than import make_greater_than

    task = make_greater_than(model.tokenizer, n=200, seed=0).subset(range(8))  # notebook 01's first 8 prompts
    _, cache = model.run_with_cache(task.clean)
    rows = torch.arange(8)
    direct = cache["blocks.1.attn.hook_pattern"][rows, 0, task.positions["END"], task.positions["YY"]].mean()
    assert gt.attention_yy["a1.h0"] == pytest.approx(float(direct), abs=1e-5)
    assert f"{len(gt.shared)} of the 3 heads" in gt.reading()


def test_greater_than_overlap_needs_year_tokens():
    model = make_tiny_model("planted")  # no tokenizer that splits years as GPT-2 does
    assert greater_than_overlap(model, ["a0.h0"]) is None
