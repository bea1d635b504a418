import pytest
import torch

from tutorial_lib.core.circuits import Circuit, ablation_effect, ablation_hooks, run_with_ablation
from tutorial_lib.core.components import all_components
from tutorial_lib.core.hooks import assert_no_hooks


def manual_zero_head(model, tokens, layer, head):
    """Reference: recompute layer ``layer``'s attention output by hand without ``head``."""
    def hook(z, hook):
        z = z.clone()
        z[:, :, head] = 0
        return z
    # independent route: subtract the head's contribution from attn_out via W_O instead of editing z
    _, cache = model.run_with_cache(tokens)
    z = cache[f"blocks.{layer}.attn.hook_z"][:, :, head]  # batch pos d_head
    contrib = z @ model.W_O[layer, head]  # batch pos d_model

    def attn_out_hook(out, hook):
        return out - contrib
    with model.hooks(fwd_hooks=[(f"blocks.{layer}.hook_attn_out", attn_out_hook)]):
        return model(tokens)


def test_zero_ablation_of_a_head_matches_manual_subtraction(tiny_model):
    # only valid for the last layer (earlier layers would change downstream z); use layer 1 of 2
    tokens = torch.randint(0, 50, (3, 7))
    got = run_with_ablation(tiny_model, tokens, ["a1.h2"])
    ref = manual_zero_head(tiny_model, tokens, 1, 2)
    assert torch.allclose(got, ref, atol=1e-5)


def test_mean_and_resample_modes(tiny_model):
    tokens = torch.randint(0, 50, (4, 5))
    ref = torch.randint(0, 50, (4, 5))
    # mean over a reference batch of identical rows equals resampling that row
    same = ref[:1].repeat(4, 1)
    a = run_with_ablation(tiny_model, tokens, ["m0", "a1.h0"], mode="mean", reference=same)
    b = run_with_ablation(tiny_model, tokens, ["m0", "a1.h0"], mode="resample", reference=same)
    assert torch.allclose(a, b, atol=1e-5)
    # ablating with the input itself as mean reference of one row leaves that row unchanged
    one = tokens[:1]
    out = run_with_ablation(tiny_model, one, ["m0"], mode="mean", reference=one)
    assert torch.allclose(out, tiny_model(one), atol=1e-5)
    with pytest.raises(ValueError, match="reference"):
        ablation_hooks(tiny_model, ["m0"], mode="mean")
    with pytest.raises(ValueError, match="accepted"):
        ablation_hooks(tiny_model, ["m0"], mode="half")


def test_circuit_set_algebra_and_validation(tiny_model):
    a = Circuit(["a0.h1", "m1"], name="A")
    b = Circuit(["m1", "a1.h0", "a1.h1"], name="B")
    assert (a & b).nodes == {"m1"} and len(a | b) == 4
    assert a.jaccard(b) == pytest.approx(1 / 4)
    assert "a0.h1" in a and "m0" not in a
    assert a.heads == ["a0.h1"] and a.mlps == ["m1"]
    assert len(a.complement(tiny_model)) == 8 + 2 - 2
    with pytest.raises(ValueError):
        Circuit(["logits"])
    with pytest.raises(ValueError, match="does not exist"):
        Circuit(["a5.h0"]).validate(tiny_model)


def test_ablation_effect_reports_per_example_drop(tiny_model):
    tokens = torch.randint(0, 50, (3, 6))
    metric = lambda logits: logits[:, -1, 0]
    eff = ablation_effect(tiny_model, tokens, metric, Circuit(["m0", "m1"]))
    assert eff["drop"].shape == (3,)
    assert torch.allclose(eff["drop"], eff["clean"] - eff["ablated"])
    assert eff["drop"].abs().sum() > 0


