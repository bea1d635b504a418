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

        if at == "logits":  # through W_U by hand: the final LayerNorm never sees the change
            with torch.no_grad():
                logits = model(task.clean)
                logits[rows, end] += delta @ model.W_U
            return task.metric(logits)
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
    (dict(at="logits"), r"you added the change to the logits through W_U, so the final LayerNorm was not recomputed"),
])
def test_direct_path_patch_check_names_each_slip(setup, slip, message):
    model, task, _ = setup
    checks.check_direct_path_patch(direct_slip(), model, task, "m1")
    with pytest.raises(ExerciseError, match=message):
        checks.check_direct_path_patch(direct_slip(**slip), model, task, "m1")


# ---------------------------------------------------------------- the engine by hand: path_patch (exercise 4)
@pytest.fixture(scope="module")
def deep():
    """3 layers, so that a receiver has a layer after it (its change must reach the logits through it)."""
    task = make_greater_than("zoo", n=10, seed=0)
    vocab = int(max(task.clean.max(), task.corrupt.max(), task.year_ids.max())) + 1
    model = make_tiny_model(n_layers=3, d_vocab=vocab, d_model=32, d_mlp=64, seed=2, n_ctx=32)
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(2.0)
        model.unembed.b_U.fill_(-4.0)
        model.unembed.b_U[task.year_ids] = 0.0
    return model, task


@pytest.fixture(scope="module")
def llama():
    """A tiny Llama-family model (grouped-query attention: 2 key/value heads for 4 query heads) on a toy task
    with one corrupted position, YY."""
    from tutorial_lib.tasks.base import TaskData
    from tutorial_lib.zoo.families import tiny_family_model

    model = tiny_family_model("llama")
    assert model.cfg.n_key_value_heads < model.cfg.n_heads
    g = torch.Generator().manual_seed(0)
    B, T = 6, 9
    clean = torch.randint(1, 30, (B, T), generator=g)
    corrupt = clean.clone()
    corrupt[:, 3] = torch.randint(30, 60, (B,), generator=g)
    task = TaskData("toy", [""] * B, [""] * B, clean, corrupt, torch.tensor([8, 7, 8, 8, 6, 8]), torch.full((B,), 3),
                    torch.full((B, 1), 9), positions={"YY": torch.full((B,), 3)})
    return model, task


PAIRS = [("a0.h2", "m1", "END"), ("m0", "m1", "END"), ("a1.h2", "m1", "END"), ("a0.h0", "m2", "END"),
         ("m1", "m2", "END"), ("a2.h0", "m2", "END"), ("a0.h3", "a2.h3.k", "YY"), ("m0", "a1.h0.v", "YY"),
         ("a1.h2", "a2.h1.q", "END"), ("m1", "a2.h2.q", "END")]


@pytest.mark.parametrize("sender,receiver,position", PAIRS)
def test_the_hook_reference_equals_the_path_patching_engine(deep, sender, receiver, position):
    """An independent check of the engine: sender -> receiver input by hand with hooks = discover_step, to 1e-5."""
    from tutorial_lib.course.checks.nb01_paths import _path_variant
    from tutorial_lib.methods.path_discovery import discover_step

    model, task = deep
    ref = _path_variant(model, task, sender, receiver, position)
    step = discover_step(model, task, receiver, sender_position=position, senders=[sender], progress=False)
    assert torch.allclose(ref, step.per_example[sender].float(), atol=1e-5)
    assert float((ref - step.baseline_examples.float()).abs().max()) > 1e-4  # a path with an effect to compare


def _learner_path_patch(**slip):
    from tutorial_lib.course.checks.nb01_paths import _path_variant

    return lambda model, task, sender, receiver, position: _path_variant(model, task, sender, receiver, position,
                                                                         **slip)


PATH_SLIPS = [
    (dict(sign=-1.0), "the sign is flipped"),
    (dict(activation=True), "activation patching"),
    (dict(into="resid"), r"added the change to the residual stream \(hook_resid_"),
    (dict(every_position=True), "at every position: only"),
    (dict(into="layer"), "every head in the layer"),
    (dict(head_output="all"), "kept at every position: the search reads a circuit head at END"),
]


@pytest.mark.parametrize("which", ["deep", "llama"])
def test_path_patch_check_accepts_a_right_answer(which, request, capsys):
    model, task = request.getfixturevalue(which)
    L = model.cfg.n_layers
    checks.check_path_patch(_learner_path_patch(), model, task, "a0.h1", f"m{L - 1}", head=f"a{L - 1}.h1")
    out = capsys.readouterr().out
    assert "check_path_patch passed" in out and f"a{L - 1}.h1.k at YY" in out and f"a{L - 1}.h1.q at END" in out


