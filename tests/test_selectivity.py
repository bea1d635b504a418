"""Tests for tutorial_lib.methods.selectivity: the probe, baseline positions, selectivity, classes."""


import pytest
import torch

from tutorial_lib.core.hooks import count_hooks
from tutorial_lib.methods.selectivity import (
    PATTERNS,
    PlantedPairProbe,
    baseline_positions,
    classify_heads,
    induction_circuit,
    selectivity,
    specialised_fraction,
    specialised_fraction_across,
    target_attention,
)

torch.set_num_threads(1)
from conftest import PLANTED_T as T, PLANTED_V as V, make_tiny_model, planted_pair_tokens  # noqa: E402



# --------------------------------------------------------------------- the probe
def test_from_tokens_finds_the_planted_pair(probe):
    again = PlantedPairProbe.from_tokens(probe.tokens)
    assert torch.equal(again.a_pos, probe.a_pos)
    for i in range(probe.n):
        a = int(probe.a_pos[i])
        assert probe.tokens[i, a] == probe.tokens[i, -1]
        assert probe.targets[i] == probe.tokens[i, a + 1]
    assert probe.query_pos == T - 1


def test_target_positions(probe):
    a = probe.a_pos
    assert torch.equal(probe.target_positions("induction")[:, 0], a + 1)
    assert torch.equal(probe.target_positions("duplicate-token")[:, 0], a)
    assert (probe.target_positions("previous-token") == T - 2).all()
    assert (probe.target_positions("BOS") == 0).all()
    assert (probe.target_positions("self") == T - 1).all()
    assert probe.target_positions("local")[0].tolist() == [T - 3, T - 4, T - 5, T - 6]
    with pytest.raises(ValueError, match="unknown pattern"):
        probe.target_positions("copy")


def test_bad_probes_raise():
    toks, a_pos = planted_pair_tokens(4)
    bad = toks.clone()
    bad[0, 0] = bad[0, -1] if a_pos[0] != 0 else bad[0, 0]
    with pytest.raises(ValueError, match="occurs 2 times"):
        PlantedPairProbe.from_tokens(bad)
    late = toks.clone()
    late[0, :-1] = (late[0, -1] + 1) % V
    late[0, T - 4] = late[0, -1]  # earlier A too close to the end
    with pytest.raises(ValueError, match="a_pos"):
        PlantedPairProbe.from_tokens(late)
    with pytest.raises(ValueError, match="not the final token"):
        PlantedPairProbe(toks, (a_pos + 1).clamp(max=T - 8))
    with pytest.raises(ValueError, match="at least 9"):
        PlantedPairProbe.from_tokens(torch.tensor([[1, 2, 3, 1]]))


def test_baseline_positions_are_seeded_and_avoid_targets(probe):
    b = baseline_positions(probe, n_baseline=50, seed=7)
    assert b.shape == (probe.n, T - 9)  # fewer than 50 positions available
    assert torch.equal(b, baseline_positions(probe, 50, seed=7))
    assert not torch.equal(baseline_positions(probe, 5, seed=7), baseline_positions(probe, 5, seed=8))
    for i in range(probe.n):
        row = set(b[i].tolist())
        assert len(row) == b.shape[1]  # distinct
        forbidden = {0, T - 1, T - 2, T - 3, T - 4, T - 5, T - 6, int(probe.a_pos[i]), int(probe.a_pos[i]) + 1}
        assert not row & forbidden and all(1 <= p <= T - 7 for p in row)
    assert baseline_positions(probe, 3, seed=0).shape == (probe.n, 3)
    with pytest.raises(ValueError, match="n_baseline"):
        baseline_positions(probe, 0)


