"""tutorial_lib.studies.greater_than against slow references on a tiny random model with the zoo tokenizer."""
import pytest
import torch

from conftest import make_tiny_model
from tutorial_lib.core.circuits import Circuit
from tutorial_lib.studies.greater_than import (
    ablation_evaluator,
    by_yy,
    evaluate_circuit,
    generalisation,
    greater_than_circuit_search,
    necessity_breakdown,
    year_probability_table,
)
from tutorial_lib.methods.path_discovery import discover_step
from tutorial_lib.tasks.greater_than import make_greater_than


@pytest.fixture(scope="module")
def setup():
    task = make_greater_than("zoo", n=16, seed=0)
    vocab = int(max(task.clean.max(), task.corrupt.max(), task.year_ids.max())) + 1
    model = make_tiny_model(d_vocab=vocab, seed=2)
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(3.0)
        # put the probability on the 100 year tokens, so the probability difference varies widely
        model.unembed.b_U.fill_(-20.0)
        model.unembed.b_U[task.year_ids] = 0.0
    return model, task


def test_year_table_and_by_yy_match_loops(setup):
    model, task = setup
    with torch.no_grad():
        logits = model(task.clean)
    table = year_probability_table(model, task)
    probs = logits[torch.arange(len(task)), task.end_pos].softmax(-1)[:, task.year_ids]
    for i, yy in enumerate(table.yy):
        rows = [b for b in range(len(task)) if int(task.yy[b]) == yy]
        assert torch.allclose(table.values[i], probs[rows].mean(0), atol=1e-6)
    vals = torch.randn(len(task))
    x, y = by_yy(task, vals)
    assert x == sorted(set(task.yy.tolist()))
    for k, m in zip(x, y):
        ref = sum(float(vals[b]) for b in range(len(task)) if int(task.yy[b]) == k) / int((task.yy == k).sum())
        assert abs(m - ref) < 1e-5
    with pytest.raises(ValueError, match="one value per prompt"):
        by_yy(task, vals[:3])
    fig = table.plot()
    assert fig.layout.xaxis.title.text and fig.layout.yaxis.autorange != "reversed"  # YY increases upward


def test_year_table_colour_cap():
    from tutorial_lib.studies.greater_than import YearTable

    vals = torch.full((50, 100), 0.005)
    for i in range(50):
        vals[i, i + 1 : i + 11] = 0.08  # the band just above YY
    vals[-3:, 99] = torch.tensor([0.6, 0.8, 0.98])  # a few rows piling on "99"
    table = YearTable(vals, list(range(50)))
    hm = table.plot().data[0]
    assert hm.zmin == 0 and hm.zmax == pytest.approx(0.08)  # the 99.5th percentile, not 0.98
    assert "capped" in hm.colorbar.title.text and "0.08" in hm.colorbar.title.text
    assert table.plot(zmax=0.2).data[0].zmax == pytest.approx(0.2)
    uncapped = table.plot(zmax=None).data[0]
    assert uncapped.zmax == pytest.approx(0.98) and uncapped.colorbar.title.text == "probability"
    flat = YearTable(torch.full((5, 100), 0.01), list(range(5))).plot().data[0]
    assert flat.zmax == pytest.approx(0.01) and flat.colorbar.title.text == "probability"  # nothing to cap
    with pytest.raises(ValueError, match="zmax"):
        table.plot(zmax="robust")


def test_search_is_consistent_with_its_steps_and_reuse(setup):
    model, task = setup
    thr = 1e-4
    search = greater_than_circuit_search(model, task, threshold=thr)
    pos = search.circuit.meta["positions"]
    assert set(pos) == set(search.circuit.nodes)
    step1 = search.steps["1: END -> logits"]
    for c, e in step1.effects.items():  # every sender below -thr at step 1 is in the circuit, at END
        if e <= -thr and c != "embed":
            assert pos.get(c) == "END"
    for label, res in search.steps.items():  # and every member was found by some step
        assert res.receivers
    found = {c for res in search.steps.values() for c, e in res.effects.items() if e <= -thr}
    assert set(pos) <= found
    # reusing a precomputed step gives the same circuit and does not recompute it
    pre = discover_step(model, task, "logits", "END", progress=False)
    again = greater_than_circuit_search(model, task, threshold=thr, reuse=[pre])
    assert again.steps["1: END -> logits"] is pre
    assert again.circuit.meta["positions"] == pos
    with pytest.raises(ValueError, match="threshold"):
        greater_than_circuit_search(model, task, threshold=0)


