"""The checks of notebook 01's path-patching exercises accept right answers and name the usual slips (tiny random
models, zoo tokenizer)."""
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

    # the last layer's MLP has no path to the logits but the direct one: the check's second sender, m0, tells
    # activation patching from path patching
    assert torch.allclose(full_patch(model, task, "m1"), good_direct(model, task, "m1"), atol=1e-4)
    every_path = r"you patched the sender's output for every path \(activation patching\); path patching adds"
    with pytest.raises(ExerciseError, match=r"with m0 -> logits patched at END: " + every_path):
        checks.check_direct_path_patch(full_patch, model, task, "m1")
    with pytest.raises(ExerciseError, match=every_path):
        checks.check_direct_path_patch(full_patch, model, task, "m0")
    with pytest.raises(ExerciseError, match="still attached"):
        checks.check_direct_path_patch(leaves_hook, model, task, "m1")
    model.reset_hooks()
    with pytest.raises(ExerciseError, match="clean run"):
        checks.check_direct_path_patch(no_change, model, task, "m1")


def direct_slip(sign=1.0, at="final", replace=False):
    """The learner's version with one of the usual slips, written as a learner would."""
    def direct_path_patch(model, task, sender):
        end = task.end_pos
        new = component_output(model, task.corrupt, sender, end)
        delta = sign * (new - component_output(model, task.clean, sender, end))
        rows = torch.arange(len(end))

        def add(resid, hook):
            resid = resid.clone()
            if replace:
                resid[rows, end] = new
            else:
                resid[rows, end] += delta
            return resid

        name = f"blocks.{model.cfg.n_layers - 1}.hook_resid_post" if at == "final" else "blocks.0.hook_resid_pre"
        with torch.no_grad(), model.hooks(fwd_hooks=[(name, add)]):
            return task.metric(model(task.clean))
    return direct_path_patch


@pytest.mark.parametrize("slip,message", [
    (dict(sign=-1.0), r"m1 -> logits patched at END: the sign is flipped: the difference to add is the corrupted "
                      r"output minus the clean one"),
    (dict(replace=True), r"you replaced the residual stream at END by the sender's corrupted output \(`=`\): add "
                         r"the difference to it \(`\+=`\)"),
    (dict(at="input"), r"you added the difference at blocks\.0\.hook_resid_pre, the model's input: then every layer "
                       r"sees it"),
])
def test_direct_path_patch_check_names_each_slip(setup, slip, message):
    model, task, _ = setup
    checks.check_direct_path_patch(direct_slip(), model, task, "m1")
    with pytest.raises(ExerciseError, match=message):
        checks.check_direct_path_patch(direct_slip(**slip), model, task, "m1")


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
    from tutorial_lib.course.checks.nb01_paths import _mlp_path_variant
    from tutorial_lib.methods.path_patching import path_patch

    model, task = deep
    by_hand = _mlp_path_variant(model, task, sender, receiver)
    engine = path_patch(model, task.clean, task.corrupt, [sender], [receiver], task.metric,
                        sender_positions=task.end_pos, logit_positions=task.end_pos)["patched"]
    assert torch.allclose(by_hand, engine, atol=1e-5, rtol=1e-5), (by_hand - engine).abs().max()
    clean = task.metric(model(task.clean)).detach()
    assert (by_hand - clean).abs().max() > 1e-3  # the pair has an effect, so the check can tell answers apart


def _learner_version(**slip):
    from tutorial_lib.course.checks.nb01_paths import _mlp_path_variant

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


def end_search_slip(position="END", sign="negative", strongest_only=False, keep_first=True, thresholded=True):
    """A learner's end_search with one of the usual slips."""
    from tutorial_lib.methods.path_discovery import discover_step
    from tutorial_lib.methods.path_patching import top_senders

    def end_search(model, task, threshold):
        th = threshold if thresholded else None
        first = top_senders(discover_step(model, task, "logits", "END", progress=False), threshold=th, sign=sign)
        found = set(first) if keep_first else set()
        mlps = [c for c in first if c.startswith("m")]
        for m in mlps[:1] if strongest_only else mlps:
            found |= set(top_senders(discover_step(model, task, m, position, progress=False), threshold=th, sign=sign))
        return found
    return end_search


@pytest.mark.parametrize("slip,message", [
    # at 0.005 the strongest MLP's step (m0) finds at END what the steps at YY find: the check runs once more,
    # where the two differ (test_end_search_check_separates_slips_that_give_the_same_set)
    (dict(strongest_only=True), r"^you ran step 2 into m0 only: run a step into every MLP that step 1 found \(m0, m1\); "
                                r"the others add \['a1\.h0'\]"),
    (dict(position="YY"), r"^you ran step 2 with the senders at YY \(sender_position=\"YY\"\)"),
    (dict(keep_first=False), r"you returned only what step 2 found: add step 1's own senders \(the senders into the "
                             r"logits\) too -- missing \['m1'\]"),
    (dict(thresholded=False), r"you kept senders whose effects are below the threshold \(\[.*\]\): pass "
                              r"threshold=threshold to top_senders"),
    (dict(sign="abs"), r"you kept \[.*\], whose effects are positive"),
])
def test_end_search_check_names_each_slip(deep, slip, message):
    model, task = deep
    checks.check_end_search(end_search_slip(), model, task, 0.005)
    with pytest.raises(ExerciseError, match=message):
        checks.check_end_search(end_search_slip(**slip), model, task, 0.005)