# --------------------------------------------------------------------- selectivity
@pytest.mark.parametrize("attn_only", [True, False])
def test_selectivity_matches_brute_force_from_cache(probe, attn_only):
    model = make_tiny_model("planted", attn_only=attn_only)
    got = selectivity(model, probe, n_baseline=6, seed=3, batch_size=5)
    base_pos = baseline_positions(probe, 6, seed=3)
    _, cache = model.run_with_cache(probe.tokens)
    for l in range(2):
        pat = cache[f"blocks.{l}.attn.hook_pattern"][:, :, T - 1, :]  # [n, head, key]
        for h in range(4):
            tgt = {p: 0.0 for p in PATTERNS}
            base = 0.0
            for i in range(probe.n):
                row, a = pat[i, h], int(probe.a_pos[i])
                tgt["induction"] += float(row[a + 1])
                tgt["duplicate-token"] += float(row[a])
                tgt["previous-token"] += float(row[T - 2])
                tgt["BOS"] += float(row[0])
                tgt["self"] += float(row[T - 1])
                tgt["local"] += sum(float(row[T - k]) for k in (3, 4, 5, 6)) / 4
                base += sum(float(row[j]) for j in base_pos[i]) / len(base_pos[i])
            for p in PATTERNS:
                assert float(got[p][l, h]) == pytest.approx(tgt[p] / base, rel=1e-4), (p, l, h)
    assert count_hooks(model) == 0


def forced_pattern_hook(probe, layer_rows):
    """Replace the query row of chosen heads in one layer with hand-made weights."""

    def hook(pattern, hook=None):
        pattern = pattern.clone()
        for h, fill in layer_rows.items():
            for i in range(pattern.shape[0]):
                pattern[i, h, T - 1] = fill(int(probe.a_pos[i]))
        return pattern

    return hook


def test_selectivity_on_forced_patterns_is_exact(probe):
    def row(spec, rest=0.01):
        def fill(a):
            r = torch.full((T,), rest)
            for pos, w in spec(a).items():
                r[pos] = w
            return r
        return fill

    rows = {
        0: row(lambda a: {a + 1: 0.6}),  # induction 0.6 / 0.01 = 60
        1: row(lambda a: {0: 0.5, T - 2: 0.2}),  # BOS 50, previous-token 20
        2: row(lambda a: {T - 3: 0.1, T - 4: 0.2, T - 5: 0.3, T - 6: 0.4}),  # local mean 0.25 -> 25
        3: row(lambda a: {a: 0.35, T - 1: 0.3}),  # duplicate 35, self 30
    }
    hooks = [("blocks.1.attn.hook_pattern", forced_pattern_hook(probe, rows))]
    model = make_tiny_model("planted")
    sel = selectivity(model, probe, fwd_hooks=hooks)
    expected = {
        (0, "induction"): 60, (0, "BOS"): 1, (1, "BOS"): 50, (1, "previous-token"): 20, (2, "local"): 25,
        (3, "duplicate-token"): 35, (3, "self"): 30, (2, "induction"): 1,
    }
    for (h, p), v in expected.items():
        assert float(sel[p][1, h]) == pytest.approx(v, rel=1e-5), (h, p)
    classes = classify_heads(sel)
    assert [classes[f"a1.h{h}"] for h in range(4)] == ["induction", "BOS", "unclassified", "duplicate-token"]
    assert induction_circuit(sel) == ["a1.h0"]
    # the same result when the hook is attached by the caller
    with model.hooks(fwd_hooks=hooks):
        again = selectivity(model, probe)
    assert torch.allclose(again["BOS"], sel["BOS"])
    assert count_hooks(model) == 0
    raw = target_attention(model, probe, ("induction",), fwd_hooks=hooks)
    assert float(raw["baseline"][1, 0]) == pytest.approx(0.01, rel=1e-5)


def test_selectivity_rejects_unknown_pattern(probe):
    with pytest.raises(ValueError, match="unknown pattern"):
        selectivity(make_tiny_model("planted"), probe, patterns=("induction", "copying"))


# --------------------------------------------------------------------- classes
def sel_of(**vals):
    return {p: torch.tensor([v]) for p, v in vals.items()}


def test_classify_thresholds():
    sel = sel_of(induction=[50.0, 49.9, 45.0, 10.0], BOS=[60.0, 31.0, 29.9, 30.0])
    # head 0: induction 50 passes but BOS 60 is higher; head 1: induction fails 50, BOS 31 passes;
    # head 2: nothing passes; head 3: BOS exactly at the threshold passes
    assert classify_heads(sel) == {"a0.h0": "BOS", "a0.h1": "BOS", "a0.h2": "unclassified", "a0.h3": "BOS"}
    assert classify_heads(sel, induction_threshold=30)["a0.h1"] == "induction"
    assert classify_heads(sel, induction_threshold=30)["a0.h2"] == "induction"
    assert classify_heads(sel, class_threshold=40, induction_threshold=40)["a0.h2"] == "induction"
    assert classify_heads(sel, class_threshold=61, induction_threshold=61)["a0.h0"] == "unclassified"
    assert induction_circuit(sel) == ["a0.h0"]
    assert induction_circuit(sel, threshold=45) == ["a0.h0", "a0.h1", "a0.h2"]
    with pytest.raises(ValueError, match="unknown pattern"):
        classify_heads({"copy": torch.ones(1, 1)})
    with pytest.raises(ValueError, match="positive"):
        classify_heads(sel, class_threshold=0)


