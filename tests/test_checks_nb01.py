"""The notebook-01 checks of the probability difference and sufficiency accept right answers and reject the usual
wrong ones (tiny random model, zoo tokenizer); the path-patching exercises are in test_checks_nb01_paths.py."""
import pytest
import torch

from conftest import make_tiny_model
from tutorial_lib import checks
from tutorial_lib.course.checks import ExerciseError
from tutorial_lib.tasks.greater_than import make_greater_than


@pytest.fixture(scope="module")
def setup():
    task = make_greater_than("zoo", n=12, seed=0)
    vocab = int(max(task.clean.max(), task.corrupt.max(), task.year_ids.max())) + 1
    model = make_tiny_model(d_vocab=vocab, d_model=32, d_mlp=64, seed=1)
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(3.0)
        # put the probability on the 100 year tokens, so the probability difference varies widely
        model.unembed.b_U.fill_(-4.0)
        model.unembed.b_U[task.year_ids] = 0.0
        logits = model(task.clean)
    return model, task, logits


def good_prob_diff(logits, task):
    p = task.final_logits(logits).float().softmax(-1)[:, task.year_ids]
    above = torch.arange(100)[None] > task.yy[:, None]
    return (p * above).sum(1) - (p * ~above).sum(1)


def test_prob_diff_check(setup, capsys):
    model, task, logits = setup
    checks.check_prob_diff(good_prob_diff, task, logits)
    assert "passed" in capsys.readouterr().out

    def softmax_over_years(logits, task):
        p = task.final_logits(logits).float()[:, task.year_ids].softmax(-1)
        above = torch.arange(100)[None] > task.yy[:, None]
        return (p * above).sum(1) - (p * ~above).sum(1)

    def geq(logits, task):
        p = task.year_probs(logits)
        above = torch.arange(100)[None] >= task.yy[:, None]
        return (p * above).sum(1) - (p * ~above).sum(1)

    def unfinished(logits, task):
        raise NotImplementedError("Exercise: softmax")

    with pytest.raises(ExerciseError, match="whole vocabulary"):
        checks.check_prob_diff(softmax_over_years, task, logits)
    with pytest.raises(ExerciseError, match="strictly greater"):
        checks.check_prob_diff(geq, task, logits)
    with pytest.raises(ExerciseError, match="not written yet"):
        checks.check_prob_diff(unfinished, task, logits)
    with pytest.raises(ExerciseError, match="shape"):
        checks.check_prob_diff(lambda l, t: good_prob_diff(l, t).mean(), task, logits)


def test_prob_diff_check_pads_the_prompts(setup, capsys):
    """Every greater-than prompt has the same length, so END is the last position: only the padded case tells
    `logits[:, -1]` (or one END for every prompt) from each prompt's END."""
    model, task, logits = setup
    assert (task.end_pos == task.clean.shape[1] - 1).all()

    def last_position(logits, task):
        p = logits[:, -1].float().softmax(-1)[:, task.year_ids]
        above = torch.arange(100)[None] > task.yy[:, None]
        return (p * above).sum(1) - (p * ~above).sum(1)

    def first_end(logits, task):
        p = logits[:, int(task.end_pos[0])].float().softmax(-1)[:, task.year_ids]
        above = torch.arange(100)[None] > task.yy[:, None]
        return (p * above).sum(1) - (p * ~above).sum(1)

    assert torch.allclose(last_position(logits, task), good_prob_diff(logits, task))
    with pytest.raises(ExerciseError, match=r"padded to different lengths \(END at positions \[.*\], the last position "
                                            r"is padding\): you read the last position \(logits\[:, -1\]\); read each prompt's END"):
        checks.check_prob_diff(last_position, task, logits)
    with pytest.raises(ExerciseError, match=r"padded to different lengths.*you read position task\.end_pos\[0\] "
                                            r"for every prompt"):
        checks.check_prob_diff(first_end, task, logits)
    checks.check_prob_diff(lambda l, t: t.prob_diff(l), task, logits)
    assert "check_prob_diff passed" in capsys.readouterr().out


