import pytest
import torch

from tutorial_lib import checks
from tutorial_lib.course.checks import ExerciseError
from tutorial_lib.tasks.base import TaskData


def good_zero(z, hook, head):
    z = z.clone()
    z[:, :, head] = 0
    return z


def test_zero_head_hook_check_accepts_right_and_rejects_wrong(tiny_model, capsys):
    checks.check_zero_head_hook(good_zero, tiny_model)
    assert "passed" in capsys.readouterr().out

    def zeros_everything(z, hook, head):
        return torch.zeros_like(z)

    def wrong_axis(z, hook, head):
        z = z.clone()
        z[:, head] = 0
        return z

    def unfinished(z, hook, head):
        raise NotImplementedError("Exercise: set the slice to zero")

    with pytest.raises(ExerciseError, match="values differ"):
        checks.check_zero_head_hook(zeros_everything)
    with pytest.raises(ExerciseError, match=r"you zeroed position 0 of every head \(z\[:, head\] indexes the pos "
                                            r"dimension\).*z\[:, :, head\] = 0"):
        checks.check_zero_head_hook(wrong_axis)

    def batch_axis(z, hook, head):
        z = z.clone()
        z[head] = 0
        return z

    def last_axis(z, hook, head):
        z = z.clone()
        z[..., head] = 0
        return z

    with pytest.raises(ExerciseError, match=r"you zeroed example 0 of the batch"):
        checks.check_zero_head_hook(batch_axis)
    with pytest.raises(ExerciseError, match=r"you zeroed entry 0 of d_head in every head"):
        checks.check_zero_head_hook(last_axis)
    with pytest.raises(ExerciseError, match="not written yet"):
        checks.check_zero_head_hook(unfinished)
    with pytest.raises(ExerciseError, match="returned None"):
        checks.check_zero_head_hook(lambda z, hook, head: None)


def _task(n=4, T=5, vocab=50, n_wrong=2):
    g = torch.Generator().manual_seed(0)
    clean = torch.randint(0, vocab, (n, T), generator=g)
    return TaskData("toy", [""] * n, [""] * n, clean, clean.clone(), torch.full((n,), T - 1),
                    torch.randint(0, vocab, (n,), generator=g), torch.randint(0, vocab, (n, n_wrong), generator=g))


def good_logit_diff(logits, task):
    final = logits[torch.arange(len(task)), task.end_pos]
    return final.gather(1, task.answers[:, None])[:, 0] - final.gather(1, task.wrong).mean(1)


def _at(final, task, reduce="mean"):
    wrong = final.gather(1, task.wrong)
    wrong = {"mean": wrong.mean(1), "first": wrong[:, 0], "sum": wrong.sum(1)}[reduce]
    return final.gather(1, task.answers[:, None])[:, 0] - wrong


def last_position(logits, task):  # the slip: every IOI prompt has the same length, so -1 == end_pos
    return _at(logits[:, -1], task)


def first_end_pos(logits, task):  # one position for the whole batch
    return _at(logits[:, int(task.end_pos[0])], task)


def first_wrong_only(logits, task):
    return _at(logits[torch.arange(len(task)), task.end_pos], task, "first")


def sum_of_wrong(logits, task):
    return _at(logits[torch.arange(len(task)), task.end_pos], task, "sum")


def flipped(logits, task):
    return -good_logit_diff(logits, task)


def of_probabilities(logits, task):
    return _at(logits[torch.arange(len(task)), task.end_pos].softmax(-1), task)


def test_logit_diff_check(tiny_model, capsys):
    task = _task()
    logits = tiny_model(task.clean)
    checks.check_logit_diff(lambda lg, t: t.logit_diff(lg), task, logits)
    checks.check_logit_diff(good_logit_diff, task, logits)
    assert "passed" in capsys.readouterr().out
    with pytest.raises(ExerciseError, match="shape"):
        checks.check_logit_diff(lambda lg, t: t.logit_diff(lg)[:2], task, logits)  # wrong shape
    with pytest.raises(ExerciseError):  # reads position 0 instead of end_pos and the first wrong only
        checks.check_logit_diff(lambda lg, t: lg[:, 0].gather(1, t.answers[:, None])[:, 0], task, logits)
    # every end_pos of this task is the last position: the padded examples must catch these two
    with pytest.raises(ExerciseError, match=r"you read the last position.*task\.end_pos"):
        checks.check_logit_diff(last_position, task, logits)
    with pytest.raises(ExerciseError, match=r"task\.end_pos\[0\] for every example"):
        checks.check_logit_diff(first_end_pos, task, logits)
    with pytest.raises(ExerciseError, match="only the first wrong answer"):
        checks.check_logit_diff(first_wrong_only, task, logits)
    with pytest.raises(ExerciseError, match="sum of the wrong answers"):
        checks.check_logit_diff(sum_of_wrong, task, logits)
    with pytest.raises(ExerciseError, match="sign is flipped"):
        checks.check_logit_diff(flipped, task, logits)
    with pytest.raises(ExerciseError, match="probabilities"):
        checks.check_logit_diff(of_probabilities, task, logits)
    with pytest.raises(ExerciseError, match="single number"):
        checks.check_logit_diff(lambda lg, t: good_logit_diff(lg, t).mean(), task, logits)