def test_specialised_fraction():
    assert specialised_fraction({"a0.h0": "BOS", "a0.h1": "unclassified", "a1.h0": "induction", "a1.h1": "unclassified"}) == 0.5
    with pytest.raises(ValueError, match="empty"):
        specialised_fraction({})


def test_specialised_fraction_across_models(probe):
    runs = {"attn-only": (make_tiny_model("planted", seed=0), probe), "mlp": (make_tiny_model("planted", seed=1, attn_only=False), probe)}
    out = specialised_fraction_across(runs, class_threshold=1.5, induction_threshold=1.5)
    for name, (model, pr) in runs.items():
        classes = classify_heads(selectivity(model, pr), 1.5, 1.5)
        assert out[name]["classes"] == classes
        assert out[name]["fraction"] == pytest.approx(specialised_fraction(classes))
        assert out[name]["n_heads"] == 8


def test_no_hook_left_behind_after_an_error(probe):
    from tutorial_lib.methods.selectivity import collect_query_activations

    model = make_tiny_model("planted")

    def boom(rows, z, p):
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        collect_query_activations(model, probe.tokens, probe.query_pos, boom)
    assert count_hooks(model) == 0
    with pytest.raises(ValueError, match="batch_size"):
        collect_query_activations(model, probe.tokens, probe.query_pos, boom, batch_size=0)


def test_from_tokens_can_drop_invalid_rows():
    toks, a_pos = planted_pair_tokens(6)
    bad = toks.clone()
    bad[1, :-1] = (bad[1, -1] + 1) % V
    bad[1, T - 3] = bad[1, -1]  # earlier A too close to the end
    bad[4, 0] = bad[4, -1]  # A twice before the end
    probe = PlantedPairProbe.from_tokens(bad, drop_invalid=True)
    assert probe.n == 4 and torch.equal(probe.tokens, bad[[0, 2, 3, 5]])
    assert torch.equal(probe.a_pos, a_pos[[0, 2, 3, 5]])
    with pytest.raises(ValueError, match="no row"):
        PlantedPairProbe.from_tokens(bad[[1]], drop_invalid=True)


# --------------------------------------------------------------------- the two baselines, BOS heads (issue 27, item 8)
def _forced_rows(probe, seed=0):
    """Hand-built attention rows for the 4 heads of layer 1, one per example: [n, 4, T], each row sums to 1."""
    g = torch.Generator().manual_seed(seed)
    rows = torch.rand(probe.n, 4, T, generator=g) ** 3  # uneven, so the two baselines differ
    rows[:, 1, 0] += 5.0  # head 1 leans on BOS
    return rows / rows.sum(-1, keepdim=True)


def _hook_rows(rows):
    def hook(pattern, hook=None):
        pattern = pattern.clone()
        pattern[:, :, T - 1, :] = rows.to(pattern.dtype)
        return pattern
    return [("blocks.1.attn.hook_pattern", hook)]


def _slow_reference(rows, probe, base_pos):
    """Ratios by plain Python loops: {baseline: {pattern: [[value per head]]}} for layer 1."""
    targets = {"induction": lambda a: [a + 1], "duplicate-token": lambda a: [a], "previous-token": lambda a: [T - 2],
               "BOS": lambda a: [0], "self": lambda a: [T - 1], "local": lambda a: [T - 3, T - 4, T - 5, T - 6]}
    out = {"random_positions": {}, "uniform": {}, "attention": {}}
    for p, where in targets.items():
        for key in out:
            out[key][p] = []
        for h in range(4):
            tgt = base = 0.0
            for i in range(probe.n):
                a = int(probe.a_pos[i])
                tgt += sum(float(rows[i, h, j]) for j in where(a)) / len(where(a))
                base += sum(float(rows[i, h, int(j)]) for j in base_pos[i]) / len(base_pos[i])
            tgt, base = tgt / probe.n, base / probe.n
            out["attention"][p].append(tgt)
            out["random_positions"][p].append(tgt / base)
            out["uniform"][p].append(tgt / (1.0 / T))
    return out


