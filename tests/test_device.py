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
