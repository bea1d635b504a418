"""The notebook-01 checks accept right answers and reject the usual wrong ones (tiny random model, zoo tokenizer)."""
import pytest
import torch

from conftest import make_tiny_model
from tutorial_lib import checks
from tutorial_lib.course.checks import ExerciseError
from tutorial_lib.methods.lens import component_output
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


def good_direct(model, task, sender):
    end = task.end_pos
    delta = component_output(model, task.corrupt, sender, end) - component_output(model, task.clean, sender, end)
    rows = torch.arange(len(end))

    def add(resid, hook):
        resid = resid.clone()
        resid[rows, end] += delta
        return resid

    with torch.no_grad(), model.hooks(fwd_hooks=[(f"blocks.{model.cfg.n_layers - 1}.hook_resid_post", add)]):
        return task.metric(model(task.clean))


def test_direct_path_patch_check(setup, capsys):
    model, task, _ = setup
    for sender in ("m1", "a0.h2", "m0"):
        checks.check_direct_path_patch(good_direct, model, task, sender)
    assert "passed" in capsys.readouterr().out

    def full_patch(model, task, sender):  # patches the MLP output (all paths), not the direct path
        name = f"blocks.{sender[1:]}.hook_mlp_out"
        _, cache = model.run_with_cache(task.corrupt, names_filter=name)
        with torch.no_grad(), model.hooks(fwd_hooks=[(name, lambda a, hook: cache[name])]):
            return task.metric(model(task.clean))

    def leaves_hook(model, task, sender):
        model.add_hook("blocks.1.hook_resid_post", lambda a, hook: a)
        return good_direct(model, task, sender)

    def no_change(model, task, sender):
        with torch.no_grad():
            return task.metric(model(task.clean))

    with pytest.raises(ExerciseError, match="values differ"):
        checks.check_direct_path_patch(full_patch, model, task, "m0")
    with pytest.raises(ExerciseError, match="still attached"):
        checks.check_direct_path_patch(leaves_hook, model, task, "m1")
    model.reset_hooks()
    with pytest.raises(ExerciseError, match="clean run"):
        checks.check_direct_path_patch(no_change, model, task, "m1")


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


def test_sufficiency_check_default_components(setup):
    model, task, _ = setup
    checks.check_sufficiency(lambda m, t, c: _patch_outside(m, t, c), model, task)
    with pytest.raises(ExerciseError, match="the embedding was not corrupted"):
        checks.check_sufficiency(never_corrupts_embed, model, task)
    with pytest.raises(ExerciseError, match="sign is flipped"):
        checks.check_sufficiency(lambda m, t, c: -_patch_outside(m, t, c), model, task)


# ---------------------------------------------------------------- sender -> MLP input, by hand (exercise 3)
@pytest.fixture(scope="module")
def deep():
    """3 layers, so that a receiver MLP has a layer after it (its change must reach the logits through it)."""
    task = make_greater_than("zoo", n=10, seed=0)
    vocab = int(max(task.clean.max(), task.corrupt.max(), task.year_ids.max())) + 1
    model = make_tiny_model(n_layers=3, d_vocab=vocab, d_model=32, d_mlp=64, seed=2, n_ctx=32)
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(2.0)
        model.unembed.b_U.fill_(-4.0)
        model.unembed.b_U[task.year_ids] = 0.0
    return model, task


PAIRS = [("a0.h2", "m1"), ("m0", "m1"), ("a1.h2", "m1"), ("a0.h0", "m2"), ("m1", "m2"), ("a2.h0", "m2")]


@pytest.mark.parametrize("sender,receiver", PAIRS)
def test_the_hook_reference_equals_the_path_patching_engine(deep, sender, receiver):
    """An independent check of the engine: sender -> MLP input by hand with hooks = path_patch, to 1e-5."""
    from tutorial_lib.course.checks.nb01 import _mlp_path_variant
    from tutorial_lib.methods.path_patching import path_patch

    model, task = deep
    by_hand = _mlp_path_variant(model, task, sender, receiver)
    engine = path_patch(model, task.clean, task.corrupt, [sender], [receiver], task.metric,
                        sender_positions=task.end_pos, logit_positions=task.end_pos)["patched"]
    assert torch.allclose(by_hand, engine, atol=1e-5, rtol=1e-5), (by_hand - engine).abs().max()
    clean = task.metric(model(task.clean)).detach()
    assert (by_hand - clean).abs().max() > 1e-3  # the pair has an effect, so the check can tell answers apart


def _learner_version(**slip):
    from tutorial_lib.course.checks.nb01 import _mlp_path_variant

    def path_patch_to_mlp(model, task, sender, receiver):
        return _mlp_path_variant(model, task, sender, receiver, **slip)
    return path_patch_to_mlp


