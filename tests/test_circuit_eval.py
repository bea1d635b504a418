"""Circuit sufficiency and necessity, against a reference that picks, per component and position, the
clean-run recomputation or the corrupted value."""
import warnings

import pytest
import torch

warnings.filterwarnings("ignore", category=DeprecationWarning)
torch.set_num_threads(1)

from conftest import TOY_BATCH as B, TOY_HEADS as H, TOY_LAYERS as L, TOY_POS as P  # noqa: E402

from tutorial_lib.methods.circuit_eval import circuit_necessity, circuit_sufficiency  # noqa: E402
from tutorial_lib.core.circuits import Circuit  # noqa: E402
from tutorial_lib.core.components import all_components  # noqa: E402
from tutorial_lib.core.hooks import assert_no_hooks  # noqa: E402


class _Source:
    """The reference's replacement values, element by element: ``src[name][b, p]``."""

    def __init__(self, model, task, ablation, seed=0):
        from tutorial_lib.core.circuits import resample_sources

        with torch.no_grad():
            _, self.corrupt = model.run_with_cache(task.corrupt)
            _, self.clean = model.run_with_cache(task.clean)
        self.ablation = ablation
        self.sources = resample_sources(B, seed)  # the course's one resample definition: never a row's own
        self.real = [[p <= int(task.end_pos[b]) for p in range(P)] for b in range(B)]  # right padding after END

    def __getitem__(self, name):
        outer = self

        class At:
            def __getitem__(self, bp):
                b, p = bp[0], bp[1]
                rest = bp[2:]
                if outer.ablation == "corrupt":
                    return outer.corrupt[name][(b, p, *rest)]
                if outer.ablation == "resample":
                    return outer.clean[name][(int(outer.sources[b]), p, *rest)]
                if outer.ablation == "mean":  # over the rows whose token at p is real (not padding)
                    rows = [r for r in range(B) if outer.real[r][p]]
                    return torch.stack([outer.clean[name][(r, p, *rest)] for r in rows]).mean(0)
                return torch.zeros_like(outer.clean[name][(b, p, *rest)])
        return At()


def ref_circuit(model, task, keep: dict, necessity: bool, ablation: str = "corrupt"):
    """Reference: per component and position, pick clean-run recomputation or the replacement value."""
    cc = _Source(model, task, ablation)
    hooks = []
    for l in range(L):
        def hz(act, hook, l=l):
            act = act.clone()
            for b in range(B):
                for p in range(P):
                    for h in range(H):
                        inside = keep.get(f"a{l}.h{h}", lambda b, p: False)(b, p)
                        if inside == necessity:
                            act[b, p, h] = cc[hook.name][b, p, h]
            return act

        def hm(act, hook, l=l):
            act = act.clone()
            for b in range(B):
                for p in range(P):
                    if keep.get(f"m{l}", lambda b, p: False)(b, p) == necessity:
                        act[b, p] = cc[hook.name][b, p]
            return act
        hooks += [(f"blocks.{l}.attn.hook_z", hz), (f"blocks.{l}.hook_mlp_out", hm)]

    def he(act, hook):
        act = act.clone()
        for b in range(B):
            for p in range(P):
                if keep.get("embed", lambda b, p: False)(b, p) == necessity:
                    act[b, p] = cc[hook.name][b, p]
        return act
    hooks += [("hook_embed", he), ("hook_pos_embed", he)]  # 'embed' is the token and the position embedding
    with torch.no_grad(), model.hooks(fwd_hooks=hooks):
        return task.metric(model(task.clean))


def test_circuit_sufficiency_and_necessity_match_reference(toy_model, toy_task):
    end, yy = toy_task.end_pos, toy_task.positions["YY"]
    circ = Circuit(["a1.h2", "a2.h0", "m2", "m0", "a0.h3", "embed"], name="toy")
    positions = {"a1.h2": "END", "a2.h0": "END", "m2": "END", "m0": "YY", "a0.h3": "YY", "embed": "YY"}
    at = {"END": lambda b, p: p == int(end[b]), "YY": lambda b, p: p == int(yy[b])}
    keep = {c: at[w] for c, w in positions.items()}
    suff = circuit_sufficiency(toy_model, toy_task, circ, positions)
    nec = circuit_necessity(toy_model, toy_task, circ, positions)
    assert torch.allclose(suff.per_example, ref_circuit(toy_model, toy_task, keep, False), atol=1e-4)
    assert torch.allclose(nec.per_example, ref_circuit(toy_model, toy_task, keep, True), atol=1e-4)
    assert abs(suff.fraction_of_clean - suff.value / suff.clean) < 1e-9
    assert abs(nec.normalized - (nec.value - nec.corrupt) / (nec.clean - nec.corrupt)) < 1e-9
    # the same circuit with its positions in meta gives the same numbers
    meta = Circuit(circ.nodes, name="toy", meta={"positions": positions})
    assert torch.allclose(circuit_sufficiency(toy_model, toy_task, meta).per_example, suff.per_example)
    assert_no_hooks(toy_model)