def test_search_runs_the_model_on_its_task_once_per_run(setup, monkeypatch):
    """Every step of the search patches the same clean and corrupt runs: the model runs on each once (two
    caches), however many steps there are, and the steps' values are the ones a step alone gives."""
    import tutorial_lib.core.forward as forward

    model, task = setup
    built = []
    original = forward.RunCache.__init__
    monkeypatch.setattr(forward.RunCache, "__init__", lambda self, *a, **k: (built.append(1), original(self, *a, **k))[1])
    search = greater_than_circuit_search(model, task, threshold=1e-4)
    assert len(search.steps) >= 3 and len(built) == 2
    alone = discover_step(model, task, "logits", "END", progress=False)
    assert alone.effects == search.steps["1: END -> logits"].effects and len(built) == 4


def test_search_step3_uses_the_receivers_mode_it_is_given(setup):
    """Step 3 (into the keys and values of the END heads) runs in the mode asked for (default: independent, as the
    paper), a step computed in the other mode is not reused for it, and an unknown mode is refused."""
    model, task = setup
    thr = 1e-4
    search = greater_than_circuit_search(model, task, threshold=thr)
    step3 = [res for label, res in search.steps.items() if label.startswith("3:")]
    assert step3 and all(res.receivers_mode == "independent" for res in search.steps.values())
    joint3 = discover_step(model, task, step3[0].receivers, "YY", progress=False, receivers_mode="joint")
    again = greater_than_circuit_search(model, task, threshold=thr, reuse=[joint3])
    assert all(res is not joint3 for res in again.steps.values())
    joint = greater_than_circuit_search(model, task, threshold=thr, receivers_mode="joint", reuse=[joint3])
    assert [res for label, res in joint.steps.items() if label.startswith("3:")] == [joint3]
    with pytest.raises(ValueError, match="unknown receivers_mode"):
        greater_than_circuit_search(model, task, threshold=thr, receivers_mode="both")


def _reference_patch(model, task, ablated):
    names = {"embed": "hook_embed"}
    with torch.no_grad():
        _, cache = model.run_with_cache(task.corrupt)
    hooks = []
    for c in ablated:
        if c.startswith("m"):
            n = f"blocks.{c[1:]}.hook_mlp_out"
            hooks.append((n, lambda a, hook, n=n: cache[n]))
        else:
            l, h = int(c[1:].split(".")[0]), int(c.split(".h")[1])
            n = f"blocks.{l}.attn.hook_z"

            def f(a, hook, n=n, h=h):
                a = a.clone()
                a[:, :, h] = cache[n][:, :, h]
                return a
            hooks.append((n, f))
    with torch.no_grad(), model.hooks(fwd_hooks=hooks):
        return task.metric(model(task.clean))


def test_necessity_breakdown_against_hand_patching(setup):
    """Each row of the breakdown equals the hand-written patch of the same components (every position here), the
    strongest component is the one whose corruption alone lowers the metric most, and no control holds it."""
    from tutorial_lib.core.controls import size_matched_random

    model, task = setup
    circ = Circuit(["embed", "a0.h1", "a1.h2", "m0", "m1"])
    nb = necessity_breakdown(model, task, circ, n_controls=3)
    inner = ["a0.h1", "a1.h2", "m0", "m1"]
    assert abs(nb["inner"].value - float(_reference_patch(model, task, inner).mean())) < 1e-4
    for c in inner:
        assert abs(nb["alone"][c] - float(_reference_patch(model, task, [c]).mean())) < 1e-4
    assert nb["top"] == min(nb["alone"], key=nb["alone"].get)
    rest = [c for c in inner if c != nb["top"]]
    assert abs(nb["rest"].value - float(_reference_patch(model, task, rest).mean())) < 1e-4
    assert len(nb["controls"]) == 3
    for seed, value in enumerate(nb["controls"]):
        ctrl = size_matched_random(model, rest, seed=seed, match="auto", exclude=[nb["top"]])
        assert len(ctrl.nodes) == len(rest) and not (ctrl.nodes & set(inner))
        assert abs(value - float(_reference_patch(model, task, sorted(ctrl.nodes)).mean())) < 1e-4