def test_logit_diff_check_on_ioi_prompts_of_one_length():
    """The issue's case: IOI prompts all have the same length (end_pos = the last position for every
    example) and one wrong answer each, so reading logits[:, -1] or only task.wrong[:, 0] used to pass."""
    from tutorial_lib.tasks.ioi import make_ioi

    ioi = make_ioi("zoo", n=12, seed=0)
    assert (ioi.end_pos == ioi.clean.shape[1] - 1).all() and ioi.wrong.shape[1] == 1
    logits = torch.randn(len(ioi), ioi.clean.shape[1], 3172, generator=torch.Generator().manual_seed(0))
    checks.check_logit_diff(good_logit_diff, ioi, logits)
    with pytest.raises(ExerciseError, match="you read the last position"):
        checks.check_logit_diff(last_position, ioi, logits)
    with pytest.raises(ExerciseError, match="only the first wrong answer"):
        checks.check_logit_diff(first_wrong_only, ioi, logits)


def test_the_padded_case_varies_end_pos_and_keeps_the_answer():
    from tutorial_lib.course.checks.nb00 import _varied_end_case

    task = _task(n=6, n_wrong=1)
    logits = torch.randn(6, 5, 50, generator=torch.Generator().manual_seed(1))
    var, var_logits = _varied_end_case(task, logits)
    assert len(set(var.end_pos.tolist())) > 1
    assert (var.end_pos < var_logits.shape[1] - 1).all()  # the last position is padding for every example
    assert var.wrong.shape == (6, 2) and not (var.wrong[:, 1:] == var.answers[:, None]).any()
    assert torch.equal(var.wrong[:, :1], task.wrong)
    assert torch.allclose(var.final_logits(var_logits), task.final_logits(logits))
    assert var.clean.shape == var.corrupt.shape == var_logits.shape[:2]


def _right(model, clean, corrupt, layer):
    name = f"blocks.{layer}.hook_mlp_out"
    _, cache = model.run_with_cache(corrupt, names_filter=name)
    with model.hooks(fwd_hooks=[(name, lambda act, hook: cache[name])]):
        return model(clean)


def test_patch_hook_check_catches_a_leaked_hook(tiny_model):
    task = _task()
    corrupt = torch.randint(0, 50, task.clean.shape)

    def leaky(model, clean, corrupt, layer):
        name = f"blocks.{layer}.hook_mlp_out"
        _, cache = model.run_with_cache(corrupt, names_filter=name)
        model.add_hook(name, lambda act, hook: cache[name])
        return model(clean)

    with pytest.raises(ExerciseError, match="still attached"):
        checks.check_patch_hook(leaky, tiny_model, task.clean, corrupt)
    tiny_model.reset_hooks()

    checks.check_patch_hook(_right, tiny_model, task.clean, corrupt, layer=1)
    checks.check_patch_hook(_right, tiny_model, task.clean, corrupt, layer=0)
    with pytest.raises(ExerciseError, match="equal the clean run"):
        checks.check_patch_hook(lambda m, c, k, l: m(c), tiny_model, task.clean, corrupt)