def _patch_outside(model, task, components, invert=False):
    keep = set(components)
    L = model.cfg.n_layers
    names = ["hook_embed"] + [f"blocks.{l}.attn.hook_z" for l in range(L)] + [f"blocks.{l}.hook_mlp_out" for l in range(L)]
    _, cache = model.run_with_cache(task.corrupt, names_filter=lambda n: n in names)

    def inside(name, h=None):
        if name == "hook_embed":
            c = "embed"
        elif name.endswith("hook_mlp_out"):
            c = f"m{name.split('.')[1]}"
        else:
            c = f"a{name.split('.')[1]}.h{h}"
        return (c in keep) != invert

    def hook(act, hook):
        act, old = act.clone(), cache[hook.name]
        if hook.name.endswith("hook_z"):
            for h in range(model.cfg.n_heads):
                if not inside(hook.name, h):
                    act[:, :, h] = old[:, :, h]
            return act
        return act if inside(hook.name) else old

    with torch.no_grad(), model.hooks(fwd_hooks=[(n, hook) for n in names]):
        return task.metric(model(task.clean))


def test_sufficiency_check(setup, capsys):
    model, task, _ = setup
    comps = ["embed", "a0.h1", "m0", "m1"]
    checks.check_sufficiency(lambda m, t, c: _patch_outside(m, t, c), model, task, comps)
    assert "passed" in capsys.readouterr().out
    with pytest.raises(ExerciseError, match="necessity"):
        checks.check_sufficiency(lambda m, t, c: _patch_outside(m, t, c, invert=True), model, task, comps)
    with pytest.raises(ExerciseError, match="values differ"):  # left m1 out of the circuit
        checks.check_sufficiency(lambda m, t, c: _patch_outside(m, t, [x for x in c if x != "m1"]), model, task, comps)
    with pytest.raises(ExerciseError, match="returned None"):
        checks.check_sufficiency(lambda m, t, c: None, model, task, comps)


def never_corrupts_embed(model, task, components):  # the slip: hook_embed is left clean whatever the set
    return _patch_outside(model, task, ["embed", *components])


def always_corrupts_embed(model, task, components):
    return _patch_outside(model, task, [c for c in components if c != "embed"])


@pytest.mark.parametrize("comps", [["embed", "a0.h1", "m0", "m1"], ["a0.h1", "m0", "m1"]])
def test_sufficiency_check_tests_the_embedding_both_ways(setup, comps, capsys):
    model, task, _ = setup
    checks.check_sufficiency(lambda m, t, c: _patch_outside(m, t, c), model, task, comps)
    assert "passed" in capsys.readouterr().out
    with pytest.raises(ExerciseError, match="the embedding was not corrupted"):
        checks.check_sufficiency(never_corrupts_embed, model, task, comps)
    with pytest.raises(ExerciseError, match="corrupted the embedding even though 'embed' is in components"):
        checks.check_sufficiency(always_corrupts_embed, model, task, comps)


def test_sufficiency_check_tests_a_circuit_without_its_mlps(setup, capsys):
    """The default components hold every MLP of the 2-layer model (as the zoo circuit does): only the case
    without them tells a version that never corrupts an MLP from the right one."""
    model, task, _ = setup
    comps = ["embed", "a0.h1", "m0", "m1"]

    def never_corrupts_mlps(model, task, components):
        return _patch_outside(model, task, [*components, *(m for m in ("m0", "m1") if m not in components)])

    def never_corrupts_heads(model, task, components):
        heads = [f"a{l}.h{h}" for l in range(model.cfg.n_layers) for h in range(model.cfg.n_heads)]
        return _patch_outside(model, task, [*components, *(h for h in heads if h not in components)])

    assert torch.allclose(never_corrupts_mlps(model, task, comps), _patch_outside(model, task, comps))
    with pytest.raises(ExerciseError, match=r"metric per prompt with only \['embed', 'a0\.h1'\] clean: the MLPs "
                                            r"outside the circuit were not corrupted"):
        checks.check_sufficiency(never_corrupts_mlps, model, task, comps)
    with pytest.raises(ExerciseError, match=r"the heads outside the circuit were not corrupted"):
        checks.check_sufficiency(never_corrupts_heads, model, task, comps)
    checks.check_sufficiency(lambda m, t, c: _patch_outside(m, t, c), model, task, comps)
    assert "passed" in capsys.readouterr().out