def test_both_baselines_match_a_slow_reference_on_hand_built_patterns(probe):
    from tutorial_lib.methods.selectivity import Baseline, Selectivity

    rows = _forced_rows(probe)
    model = make_tiny_model("planted")
    ref = _slow_reference(rows, probe, baseline_positions(probe, 7, seed=2))
    for baseline in ("random_positions", Baseline.UNIFORM):
        sel = selectivity(model, probe, n_baseline=7, seed=2, fwd_hooks=_hook_rows(rows), baseline=baseline)
        assert isinstance(sel, Selectivity) and sel.baseline == Baseline(baseline) and list(sel) == list(PATTERNS)
        for p in PATTERNS:
            want = ref[Baseline(baseline).value][p]
            assert [float(v) for v in sel[p][1]] == pytest.approx(want, rel=1e-4), (baseline, p)
            assert [float(v) for v in sel.attention[p][1]] == pytest.approx(ref["attention"][p], rel=1e-4), p
    # the two baselines really differ here, and with_baseline converts one into the other without a forward pass
    rand = selectivity(model, probe, n_baseline=7, seed=2, fwd_hooks=_hook_rows(rows))
    uni = rand.with_baseline("uniform")
    assert not torch.allclose(rand["induction"][1], uni["induction"][1], rtol=0.05)
    assert torch.allclose(uni["induction"], selectivity(model, probe, n_baseline=7, seed=2, fwd_hooks=_hook_rows(rows),
                                                        baseline="uniform")["induction"])
    assert count_hooks(model) == 0
    with pytest.raises(ValueError, match="unknown baseline 'flat'.*random_positions.*uniform"):
        selectivity(model, probe, baseline="flat")


def _bos_parking_rows(probe):
    """Head 0 parks on BOS: 3% on the target, 0.05% on every other key, the rest (about 96%) on position 0 --
    induction selectivity 60x on random positions. Head 1 is a real induction head (60% on the target)."""
    rows = torch.zeros(probe.n, 4, T)
    for i in range(probe.n):
        a = int(probe.a_pos[i])
        for h, (target, rest) in enumerate([(0.03, 0.0005), (0.6, 0.01), (0.05, 0.05), (0.05, 0.05)]):
            rows[i, h] = rest
            rows[i, h, a + 1] = target
            rows[i, h, 0] = 0.0
            rows[i, h, 0] = 1.0 - rows[i, h].sum()
    return rows


def test_bos_filter_keeps_out_a_bos_parking_head_that_the_ratio_passes(probe):
    from tutorial_lib.methods.selectivity import BOS_HEAD_ATTENTION, bos_heads

    model = make_tiny_model("planted")
    sel = selectivity(model, probe, fwd_hooks=_hook_rows(_bos_parking_rows(probe)))
    ratio, att = float(sel["induction"][1, 0]), float(sel.attention["induction"][1, 0])
    assert ratio >= 50 and att == pytest.approx(0.03, rel=1e-4)  # the ratio alone would admit it
    assert float(sel.bos_attention[1, 0]) >= BOS_HEAD_ATTENTION > float(sel.bos_attention[1, 1])
    assert "a1.h0" in sel.bos_heads() and "a1.h1" not in sel.bos_heads() and bos_heads(sel) == sel.bos_heads()
    assert "a1.h0" not in induction_circuit(sel) and "a1.h1" in induction_circuit(sel)
    assert {"a1.h0", "a1.h1"} <= set(induction_circuit(sel, include_bos_heads=True))
    # the uniform baseline (1/T) does not pass it either: 3% x 20 keys = 0.6x
    assert float(sel.with_baseline("uniform")["induction"][1, 0]) == pytest.approx(0.03 * T, rel=1e-4)
    assert "a1.h0" not in induction_circuit(sel.with_baseline("uniform"), include_bos_heads=True)
    assert sel.describe("a1.h0") .startswith("a1.h0: induction 60×") and "3.0% of its attention on the target" in sel.describe("a1.h0")
    # a plain dict of ratios has no attention: nothing can be called a BOS head
    assert bos_heads(dict(sel)) == [] and "a1.h0" in induction_circuit(dict(sel))


