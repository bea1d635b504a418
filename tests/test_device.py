"""core.device: the device, its default dtype, free memory, and the work budget the engines chunk by."""
import torch

import tutorial_lib.core.device as device
from tutorial_lib.core import forward


def test_work_budget_on_the_cpu_is_the_default_unless_ram_is_short(monkeypatch):
    monkeypatch.setattr(device, "available_ram_bytes", lambda: 64 << 30)
    assert device.work_budget_bytes("cpu", default=1 << 28) == 1 << 28
    monkeypatch.setattr(device, "available_ram_bytes", lambda: 1 << 30)  # 1 GiB free: an eighth of it
    assert device.work_budget_bytes("cpu", default=1 << 28) == 1 << 27
    monkeypatch.setattr(device, "available_ram_bytes", lambda: None)  # unknown: the default
    assert device.work_budget_bytes("cpu", default=1 << 28) == 1 << 28


def test_work_budget_on_a_gpu_follows_its_free_memory(monkeypatch):
    monkeypatch.setattr(device, "get_device", lambda d=None: torch.device("cuda", 0))
    for free, want in ((120 << 30, 16 << 30),      # an H200 mostly free: capped at 16 GiB
                       (10 << 30, 10 << 28),       # a T4 with a 1 B model loaded: a quarter of what is left
                       (100 << 20, 1 << 28)):      # nearly full: never below the CPU's default
        monkeypatch.setattr(device, "free_memory_bytes", lambda d=None, free=free: free)
        assert device.work_budget_bytes("cuda", default=1 << 28) == want


def test_the_patching_engine_chunks_by_the_budget(monkeypatch):
    from conftest import make_tiny_model

    model = make_tiny_model("toy")
    tokens = torch.randint(0, 50, (4, 8))
    base = forward.RunCache(model, tokens)
    big = forward.auto_chunk(model, base, 0, 4, 1000)
    monkeypatch.setattr(forward, "work_budget_bytes", lambda d, default: 1)
    assert forward.auto_chunk(model, base, 0, 4, 1000) == 1 < big


# ------------------------------------------------------------------ tensors on the wrong device, without a GPU
import pytest  # noqa: E402

from tutorial_lib.core.device import stray_tensor_check  # noqa: E402


def _family(name):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from test_faithfulness import family_task

    from tutorial_lib.zoo.families import tiny_family_model

    return tiny_family_model(name, seed=6), family_task()


@pytest.mark.parametrize("family", ["llama", "gemma2"])
def test_every_engine_runs_with_stray_tensors_caught(family):
    """Each engine once inside :func:`stray_tensor_check`: a tensor made without the model's device would be on
    ``meta`` and raise when it meets the model's (what a GPU would do with a CPU tensor)."""
    from tutorial_lib.methods import faithfulness as fa
    from tutorial_lib.methods.attribution import EAPGraph, eap_scores
    from tutorial_lib.methods.edge_ablation import EDGE_ABLATIONS, edge_cut_effects
    from tutorial_lib.methods.path_patching import path_patch

    from tutorial_lib.methods.patching import patch_heads, patch_mlps

    model, task = _family(family)
    with stray_tensor_check():
        patch_heads(model, task.clean, task.corrupt, task.logit_diff)
        patch_mlps(model, task.clean, task.corrupt, task.logit_diff, by_position=True)
        path_patch(model, task.clean, task.corrupt, ["a0.h1"], ["a1.h3.k"], task.logit_diff)
        eap_scores(model, task, metric="logit_diff")
        eap_scores(model, task, metric="logit_diff", ig_steps=2)
        fa.patched_metric(model, task, EAPGraph.from_model(model).edge_mask(), metric="logit_diff")
        for mode in EDGE_ABLATIONS:
            edge_cut_effects(model, task, mode, metric="logit_diff", edges=[("embed", "a1.h2.k")])


def _head_dropout_step(mask_fn):
    from tutorial_lib.zoo.build import make_multitask_model
    from tutorial_lib.tasks.tokenizers import zoo_tokenizer
    from tutorial_lib.zoo.train import grouped_next_token_loss

    tok = zoo_tokenizer()
    model = make_multitask_model(tok, n_layers=1, d_model=16, n_heads=2, d_head=8, d_mlp=32,
                                 positional_embedding_type="rotary", rotary_dim=8)
    tokens = torch.randint(1, 50, (3, 6), device="cpu")
    with stray_tensor_check():
        keep = mask_fn(0.5, torch.Generator(device="cpu").manual_seed(0), next(model.parameters()).device)
        loss = grouped_next_token_loss(model, [(tokens, torch.ones_like(tokens))], fast=True, head_keep=keep)
        loss.backward()
    return loss


def test_a_head_dropout_training_step_runs_with_stray_tensors_caught():
    from tutorial_lib.zoo.train import head_dropout_mask

    assert torch.isfinite(_head_dropout_step(head_dropout_mask))


def test_the_check_catches_the_old_head_dropout_mask():
    """Planted: the mask drawn on the generator's device and never moved to the model's (the GPU-only crash)."""
    def old(p, generator, device):
        return lambda B, H, dtype: (torch.rand(B, 1, H, 1, generator=generator) >= p).to(dtype)

    with pytest.raises((RuntimeError, NotImplementedError)):
        _head_dropout_step(old)