def test_circuit_at_selects_by_recorded_position_in_layer_order():
    """A planted 12-layer greater-than circuit: MLPs at END (m8-m11) and at YY (m0-m3), heads in layers
    5-9, where string order (m0, m1, m10, m11, m2 ...; a10 before a5) and layer order differ."""
    from tutorial_lib.methods.path_discovery import paper_greater_than_circuit

    c = paper_greater_than_circuit()
    assert sorted(c.at("END", kind="mlp")) != c.at("END", kind="mlp")  # string order would be wrong here
    assert c.at("END", kind="mlp") == ["m8", "m9", "m10", "m11"]
    assert c.at("YY", kind="mlp") == ["m0", "m1", "m2", "m3"]
    assert c.at("END", kind="head") == ["a5.h1", "a5.h5", "a6.h9", "a7.h10", "a8.h8", "a8.h11", "a9.h1"]
    assert c.at("YY", kind="head") == ["a0.h1", "a0.h3", "a0.h5"]
    assert c.at("YY")[-1] == "m3" and c.at("YY")[0] == "embed"
    planted = Circuit(["a10.h0", "a5.h1", "m10", "m2"], meta={"positions": {"a10.h0": "END", "a5.h1": "END", "m10": "END", "m2": "END"}})
    assert planted.at("END", kind="head") == ["a5.h1", "a10.h0"] and planted.at("END", kind="mlp") == ["m2", "m10"]
    with pytest.raises(ValueError, match="unknown position 'end'"):
        c.at("end")
    with pytest.raises(ValueError, match="kind must be"):
        c.at("END", kind="mlps")
    with pytest.raises(ValueError, match="records no positions"):
        Circuit(["m0"]).at("END")


def test_ablate_each_ablates_one_component_at_a_time(tiny_model):
    from tutorial_lib.core.circuits import ablate_each

    tokens = torch.randint(0, tiny_model.cfg.d_vocab, (3, 8), generator=torch.Generator().manual_seed(0))
    metric = lambda logits: logits[:, -1, 0]  # noqa: E731
    each = ablate_each(tiny_model, tokens, metric)
    n = tiny_model.cfg
    assert len(each) == n.n_layers * (n.n_heads + 1) and list(each)[:2] == ["a0.h0", "a0.h1"]
    for name in ("a0.h1", "m1"):
        assert each[name] == pytest.approx(ablation_effect(tiny_model, tokens, metric, [name])["ablated"].mean().item(), abs=1e-6)
    assert len(set(round(v, 6) for v in each.values())) > 1  # different components, different effects
    assert list(ablate_each(tiny_model, tokens, metric, ["m0"])) == ["m0"]



@pytest.mark.parametrize("family", ["gpt2", "llama", "gemma2", "pythia"])
@pytest.mark.parametrize("mode", ["zero", "mean", "resample"])
def test_stacked_ablate_each_equals_one_run_per_component(family, mode):
    """ablate_each stacks the components' runs along the batch: every component (heads, MLPs, embed), in every mode,
    in chunks that split the components unevenly, must give what run_with_ablation gives for it alone."""
    from tutorial_lib.core.circuits import ablate_each, run_with_ablation
    from tutorial_lib.zoo.families import tiny_family_model

    model = tiny_family_model(family, seed=2, scale=2.0, d_vocab=64)
    tokens = torch.randint(0, 64, (3, 7), generator=torch.Generator().manual_seed(1))
    reference = torch.randint(0, 64, (3, 7), generator=torch.Generator().manual_seed(2))
    metric = lambda logits: logits[:, -1, 5] - logits[:, 2, 7]  # noqa: E731
    names = ["embed"] + [c for c in all_components(model)]
    for chunk in (None, 4):
        each = ablate_each(model, tokens, metric, names, mode, None if mode == "zero" else reference, seed=1, chunk_size=chunk)
        assert list(each) == names
        for name in names:
            alone = metric(run_with_ablation(model, tokens, [name], mode, None if mode == "zero" else reference, seed=1))
            assert each[name] == pytest.approx(alone.mean().item(), abs=1e-5), (family, mode, name, chunk)
    assert len(set(round(v, 5) for v in each.values())) > len(names) // 2
    assert_no_hooks(model)


# ------------------------------------------------------------------ one meaning per ablation (issue 27)
def _logits_with_last_mlp(model, tokens, new_mlp_out):
    """Reference: the last layer's MLP output replaced by ``new_mlp_out``, the logits recomputed by hand
    from the cache (no tutorial_lib ablation code)."""
    L = model.cfg.n_layers - 1
    _, cache = model.run_with_cache(tokens)
    resid = cache[f"blocks.{L}.hook_resid_mid"] + new_mlp_out
    return model.unembed(model.ln_final(resid))


def test_resample_sources_is_a_seeded_derangement():
    from tutorial_lib.core.circuits import resample_sources

    for n in range(2, 9):
        for seed in range(5):
            s = resample_sources(n, seed)
            assert sorted(s.tolist()) == list(range(n)), (n, seed)
            assert (s != torch.arange(n)).all(), f"row kept its own value: n={n}, seed={seed}, {s.tolist()}"
            assert torch.equal(s, resample_sources(n, seed))
    assert len({tuple(resample_sources(6, s).tolist()) for s in range(10)}) > 1
    for bad in (0, 1):
        with pytest.raises(ValueError, match="at least 2"):
            resample_sources(bad)