# --------------------------------------------------------------------- every family the papers used
from family_reference import family_model, query_rows  # noqa: E402
from tutorial_lib.core.circuits import ablation_hooks  # noqa: E402
from tutorial_lib.methods import selectivity as selectivity_mod  # noqa: E402
from tutorial_lib.zoo.families import FAMILIES  # noqa: E402


def family_probe(n=12, seed=1):
    return PlantedPairProbe(*planted_pair_tokens(n, 20, 61, seed=seed))


def reference_selectivity(model, probe, fwd_hooks=(), **bug):
    """Mean attention on each pattern's positions and on the baseline positions, and the ratios, from attention
    rows rebuilt by hand (family_reference.query_rows), one forward per example."""
    _, p = query_rows(model, probe.tokens, probe.query_pos, fwd_hooks, **bug)  # [n, L, H, pos]
    rows = torch.arange(probe.n)

    def mean_on(pos):  # pos [n, k]
        return torch.stack([p[rows, :, :, pos[:, j]] for j in range(pos.shape[1])], -1).mean(-1).mean(0)

    att = {name: mean_on(probe.target_positions(name)) for name in PATTERNS}
    att["baseline"] = mean_on(baseline_positions(probe, 50, 0))
    return att, {name: att[name] / att["baseline"].clamp(min=1e-8) for name in PATTERNS}


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_family_selectivity_matches_the_slow_reference(family):
    """Absolute attention on every pattern's target and the ratios, plain and with a layer-0 head ablated (as
    prev_token_dependency measures it), against attention rows rebuilt from hook_rot_q / hook_rot_k (QK-norm and
    rotary applied), key group h // rep, the soft cap and the local window; float64, weights x3."""
    model, probe = family_model(family), family_probe()
    for hooks in ([], ablation_hooks(model, ["a0.h1"], "zero")):
        sel = selectivity(model, probe, fwd_hooks=hooks, batch_size=5)
        att, ratio = reference_selectivity(model, probe, hooks)
        for name in PATTERNS:
            assert torch.allclose(sel.attention[name].double(), att[name], atol=1e-5, rtol=1e-4), (family, name)
            assert torch.allclose(sel[name].double(), ratio[name], atol=1e-5, rtol=1e-4), (family, name)
        assert torch.allclose(sel.attention["baseline"].double(), att["baseline"], atol=1e-5, rtol=1e-4)
    assert count_hooks(model) == 0


def test_planted_bugs_in_the_pattern_are_caught(monkeypatch):
    """Selectivity computed from patterns rebuilt the tempting wrong ways fails the comparison: q and k before
    QK-norm and rotary (Qwen3, OLMo-2, Llama), keys of group h % groups (Llama, Qwen3, Gemma 2), Gemma 2's local
    window or attention soft cap left out. The stand-in without a bug passes."""
    probe = family_probe()
    models = {f: family_model(f) for f in ("llama", "qwen3", "gemma2", "olmo2")}

    def gap(family, **bug):
        m = models[family]
        want, _ = reference_selectivity(m, probe)

        def collect(model, tokens, query_pos, on_chunk, want_z=True, want_pattern=True, fwd_hooks=(), batch_size=64):
            z, p = query_rows(model, tokens, int(query_pos), fwd_hooks, **bug)
            on_chunk(slice(0, tokens.shape[0]), z, p)

        with monkeypatch.context() as mp:
            mp.setattr(selectivity_mod, "collect_query_activations", collect)
            got = selectivity(m, probe).attention
        return max(float(((got[k].double() - want[k]).abs() / (1e-5 + 1e-4 * want[k].abs())).max()) for k in want)

    assert max(gap(f) for f in models) < 1
    for f in ("qwen3", "olmo2", "llama"):
        assert gap(f, pre_norm_qk=True) > 1, f
    for f in ("llama", "qwen3", "gemma2"):
        assert gap(f, group=lambda h: h % 2) > 1, f
    assert gap("gemma2", window=False) > 1 and gap("gemma2", cap=False) > 1