def good_path_patch_to_mlp(model, task, sender, receiver):
    layer = int(receiver[1:])
    end, rows = task.end_pos, torch.arange(len(task.end_pos))
    delta = component_output(model, task.corrupt, sender, end) - component_output(model, task.clean, sender, end)
    with torch.no_grad():
        _, cache = model.run_with_cache(task.clean, names_filter=f"blocks.{layer}.hook_resid_mid")
        resid = cache[f"blocks.{layer}.hook_resid_mid"].clone()
        resid[rows, end] += delta
        block = model.blocks[layer]
        new_out = block.mlp(block.ln2(resid))
        with model.hooks(fwd_hooks=[(f"blocks.{layer}.hook_mlp_out", lambda out, hook: new_out)]):
            return task.metric(model(task.clean))


def test_path_patch_to_mlp_check_accepts_a_right_answer(deep, capsys):
    model, task = deep
    checks.check_path_patch_to_mlp(good_path_patch_to_mlp, model, task, "a0.h2", "m1")
    out = capsys.readouterr().out
    assert "check_path_patch_to_mlp passed" in out and "a0.h2 -> m1" in out


@pytest.mark.parametrize("slip,phrase", [
    (dict(sign=-1.0), "sign is flipped"),
    (dict(into="resid_mid"), "hook_resid_mid"),
    (dict(into="resid_pre"), "hook_resid_pre"),
    (dict(frozen_ln=True), "LayerNorm scale"),
    (dict(all_positions=True), "every position"),
    (dict(downstream=False), "later layers never saw it"),
])
def test_path_patch_to_mlp_check_names_each_slip(deep, slip, phrase):
    model, task = deep
    with pytest.raises(ExerciseError, match=phrase):
        checks.check_path_patch_to_mlp(_learner_version(**slip), model, task, "a0.h2", "m1")


def test_path_patch_to_mlp_check_other_failures(deep):
    model, task = deep
    with pytest.raises(ExerciseError, match="clean run's metric"):
        checks.check_path_patch_to_mlp(lambda m, t, s, r: t.metric(m(t.clean)), model, task, "a0.h2", "m1")
    with pytest.raises(ExerciseError, match="not written yet"):
        checks.check_path_patch_to_mlp(lambda *a: (_ for _ in ()).throw(NotImplementedError("Exercise")),
                                       model, task, "a0.h2", "m1")

    def leaky(model, task, sender, receiver):
        model.add_hook("blocks.0.hook_resid_pre", lambda x, hook: x)
        return good_path_patch_to_mlp(model, task, sender, receiver)
    with pytest.raises(ExerciseError, match="still attached"):
        checks.check_path_patch_to_mlp(leaky, model, task, "a0.h2", "m1")
    model.reset_hooks()


# ---------------------------------------------------------------- chaining steps 1 and 2 (exercise 4)
def good_end_search(model, task, threshold):
    from tutorial_lib.methods.path_discovery import discover_step
    from tutorial_lib.methods.path_patching import top_senders

    found = set(top_senders(discover_step(model, task, "logits", "END", progress=False), threshold=threshold,
                            sign="negative"))
    for m in [c for c in found if c.startswith("m")]:
        found |= set(top_senders(discover_step(model, task, m, "END", progress=False), threshold=threshold,
                                 sign="negative"))
    return found


def test_end_search_check(deep, capsys):
    from tutorial_lib.methods.path_discovery import discover_step
    from tutorial_lib.methods.path_patching import top_senders

    model, task = deep
    threshold = 0.005
    step1 = set(top_senders(discover_step(model, task, "logits", "END", progress=False), threshold=threshold,
                            sign="negative"))
    assert any(c.startswith("m") for c in step1)  # the case exercises step 2
    assert good_end_search(model, task, threshold) != step1  # ... and step 2 adds something
    checks.check_end_search(good_end_search, model, task, threshold)
    assert "check_end_search passed" in capsys.readouterr().out
    with pytest.raises(ExerciseError, match="step 1's senders only"):
        checks.check_end_search(lambda m, t, th: step1, model, task, threshold)

    def both_signs(model, task, threshold):
        found = set(top_senders(discover_step(model, task, "logits", "END", progress=False), threshold=threshold))
        for m in [c for c in found if c.startswith("m")]:
            found |= set(top_senders(discover_step(model, task, m, "END", progress=False), threshold=threshold))
        return found
    assert both_signs(model, task, threshold) != good_end_search(model, task, threshold)
    with pytest.raises(ExerciseError, match="positive"):
        checks.check_end_search(both_signs, model, task, threshold)
    with pytest.raises(ExerciseError, match="set of component names"):
        checks.check_end_search(lambda m, t, th: 3, model, task, threshold)