def test_sufficiency_check_default_components(setup):
    model, task, _ = setup
    checks.check_sufficiency(lambda m, t, c: _patch_outside(m, t, c), model, task)
    with pytest.raises(ExerciseError, match="the embedding was not corrupted"):
        checks.check_sufficiency(never_corrupts_embed, model, task)
    with pytest.raises(ExerciseError, match="sign is flipped"):
        checks.check_sufficiency(lambda m, t, c: -_patch_outside(m, t, c), model, task)


def _patch_heads_by_hand(model, task):
    """The exercise's solution, written independently of the check's variants."""
    with torch.no_grad():
        base = task.metric(model(task.clean)).mean()
        _, cache = model.run_with_cache(task.corrupt)
        out = torch.zeros(model.cfg.n_layers, model.cfg.n_heads)
        for l in range(model.cfg.n_layers):
            for h in range(model.cfg.n_heads):
                def hook(z, hook, h=h):
                    z = z.clone()
                    z[:, :, h] = cache[hook.name][:, :, h]
                    return z
                with model.hooks(fwd_hooks=[(f"blocks.{l}.attn.hook_z", hook)]):
                    out[l, h] = task.metric(model(task.clean)).mean() - base
    return out


def test_patch_each_head_check(setup, capsys):
    from tutorial_lib.course.checks.nb01 import _head_patch_variant

    model, task, _ = setup
    checks.check_patch_each_head(_patch_heads_by_hand, model, task)
    assert "passed" in capsys.readouterr().out
    for kwargs, message in [({"denoise": True}, "denoising"), ({"minus_clean": False}, "patched metric itself"),
                            ({"end_only": True}, "only at END"), ({"whole_layer": True}, "every head of the layer")]:
        with pytest.raises(ExerciseError, match=message):
            checks.check_patch_each_head(lambda m, t, kw=kwargs: _head_patch_variant(m, t, **kw), model, task)
    with pytest.raises(ExerciseError, match="expected shape"):
        checks.check_patch_each_head(lambda m, t: _patch_heads_by_hand(m, t).flatten(), model, task)
    with pytest.raises(ExerciseError, match="not written yet"):
        checks.check_patch_each_head(lambda m, t: (_ for _ in ()).throw(NotImplementedError("Exercise: x")), model, task)


def test_necessity_check(setup, capsys):
    model, task, _ = setup
    comps = ["a0.h1", "m0", "m1"]
    checks.check_necessity(lambda m, t, c: _patch_outside(m, t, c, invert=True), model, task, comps)
    assert "passed" in capsys.readouterr().out

    def never_embed(m, t, c):
        return _patch_outside(m, t, [x for x in c if x != "embed"], invert=True)

    def always_embed(m, t, c):
        return _patch_outside(m, t, ["embed", *c], invert=True)

    def no_mlps(m, t, c):
        return _patch_outside(m, t, [x for x in c if not x.startswith("m")], invert=True)

    with pytest.raises(ExerciseError, match="that is the sufficiency test"):
        checks.check_necessity(lambda m, t, c: _patch_outside(m, t, c), model, task, comps)
    with pytest.raises(ExerciseError, match="'embed' is in components but the embedding stayed clean"):
        checks.check_necessity(never_embed, model, task, comps)
    with pytest.raises(ExerciseError, match="the embedding was corrupted although 'embed' is not in components"):
        checks.check_necessity(always_embed, model, task, comps)
    with pytest.raises(ExerciseError, match="the listed MLPs were not corrupted"):
        checks.check_necessity(no_mlps, model, task, comps)


def test_sufficiency_check_names_a_whole_layer_kept_clean(setup):
    """Issue 50: a version that keeps the whole attention layer of a circuit head clean was named as an uncorrupted
    embedding; it is its own slip, named first."""
    model, task, _ = setup

    def whole_layer(model, task, components):
        layers = {c.split(".")[0] for c in components if c.startswith("a")}
        heads = [f"{a}.h{h}" for a in layers for h in range(model.cfg.n_heads)]
        return _patch_outside(model, task, [*components, *heads])

    with pytest.raises(ExerciseError, match=r"you kept a circuit head's whole layer clean"):
        checks.check_sufficiency(whole_layer, model, task, ["embed", "a0.h1", "m0", "m1"])
