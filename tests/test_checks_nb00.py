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
    with pytest.raises(ExerciseError, match="values differ"):
        checks.check_zero_head_hook(wrong_axis)
    with pytest.raises(ExerciseError, match="not written yet"):
        checks.check_zero_head_hook(unfinished)
    with pytest.raises(ExerciseError, match="returned None"):
        checks.check_zero_head_hook(lambda z, hook, head: None)


def _task(n=4, T=5, vocab=50):
    g = torch.Generator().manual_seed(0)
    clean = torch.randint(0, vocab, (n, T), generator=g)
    return TaskData("toy", [""] * n, [""] * n, clean, clean.clone(), torch.full((n,), T - 1),
                    torch.randint(0, vocab, (n,), generator=g), torch.randint(0, vocab, (n, 2), generator=g))


def test_logit_diff_check(tiny_model):
    task = _task()
    logits = tiny_model(task.clean)
    checks.check_logit_diff(lambda lg, t: t.logit_diff(lg), task, logits)
    with pytest.raises(ExerciseError):
        checks.check_logit_diff(lambda lg, t: t.logit_diff(lg)[:2], task, logits)  # wrong shape
    with pytest.raises(ExerciseError):  # reads the last position instead of end_pos and the first wrong only
        checks.check_logit_diff(lambda lg, t: lg[:, 0].gather(1, t.answers[:, None])[:, 0], task, logits)


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

    def right(model, clean, corrupt, layer):
        name = f"blocks.{layer}.hook_mlp_out"
        _, cache = model.run_with_cache(corrupt, names_filter=name)
        with model.hooks(fwd_hooks=[(name, lambda act, hook: cache[name])]):
            return model(clean)

    checks.check_patch_hook(right, tiny_model, task.clean, corrupt, layer=1)
    with pytest.raises(ExerciseError):
        checks.check_patch_hook(lambda m, c, k, l: m(c), tiny_model, task.clean, corrupt)