@pytest.mark.parametrize("which", ["deep", "llama"])
@pytest.mark.parametrize("slip,phrase", PATH_SLIPS)
def test_path_patch_check_names_each_slip(which, request, slip, phrase):
    """(A head and an MLP below the last layer: the last layer's output elsewhere than END never reaches the metric,
    so there the slips about other positions make no difference. The sender is the embedding: a head sender of the
    MLP's own layer, changed in the residual stream after it, is activation patching of that head at END.)"""
    model, task = request.getfixturevalue(which)
    L = model.cfg.n_layers
    with pytest.raises(ExerciseError, match=phrase):
        checks.check_path_patch(_learner_path_patch(**slip), model, task, "embed", f"m{L - 2}", head=f"a{L - 2}.h1")


def test_path_patch_check_names_the_wrong_input(deep):
    """The key asked, the query patched: the check names the input."""
    from tutorial_lib.course.checks.nb01_paths import _path_variant

    model, task = deep
    wrong_input = lambda m, t, s, r, p: _path_variant(m, t, s, r, p, into="q" if r.endswith(".k") else "input")  # noqa
    with pytest.raises(ExerciseError, match=r"you patched the head's q input, which at YY does not change what the "
                                            r"head writes at END; the receiver is its k input"):
        checks.check_path_patch(wrong_input, model, task, "a0.h1", "m2", head="a2.h1")


def test_path_patch_check_other_failures(deep):
    model, task = deep
    with pytest.raises(ExerciseError, match="returned None"):
        checks.check_path_patch(lambda *a: None, model, task, "a0.h1", "m2")
    clean = lambda m, t, *a: t.metric(m(t.clean)).detach()  # noqa: E731
    with pytest.raises(ExerciseError, match="equals the clean run's metric"):
        checks.check_path_patch(clean, model, task, "a0.h1", "m2")

    def leaves_a_hook(model, task, sender, receiver, position):
        model.blocks[0].hook_resid_pre.add_hook(lambda x, hook: x)
        return _learner_path_patch()(model, task, sender, receiver, position)

    with pytest.raises(ExerciseError, match="a hook is still attached"):
        checks.check_path_patch(leaves_a_hook, model, task, "a0.h1", "m2")
    model.reset_hooks()


# ---------------------------------------------------------------- one step of the search (exercise 5)
def _learner_step(slip: str = ""):
    """search_step built on the reference path_patch, right or with a slip."""
    from tutorial_lib.core.components import all_components, parse
    from tutorial_lib.course.checks.nb01_paths import _path_variant

    def step(model, task, receiver, position):
        with torch.no_grad():
            clean = task.metric(model(task.clean)).float()
        r = parse(receiver)
        out = {}
        for name in all_components(model, include_embed=True):
            s = parse(name)
            late = (s.kind == "mlp" and s.layer >= r.layer) or (
                s.kind == "head" and (s.layer > r.layer or (s.layer == r.layer and r.kind == "head")))
            if late and slip != "every sender":
                continue
            patched = _path_variant(model, task, name, receiver, position) if not late else clean + 1.0
            effect = float(patched.mean()) if slip == "patched" else float((patched - clean).mean())
            out[name] = -effect if slip == "sign" else effect
        if slip == "no embed":
            out.pop("embed")
        return out

    return step


@pytest.mark.parametrize("which,receiver,position", [("deep", "m2", "END"), ("deep", "a2.h0.k", "YY"),
                                                     ("llama", "m1", "END"), ("llama", "a1.h2.v", "YY")])
def test_search_step_check_accepts_a_right_answer(which, receiver, position, request, capsys):
    model, task = request.getfixturevalue(which)
    checks.check_search_step(_learner_step(), model, task, receiver, position)
    assert "check_search_step passed" in capsys.readouterr().out


@pytest.mark.parametrize("which", ["deep", "llama"])
@pytest.mark.parametrize("slip,phrase", [("patched", "you returned the path-patched metric itself"),
                                         ("sign", "the effect has the wrong sign"),
                                         ("every sender", "cannot reach"),
                                         ("no embed", r"missing \(e\.g\. \['embed'\]\)")])
def test_search_step_check_names_each_slip(which, request, slip, phrase):
    model, task = request.getfixturevalue(which)
    with pytest.raises(ExerciseError, match=phrase):
        checks.check_search_step(_learner_step(slip), model, task, f"m{model.cfg.n_layers - 1}")