@pytest.mark.parametrize("n", [2, 3, 5, 8])
def test_resample_ablation_gives_every_row_another_rows_value(tiny_model, n):
    """With the input as its own reference, row i takes row sources[i]'s activation and no row keeps its own
    (the old code shuffled with randperm: with 2 rows and seed 0 nothing at all was ablated)."""
    from tutorial_lib.core.circuits import resample_sources

    tokens = torch.randint(0, 50, (n, 6), generator=torch.Generator().manual_seed(n))
    tokens[:, 0] = torch.arange(n)  # distinct rows
    for seed in range(3):
        got = run_with_ablation(tiny_model, tokens, ["m1"], mode="resample", reference=tokens, seed=seed)
        _, cache = tiny_model.run_with_cache(tokens)
        src = resample_sources(n, seed)
        want = _logits_with_last_mlp(tiny_model, tokens, cache["blocks.1.hook_mlp_out"][src])
        assert torch.allclose(got, want, atol=1e-5)
        assert not torch.allclose(got, tiny_model(tokens), atol=1e-4)


def test_position_ablation_applies_every_head_to_every_row(tiny_model):
    """Ablating two heads of one layer at given positions: each head in each row (the old indexing paired
    row 0 with the first head and row 1 with the second, or raised a shape error for 3 rows)."""
    for batch in (2, 3, 4):
        tokens = torch.randint(0, 50, (batch, 7), generator=torch.Generator().manual_seed(batch))
        pos = torch.randint(0, 7, (batch,), generator=torch.Generator().manual_seed(10 + batch))

        def ref_hook(z, hook):
            z = z.clone()
            for b in range(batch):
                for h in (1, 3):
                    z[b, pos[b], h] = 0.0
            return z

        with torch.no_grad(), tiny_model.hooks(fwd_hooks=[("blocks.0.attn.hook_z", ref_hook)]):
            want = tiny_model(tokens)
        got = run_with_ablation(tiny_model, tokens, ["a0.h1", "a0.h3"], positions=pos)
        assert torch.allclose(got, want, atol=1e-5), batch


def test_mean_ablation_leaves_padding_out(tiny_model):
    """The mean at each position is over the rows whose token there is real, not padding."""
    tokens = torch.randint(0, 50, (4, 6), generator=torch.Generator().manual_seed(0))
    valid = torch.ones(4, 6, dtype=torch.bool)
    valid[0, 3:] = False
    valid[2, 5:] = False
    _, cache = tiny_model.run_with_cache(tokens)
    act = cache["blocks.1.hook_mlp_out"]
    mean = torch.stack([act[valid[:, p], p].mean(0) for p in range(6)])  # [pos, d]
    want = _logits_with_last_mlp(tiny_model, tokens, mean[None].expand_as(act))
    got = run_with_ablation(tiny_model, tokens, ["m1"], mode="mean", reference=tokens, reference_valid=valid)
    assert torch.allclose(got, want, atol=1e-5)
    padded_in = run_with_ablation(tiny_model, tokens, ["m1"], mode="mean", reference=tokens)
    assert not torch.allclose(padded_in, want, atol=1e-4)  # the old mean counted the padding
    with pytest.raises(ValueError, match="reference_valid"):
        ablation_hooks(tiny_model, ["m1"], "mean", reference=tokens, reference_valid=valid[:, :3])


def test_resample_reference_of_another_length_is_refused(tiny_model):
    tokens = torch.randint(0, 50, (3, 6))
    with pytest.raises(ValueError, match="resample ablation"):
        run_with_ablation(tiny_model, tokens, ["m0"], mode="resample", reference=torch.randint(0, 50, (3, 4)))


def test_jaccard_is_one_function():
    from tutorial_lib.core.circuits import jaccard
    from tutorial_lib.methods import consistency
    from tutorial_lib.studies import comparing

    assert jaccard({"a0.h1", "m0"}, ["m0", "m1"]) == pytest.approx(1 / 3) and jaccard([], []) == 1.0
    assert not hasattr(consistency, "_jaccard")
    assert getattr(comparing, "jaccard", jaccard) is jaccard