def test_ablation_evaluator_matches_reference(setup):
    model, task = setup
    evaluate = ablation_evaluator(model, task)
    base = evaluate(frozenset())
    with torch.no_grad():
        full = task.metric(model(task.clean))
    assert abs(base["metrics"]["probability difference"] - float(full.mean())) < 1e-5
    for ablated in ({"m1"}, {"a0.h1", "a1.h3"}, {"m0", "a1.h0"}):
        got = evaluate(frozenset(ablated))
        ref = _reference_patch(model, task, ablated)
        assert abs(got["metrics"]["probability difference"] - float(ref.mean())) < 1e-4
        assert got["x"] == by_yy(task, ref)[0]
        assert all(abs(a - b) < 1e-4 for a, b in zip(got["y"], by_yy(task, ref)[1]))


def test_evaluate_circuit_and_generalisation(setup):
    model, task = setup
    circ = Circuit(["embed", "a0.h1", "m0", "m1"], meta={"positions": {"embed": "YY", "a0.h1": "END", "m0": "END", "m1": "END"}})
    ev = evaluate_circuit(model, task, circ)
    assert abs(ev["sufficiency_fraction"] - ev["sufficiency"] / ev["full"]) < 1e-6
    # corrupting the embedding at YY corrupts the only token that differs: necessity = fully corrupted
    assert abs(ev["necessity"] - ev["corrupt"]) < 1e-4
    rows = generalisation(model, "zoo", circ, variants=("lasted", "reversed"), n=8)
    assert [r["variant"] for r in rows] == ["lasted", "reversed"]
    assert rows[1]["direction"] == "<"
    for r in rows:  # the fraction is read only where the full model does the variant
        assert (r["full model does it"] == "yes") == (r["full model"] >= 0.2)
        if r["full model does it"] == "yes":
            assert abs(r["fraction of full"] - r["circuit only (sufficiency)"] / r["full model"]) < 0.01
        else:
            assert r["fraction of full"] != r["fraction of full"]


def test_flip_table_cells_agree_with_direct_evaluation(setup):
    from tutorial_lib.methods.circuit_eval import circuit_necessity, circuit_sufficiency
    from tutorial_lib.studies.greater_than import flip_table, without_embedding

    model, task = setup
    big = Circuit(["embed", "a0.h1", "a1.h2", "m0", "m1"],
                  meta={"positions": {"embed": "YY", "a0.h1": "END", "a1.h2": "END", "m0": "END", "m1": "END"}})
    small = Circuit(["embed", "m1"], meta={"positions": {"embed": "YY", "m1": "END"}})
    table = flip_table(model, task, {0.005: big, 0.02: small}, ablations=("corrupt", "mean"))
    assert list(table.index) == [(0.005, "corrupt"), (0.005, "mean"), (0.02, "corrupt"), (0.02, "mean")]
    assert without_embedding(big).nodes == big.nodes - {"embed"}
    assert "embed" not in without_embedding(big).meta["positions"]
    for (t, ablation), row in table.iterrows():
        circ = big if t == 0.005 else small
        assert row["components"] == len(circ.nodes)
        for label, metric in (("prob. diff", task.prob_diff), ("sharpness", task.cutoff_sharpness)):
            suf = circuit_sufficiency(model, task, circ, metric=metric, ablation=ablation).fraction_of_clean
            nec = circuit_necessity(model, task, without_embedding(circ), metric=metric, ablation=ablation).value
            assert row[f"sufficiency, {label} (of full)"] == pytest.approx(suf, abs=1e-3)
            assert row[f"sufficient, {label}"] == ("pass" if suf >= 0.8 else "fail")
            assert row[f"necessity, {label}"] == pytest.approx(nec, abs=1e-3)
            assert row[f"necessary, {label}"] == ("pass" if nec < 0 else "fail")
    # the ablation matters: the two modes give different sufficiency for the same circuit
    assert table.loc[(0.005, "corrupt"), "sufficiency, prob. diff (of full)"] != table.loc[(0.005, "mean"), "sufficiency, prob. diff (of full)"]