def test_end_search_check_adds_a_second_case_where_the_slips_differ(deep, capsys):
    """At 0.01 step 1 keeps no MLP, so step 2 into the strongest MLP only gives the right (empty) set. On 2 prompts
    no threshold tells it apart either (only m2 lowers the metric there), so the check runs on all the prompts at
    the largest lower threshold where it does."""
    from tutorial_lib.course.checks.nb01_paths import _EndSearch

    model, task = deep
    ref = _EndSearch(model, task)
    assert ref.search(0.01, strongest_only=True) == ref.search(0.01)
    need = [not apart for apart in ref.tells_apart(0.01)]
    assert _EndSearch(model, task.subset(range(2))).threshold_for(0.01, need) == (None, False)
    t2, complete = ref.threshold_for(0.01, need)
    assert complete and t2 < 0.01 and ref.search(t2, strongest_only=True) != ref.search(t2)
    checks.check_end_search(end_search_slip(), model, task, 0.01)
    assert f"also right on 10 prompts at threshold {t2:.3g}" in capsys.readouterr().out
    with pytest.raises(ExerciseError, match=rf"^on the same prompts at threshold {t2:.3g} \(a second case the check "
                                            r"adds, where the usual slips give sets of their own\): .*you ran step 2 "
                                            r"into m0 only"):
        checks.check_end_search(end_search_slip(strongest_only=True), model, task, 0.01)
    assert all(ref.tells_apart(0.005))  # 0.005 tells both slips apart already: no second run


def test_end_search_check_prefers_a_few_prompts(deep, capsys, monkeypatch):
    """Where a few prompts tell the slips apart, the second case runs on them (their steps cost little), and the
    check looks no further (on the zoo model it is so; on this tiny model only m2 lowers the metric on 2 prompts,
    so the few prompts' answer is put in by hand)."""
    from tutorial_lib.course.checks import nb01_paths as nb01

    model, task = deep
    asked, runs = [], []
    monkeypatch.setattr(nb01._EndSearch, "threshold_for",
                        lambda self, threshold, need, extra_steps=2: asked.append(len(self.task)) or (0.004, True))
    real = end_search_slip()
    checks.check_end_search(lambda m, t, th: runs.append((len(t), th)) or real(m, t, th), model, task, 0.01)
    assert asked == [2] and runs == [(10, 0.01), (2, 0.004)]
    assert "also right on 2 prompts at threshold 0.004" in capsys.readouterr().out
    # right at 0.01, where step 1 keeps nothing; wrong on the 2 prompts at 0.004
    assert end_search_slip(keep_first=False)(model, task, 0.01) == real(model, task, 0.01)
    with pytest.raises(ExerciseError, match=r"^on the first 2 prompts at threshold 0\.004 \(a second case the check "
                                            r"adds, .*\): you returned only what step 2 found"):
        checks.check_end_search(end_search_slip(keep_first=False), model, task, 0.01)


def test_end_search_check_second_case_costs_few_steps(deep, monkeypatch):
    """The second case runs into at most 2 MLPs more than the notebook's threshold needs."""
    from tutorial_lib.course.checks import nb01_paths as nb01

    calls = []
    real = nb01._EndSearch.step

    def counting(self, receiver, position="END"):
        if (receiver, position) not in self.steps:
            calls.append((len(self.task), receiver, position))
        return real(self, receiver, position)

    monkeypatch.setattr(nb01._EndSearch, "step", counting)
    model, task = deep
    checks.check_end_search(end_search_slip(), model, task, 0.05)
    for n in (2, 10):  # 0.05 keeps no MLP: each second case may step into at most 2
        assert len([c for c in calls if c[0] == n and c[1] != "logits"]) <= 2, calls


def test_end_search_check_separates_slips_that_give_the_same_set(deep, monkeypatch):
    """At 0.005 step 2 at YY and step 2 into the strongest MLP only give the same set: the check runs the answer
    once more where they differ, and names the one it is; with no such case it names both."""
    from tutorial_lib.course.checks import nb01_paths as nb01

    model, task = deep
    ref = nb01._EndSearch(model, task)
    assert ref.search(0.005, position="YY") == ref.search(0.005, strongest_only=True) != ref.search(0.005)
    runs = []
    slip = end_search_slip(position="YY")
    with pytest.raises(ExerciseError, match=r"^you ran step 2 with the senders at YY"):
        checks.check_end_search(lambda m, t, th: runs.append((len(t), th)) or slip(m, t, th), model, task, 0.005)
    assert len(runs) == 2 and runs[0] == (10, 0.005)
    monkeypatch.setattr(nb01, "_separating_case", lambda *a, **k: None)
    with pytest.raises(ExerciseError, match=r"^your set \(\[.*\]\) is what 2 usual slips give here: you ran step 2 "
                                            r"with the senders at YY .*; or you ran step 2 into m0 only"):
        checks.check_end_search(slip, model, task, 0.005)