def test_patch_hook_check_says_how_the_logits_differ(tiny_model):
    g = torch.Generator().manual_seed(2)
    clean = torch.randint(0, 50, (4, 6), generator=g)
    corrupt = torch.randint(0, 50, (4, 6), generator=g)

    def swapped(model, clean, corrupt, layer):  # the case: the clean activation patched into the corrupted run
        return _right(model, corrupt, clean, layer)

    def corrupted_run(model, clean, corrupt, layer):
        return model(corrupt)

    def last_only(model, clean, corrupt, layer):
        name = f"blocks.{layer}.hook_mlp_out"
        _, cache = model.run_with_cache(corrupt, names_filter=name)

        def hook(act, hook):
            act = act.clone()
            act[:, -1] = cache[name][:, -1]
            return act

        with model.hooks(fwd_hooks=[(name, hook)]):
            return model(clean)

    def hardcoded_layer(model, clean, corrupt, layer):  # ignores `layer`: passes at layer 0 alone
        return _right(model, clean, corrupt, 0)

    def final_position(model, clean, corrupt, layer):
        return _right(model, clean, corrupt, layer)[:, -1]

    with pytest.raises(ExerciseError, match="clean and corrupted are swapped"):
        checks.check_patch_hook(swapped, tiny_model, clean, corrupt)
    with pytest.raises(ExerciseError, match="equal the corrupted run"):
        checks.check_patch_hook(corrupted_run, tiny_model, clean, corrupt)
    with pytest.raises(ExerciseError, match="only the last position"):
        checks.check_patch_hook(last_only, tiny_model, clean, corrupt)
    with pytest.raises(ExerciseError, match="MLP 0 instead of MLP 1"):
        checks.check_patch_hook(hardcoded_layer, tiny_model, clean, corrupt, layer=0)
    with pytest.raises(ExerciseError, match=r"pos dimension .* is missing"):
        checks.check_patch_hook(final_position, tiny_model, clean, corrupt)


def test_head_output_check_accepts_right_and_rejects_wrong(tiny_model, capsys):
    """Checked against TransformerLens's own per-head result (hook_result), an independent engine."""
    tokens = torch.randint(0, tiny_model.cfg.d_vocab, (2, 6), generator=torch.Generator().manual_seed(0))

    def good(cache, model, layer, head):
        return cache[f"blocks.{layer}.attn.hook_z"][:, :, head] @ model.W_O[layer, head]

    checks.check_head_output(good, tiny_model, tokens)
    assert "passed" in capsys.readouterr().out
    assert not tiny_model.cfg.use_attn_result  # the check switched hook_result off again
    with torch.no_grad():
        for block in tiny_model.blocks:
            block.attn.b_O.add_(0.5)  # a visible bias, so that adding it is a slip the check can see

    def with_bias(cache, model, layer, head):
        return good(cache, model, layer, head) + model.b_O[layer]

    def whole_layer(cache, model, layer, head):
        return cache[f"blocks.{layer}.hook_attn_out"]

    def values(cache, model, layer, head):
        return cache[f"blocks.{layer}.attn.hook_v"][:, :, head] @ model.W_O[layer, head]

    def head_zero(cache, model, layer, head):
        return good(cache, model, layer, 0)

    def no_w_o(cache, model, layer, head):
        return cache[f"blocks.{layer}.attn.hook_z"][:, :, head]

    with pytest.raises(ExerciseError, match="you added the layer's bias b_O"):
        checks.check_head_output(with_bias, tiny_model, tokens)
    with pytest.raises(ExerciseError, match="the whole layer's attention output"):
        checks.check_head_output(whole_layer, tiny_model, tokens)
    with pytest.raises(ExerciseError, match="you used hook_v"):
        checks.check_head_output(values, tiny_model, tokens)
    with pytest.raises(ExerciseError, match=r"the output of a0\.h1: you computed the output of a0\.h0, not a0\.h1"):
        checks.check_head_output(head_zero, tiny_model, tokens)
    with pytest.raises(ExerciseError, match="expected shape"):
        checks.check_head_output(no_w_o, tiny_model, tokens)


def test_could_have_failed_check_accepts_right_and_names_each_slip(capsys):
    import re
    import textwrap

    from learner_wrong_nb00 import WRONG

    from tutorial_lib.course.checks.common import ExerciseError
    from tutorial_lib.course.checks.nb00 import check_could_have_failed

    def right(row):
        lo, hi = row["range"]
        room = 0.05 * (hi - lo)
        return (row["draws"] >= 20 and lo + room <= row["baseline"] <= hi - room
                and (row["interval"][0] > 0 or row["interval"][1] < 0))

    check_could_have_failed(right)
    assert "check_could_have_failed passed" in capsys.readouterr().out
    for label, (source, pattern) in WRONG["could_have_failed"].items():
        space: dict = {}
        exec(textwrap.dedent(str(source)), space)
        with pytest.raises(ExerciseError) as err:
            check_could_have_failed(space["could_have_failed"])
        assert re.search(pattern, str(err.value)), (label, str(err.value))
