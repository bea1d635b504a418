"""Choose the compute device once: CUDA, then Apple's MPS, then the CPU.

Every function in the course that needs a device calls :func:`get_device` instead of
hard-coding ``"cuda"`` or ``"cpu"``, so a notebook written on a laptop runs unchanged on Colab.
"""
from __future__ import annotations

import os
from contextlib import contextmanager

import torch

_CHOSEN: torch.device | None = None


def get_device(device: str | torch.device | None = None) -> torch.device:
    """Return ``device`` as a :class:`torch.device`, or pick the best available one.

    The automatic choice is made once per process and then reused. Set the environment
    variable ``TUTORIAL_DEVICE`` (for example ``cpu``) to override it.

    >>> get_device("cpu")
    device(type='cpu')
    """
    global _CHOSEN
    if device is not None:
        try:
            return torch.device(device)
        except (RuntimeError, TypeError) as err:
            raise ValueError(
                f"unknown device {device!r}; use 'cuda', 'mps', 'cpu' or None for automatic"
            ) from err
    if _CHOSEN is None:
        forced = os.environ.get("TUTORIAL_DEVICE")
        if forced:
            _CHOSEN = torch.device(forced)
        elif torch.cuda.is_available():
            _CHOSEN = torch.device("cuda")
        elif getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
            _CHOSEN = torch.device("mps")
        else:
            _CHOSEN = torch.device("cpu")
    return _CHOSEN


def default_dtype(device: str | torch.device | None = None) -> torch.dtype:
    """The dtype a model is loaded in on ``device``: bfloat16 on a GPU that computes in it (CUDA compute
    capability 8.0 and up: A100, L4, H100 ...), float16 on an older GPU (a T4) or Apple's MPS, float32 on a CPU.

    >>> default_dtype("cpu")
    torch.float32
    """
    device = get_device(device)
    if device.type == "cuda":
        major, _ = torch.cuda.get_device_capability(device)
        return torch.bfloat16 if major >= 8 else torch.float16
    if device.type == "mps":
        return torch.float16
    return torch.float32


def available_ram_bytes() -> int | None:
    """RAM the system can give this process now (``MemAvailable``), or None if it cannot be read."""
    try:
        import psutil

        return int(psutil.virtual_memory().available)
    except Exception:  # psutil missing: read the kernel's own figure
        pass
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def free_memory_bytes(device: str | torch.device | None = None) -> int | None:
    """Free memory where a model's weights would live on ``device``: the GPU's free memory for CUDA
    (``torch.cuda.mem_get_info``), available RAM for the CPU and MPS (unified memory); None if unknown."""
    device = get_device(device)
    if device.type == "cuda":
        free, _total = torch.cuda.mem_get_info(device)
        return int(free)
    return available_ram_bytes()


MAX_GPU_WORK_BYTES = 16 << 30


def work_budget_bytes(device: str | torch.device | None = None, default: int = 1 << 28) -> int:
    """How many bytes of activations one chunk of an engine's work may hold on ``device``.

    On the CPU: ``default`` (the engines' own figure, measured on a 2-core laptop-class machine), or an eighth of
    the available RAM when that is less. On a CUDA GPU: a quarter of its free memory now, at least ``default`` and
    at most 16 GiB -- so a learner on a large GPU batches many runs at once, and one on a T4 with a 1 B model
    loaded gets what is left, not a fixed figure that may not fit.
    """
    device = get_device(device)
    free = free_memory_bytes(device)
    if device.type == "cuda" and free is not None:
        return int(min(MAX_GPU_WORK_BYTES, max(default, free // 4)))
    if free is not None:
        return int(max(1 << 24, min(default, free // 8)))
    return int(default)


@contextmanager
def stray_tensor_check():
    """Inside the block, a tensor created without a device lands on PyTorch's ``meta`` device, which holds no data:
    the first time it meets the model's tensors (or is read), PyTorch raises. On a GPU such a tensor would sit on
    the CPU beside CUDA activations, and the code would crash only there; this check finds it on a CPU-only
    machine (the tests run every engine and a training step inside it). Code that means the CPU says so
    (``device="cpu"``).

    >>> import torch
    >>> with stray_tensor_check():
    ...     torch.zeros(2).device
    device(type='meta')
    >>> torch.zeros(2).device
    device(type='cpu')
    """
    torch.set_default_device("meta")
    try:
        yield
    finally:
        torch.set_default_device(None)