@pytest.mark.parametrize("ablation", ["resample", "mean", "zero"])
def test_other_ablations_match_reference(toy_model, toy_task, ablation):
    end, yy = toy_task.end_pos, toy_task.positions["YY"]
    circ = Circuit(["a1.h2", "m2", "m0", "embed"], name="toy")
    positions = {"a1.h2": "END", "m2": "END", "m0": "YY", "embed": "YY"}
    at = {"END": lambda b, p: p == int(end[b]), "YY": lambda b, p: p == int(yy[b])}
    keep = {c: at[w] for c, w in positions.items()}
    for test, fn in ((False, circuit_sufficiency), (True, circuit_necessity)):
        got = fn(toy_model, toy_task, circ, positions, ablation=ablation).per_example
        ref = ref_circuit(toy_model, toy_task, keep, test, ablation)
        assert torch.allclose(got, ref, atol=1e-4), (ablation, test)
        assert not torch.allclose(got, fn(toy_model, toy_task, circ, positions).per_example, atol=1e-3)  # differs from corrupt
    with pytest.raises(ValueError, match="unknown ablation 'noise'"):
        circuit_sufficiency(toy_model, toy_task, circ, positions, ablation="noise")


def test_whole_and_empty_circuits_are_the_two_runs(toy_model, toy_task):
    with torch.no_grad():
        clean = toy_task.metric(toy_model(toy_task.clean))
        corrupt = toy_task.metric(toy_model(toy_task.corrupt))
    assert (clean - corrupt).abs().max() > 0.05
    everything = Circuit(all_components(toy_model, include_embed=True), name="all")
    nothing = Circuit([], name="none")
    assert torch.allclose(circuit_sufficiency(toy_model, toy_task, everything).per_example, clean, atol=1e-5)
    assert torch.allclose(circuit_sufficiency(toy_model, toy_task, nothing).per_example, corrupt, atol=1e-5)
    assert torch.allclose(circuit_necessity(toy_model, toy_task, everything).per_example, corrupt, atol=1e-5)
    assert torch.allclose(circuit_necessity(toy_model, toy_task, nothing).per_example, clean, atol=1e-5)
    ev = circuit_sufficiency(toy_model, toy_task, everything)
    assert abs(ev.fraction_of_clean - 1) < 1e-5 and abs(ev.normalized - 1) < 1e-4
    assert "sufficiency of all" in str(ev)


def test_circuit_bad_input(toy_model, toy_task):
    with pytest.raises(ValueError, match="not in the circuit"):
        circuit_sufficiency(toy_model, toy_task, Circuit(["m0"]), {"m1": "END"})
    with pytest.raises(ValueError, match="unknown position"):
        circuit_sufficiency(toy_model, toy_task, Circuit(["m0"]), {"m0": "XX"})
    with pytest.raises(ValueError, match="does not exist"):
        circuit_necessity(toy_model, toy_task, Circuit(["a9.h0"]))
    with pytest.raises(ValueError, match="Circuit"):
        circuit_necessity(toy_model, toy_task, ["m0"])


# ------------------------------------------------------------------ one meaning per ablation (issue 27)
def test_embed_means_token_and_position_embedding_as_in_core_ablation(toy_model, toy_task):
    """Zero-ablating everything outside an empty circuit must equal core ablation of every component and
    'embed' (token + position embedding; circuit evaluation used to keep the position embedding)."""
    from tutorial_lib.core.circuits import run_with_ablation
    from tutorial_lib.core.components import all_components
    from tutorial_lib.methods.circuit_eval import circuit_sufficiency

    assert toy_model.cfg.positional_embedding_type == "standard"
    ev = circuit_sufficiency(toy_model, toy_task, Circuit([]), ablation="zero")
    everything = all_components(toy_model, include_embed=True)
    want = toy_task.metric(run_with_ablation(toy_model, toy_task.clean, everything, "zero"))
    assert torch.allclose(ev.per_example, want, atol=1e-5)


def test_resample_means_another_prompt_chosen_by_the_shared_derangement(toy_model, toy_task):
    """With nothing in the circuit, resample sufficiency replaces every component (and the embedding) by
    prompt resample_sources(n, seed)[i]'s, so row i reads that prompt's logits (it used to shift by one)."""
    from tutorial_lib.core.circuits import resample_sources
    from tutorial_lib.methods.circuit_eval import circuit_sufficiency

    for seed in (0, 1):
        ev = circuit_sufficiency(toy_model, toy_task, Circuit([]), ablation="resample", seed=seed)
        src = resample_sources(len(toy_task), seed)
        with torch.no_grad():
            want = toy_task.metric(toy_model(toy_task.clean)[src])
        assert torch.allclose(ev.per_example, want, atol=1e-5)