def _flips(suff: dict, nec: dict, sharp_nec: float = 0.01):
    """A flip table in flip_table's layout: suff / nec map (threshold, ablation) to the prob.-diff values."""
    import pandas as pd

    rows = [{"threshold": t, "ablation": a, "components": 3, "sufficiency, prob. diff (of full)": v,
             "sufficient, prob. diff": "pass" if v >= 0.8 else "fail", "necessity, prob. diff": nec[t, a],
             "necessary, prob. diff": "pass" if nec[t, a] < 0 else "fail", "necessity, sharpness": sharp_nec}
            for (t, a), v in suff.items()]
    return pd.DataFrame(rows).set_index(["threshold", "ablation"])


def test_flip_reading_reports_the_table():
    from tutorial_lib.studies.greater_than import flip_reading

    suff = {(0.005, "corrupt"): 0.95, (0.005, "mean"): 0.7, (0.02, "corrupt"): 0.9, (0.02, "mean"): 0.5}
    nec = {(0.005, "corrupt"): -0.4, (0.005, "mean"): 0.2, (0.02, "corrupt"): -0.3, (0.02, "mean"): 0.1}
    text = flip_reading(_flips(suff, nec), 0.005)
    assert "keeps corrupt 95%, mean 70%" in text and "sufficient in 2 of the 4 rows" in text
    assert "gives corrupt -0.40, mean 0.20" in text and "holds under corrupt." in text
    assert "grows as the threshold falls" in text  # 0.02 -> 0.005: 0.9 -> 0.95 and 0.5 -> 0.7, in any row order
    assert "most forgiving ablation for sufficiency is corrupt, the harshest mean" in text
    suff[0.005, "mean"] = 0.4  # shrinks under mean when the circuit grows
    assert "does not grow" in flip_reading(_flips(suff, nec), 0.005)
    suff[0.005, "mean"] = 0.5  # flat under mean: no rise, so no "grows" (a non-decreasing test alone said it did)
    assert "does not grow" in flip_reading(_flips(suff, nec), 0.005)
    one = {k: v for k, v in suff.items() if k[0] == 0.005}
    assert "threshold falls" not in flip_reading(_flips(one, nec), 0.005) and "grow" not in flip_reading(_flips(one, nec), 0.005)


def test_generalisation_reading_reads_only_what_the_full_model_does():
    import pandas as pd
    from tutorial_lib.studies.greater_than import generalisation_reading

    gen = pd.DataFrame([
        {"variant": "lasted", "full model": 0.9, "full model does it": "yes", "circuit only (sufficiency)": 0.85, "fraction of full": 0.944},
        {"variant": "started", "full model": 0.5, "full model does it": "yes", "circuit only (sufficiency)": 0.2, "fraction of full": 0.4},
        {"variant": "reversed", "full model": -0.3, "full model does it": "no", "circuit only (sufficiency)": -0.25, "fraction of full": float("nan")}])
    text = generalisation_reading(gen)
    assert text.startswith("The full model does lasted, started")
    assert "on lasted the circuit alone keeps 94%" in text and "on started it keeps only 40%" in text
    assert "reversed prompts the full model scores -0.300" in text and "(-0.250)" in text
    assert "does none of the variants" in generalisation_reading(pd.DataFrame([{"variant": "x", "error": "no words"}]))