# ------------------------------------------------------------------ many tests stacked in one forward pass
def _jobs(model):
    """Circuits of every kind, with positions, the empty one and the whole model among them."""
    pos = {"a1.h2": "END", "m2": "END", "m0": "YY", "a0.h3": "YY", "embed": "YY"}
    circuits = [Circuit(["a1.h2", "m2", "m0", "embed"], name="c1", meta={"positions": {c: pos[c] for c in ("a1.h2", "m2", "m0", "embed")}}),
                Circuit(["a0.h3"], name="c2", meta={"positions": {"a0.h3": "YY"}}),
                Circuit(["m1", "a2.h0"], name="c3"),
                Circuit([], name="none"),
                Circuit(all_components(model, include_embed=True), name="all")]
    return [(c, t) for c in circuits for t in ("necessity", "sufficiency")]


@pytest.mark.parametrize("ablation", ["corrupt", "resample", "mean", "zero"])
def test_stacked_tests_equal_each_test_alone_and_the_reference(toy_model, toy_task, ablation):
    from tutorial_lib.methods.circuit_eval import evaluate_circuit_tests

    jobs = _jobs(toy_model)
    sharp = lambda lg: lg[torch.arange(len(toy_task)), toy_task.end_pos, 5] - lg[torch.arange(len(toy_task)), toy_task.end_pos, 7]  # noqa: E731
    for chunk in (None, 3):  # all jobs in one pass; three per pass (the last pass one job)
        got = evaluate_circuit_tests(toy_model, toy_task, jobs, [toy_task.metric, sharp], ablation, chunk_size=chunk)
        assert len(got) == len(jobs) and all(len(g) == 2 for g in got)
        for (circuit, test), (ev, ev2) in zip(jobs, got):
            alone = (circuit_necessity if test == "necessity" else circuit_sufficiency)(toy_model, toy_task, circuit, ablation=ablation)
            assert (ev.test, ev.circuit) == (test, circuit.name)
            assert torch.allclose(ev.per_example, alone.per_example, atol=1e-5), (circuit.name, test, chunk)
            assert (ev.clean, ev.corrupt) == (alone.clean, alone.corrupt)
            alone2 = (circuit_necessity if test == "necessity" else circuit_sufficiency)(toy_model, toy_task, circuit,
                                                                                        metric=sharp, ablation=ablation)
            assert torch.allclose(ev2.per_example, alone2.per_example, atol=1e-5)
    # and each against the element-by-element reference
    end, yy = toy_task.end_pos, toy_task.positions["YY"]
    at = {"END": lambda b, p: p == int(end[b]), "YY": lambda b, p: p == int(yy[b])}
    for (circuit, test), (ev, _) in zip(jobs[:6], got[:6]):
        pos = circuit.meta.get("positions", {})
        keep = {c: (at[pos[c]] if c in pos else (lambda b, p: True)) for c in circuit.nodes}
        ref = ref_circuit(toy_model, toy_task, keep, test == "necessity", ablation)
        assert torch.allclose(ev.per_example, ref, atol=1e-4), (circuit.name, test)
    assert_no_hooks(toy_model)


def test_a_metric_reading_other_positions_gets_every_position(toy_model, toy_task):
    """The stacked runs unembed only END; a metric reading position 0 (or a mean over positions) must see the
    real logits there, not NaN, and give what the unstacked hook gives."""
    from tutorial_lib.methods.circuit_eval import evaluate_circuits

    first = lambda lg: lg[:, 0, 3] - lg[:, 0, 9]  # noqa: E731
    everywhere = lambda lg: lg[..., 3].mean(1)  # noqa: E731
    circuits = [c for c, t in _jobs(toy_model)[::2]]
    for metric in (first, everywhere):
        got = evaluate_circuits(toy_model, toy_task, circuits, "necessity", metric=metric)
        end, yy = toy_task.end_pos, toy_task.positions["YY"]
        at = {"END": lambda b, p: p == int(end[b]), "YY": lambda b, p: p == int(yy[b])}
        for circuit, ev in zip(circuits[:3], got):
            pos = circuit.meta.get("positions", {})
            keep = {c: (at[pos[c]] if c in pos else (lambda b, p: True)) for c in circuit.nodes}
            with torch.no_grad():
                want = ref_circuit(toy_model, TaskWithMetric(toy_task, metric), keep, True)
            assert torch.isfinite(ev.per_example).all()
            assert torch.allclose(ev.per_example, want, atol=1e-4)


class TaskWithMetric:
    """``task`` with another metric (for the reference)."""

    def __init__(self, task, metric):
        self.task, self.metric = task, metric

    def __getattr__(self, name):
        return getattr(self.task, name)


def test_a_nan_metric_is_refused_with_its_name(toy_model, toy_task):
    from tutorial_lib.methods.circuit_eval import evaluate_circuits

    def log_of_zero(lg):
        return torch.log(lg[torch.arange(len(toy_task)), toy_task.end_pos, 3] * 0)  # -inf
    with pytest.raises(ValueError, match="log_of_zero returned inf .* in the necessity test of m0"):
        evaluate_circuits(toy_model, toy_task, [Circuit(["m0"], name="m0")], metric=log_of_zero)
    with pytest.raises(ValueError, match="unknown test 'both'"):
        evaluate_circuits(toy_model, toy_task, [Circuit(["m0"], name="m0")], test="both")
