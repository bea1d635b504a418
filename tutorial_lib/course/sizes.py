"""How big a notebook's sweeps are: chosen by model and device, said out loud, one setting to shrink them.

A sweep that takes seconds on the zoo model takes minutes on GPT-2 on a laptop CPU, and the papers' own sizes
(Li & Subramani: n = 1,000 examples per task, K from 1% to 30%) need a large GPU for their 1-8 B models. Each
notebook asks :func:`pick` for its sizes, giving the course's size (``full``), a smaller one for a large model on
a CPU (``cpu``), a tiny one for quick checks (``quick``) and, where they differ, the paper's (``paper``, used on a
large GPU) and one for a small GPU such as Colab's free T4 (``t4``):

>>> n = pick("examples per task", paper=1000, t4=256, full=128, cpu=48, quick=16, model=model)  # doctest: +SKIP
using 1000 examples per task (the paper's size: a large GPU, NVIDIA H200 with 139 GiB)

``TUTORIAL_SIZE`` chooses: ``auto`` (default: by model and device, below), ``paper``, ``t4``, ``full``, ``cpu`` or
``quick`` (what the course's test runs use). In ``auto``:

========================================  ==========  ==================================================
the model's weights sit on                size class  when ``paper`` / ``t4`` are not given
========================================  ==========  ==================================================
a CUDA GPU with >= 30 GiB (A100, H100)    ``paper``   ``full``
a smaller CUDA GPU (T4, L4) or Apple MPS  ``t4``      ``full``
the CPU, a model of >= 50 M parameters    ``cpu``
the CPU, a smaller model (the zoo's)      ``full``
========================================  ==========  ==================================================
"""
from __future__ import annotations

import os

MODES = ("auto", "paper", "t4", "full", "cpu", "quick")
LARGE_MODEL_PARAMS = 50_000_000
LARGE_GPU_GIB = 30  # an A100 40 GB / H100 / H200 is "large"; a T4 (16 GB) or L4 (24 GB) is not
GIB = 1 << 30


def size_mode() -> str:
    mode = os.environ.get("TUTORIAL_SIZE", "auto") or "auto"
    if mode not in MODES:
        raise ValueError(f"TUTORIAL_SIZE={mode!r} is not one of {MODES}")
    return mode


def _device_of(model):
    if model is None:
        return None
    params = list(model.parameters())
    return params[0].device if params else None


def is_large_on_cpu(model) -> bool:
    """True for a model of at least 50M parameters whose weights sit on the CPU."""
    if model is None:
        return False
    params = list(model.parameters())
    return sum(p.numel() for p in params) >= LARGE_MODEL_PARAMS and params[0].device.type == "cpu"


def gpu_memory_gib(device) -> float | None:
    """Total memory of a CUDA ``device`` in GiB (None for any other device)."""
    if device is None or getattr(device, "type", None) != "cuda":
        return None
    import torch

    return torch.cuda.get_device_properties(device).total_memory / GIB


def size_class(model=None) -> tuple[str, str]:
    """``(class, why)``: the size class in force (``paper``, ``t4``, ``full``, ``cpu`` or ``quick``) and why."""
    mode = size_mode()
    if mode != "auto":
        return mode, f"TUTORIAL_SIZE={mode}"
    device = _device_of(model)
    kind = getattr(device, "type", None)
    if kind == "cuda":
        import torch

        gib = gpu_memory_gib(device)
        name = torch.cuda.get_device_name(device)
        if gib >= LARGE_GPU_GIB:
            return "paper", f"a large GPU, {name} with {gib:.0f} GiB"
        return "t4", f"a smaller GPU, {name} with {gib:.0f} GiB"
    if kind == "mps":
        return "t4", "an Apple GPU (MPS)"
    if is_large_on_cpu(model):
        return "cpu", "a large model on a CPU"
    return "full", "a small model" if model is not None else "no model given"


def resolve(model=None) -> str:
    """The size class as the notebooks' ``== "full"`` tests read it: ``full`` (also for ``paper`` / ``t4``), ``cpu``
    or ``quick``."""
    kind = size_class(model)[0]
    return "full" if kind in ("paper", "t4") else kind


def pick(what: str, *, full: int, cpu: int, quick: int, paper: int | None = None, t4: int | None = None, model=None,
         verbose: bool = True):
    """The size to use for ``what`` by model and device (see the module docstring); prints which and why (unless
    ``verbose=False``). ``paper`` / ``t4`` default to ``full``."""
    kind, why = size_class(model)
    sizes = {"paper": full if paper is None else paper, "t4": full if t4 is None else t4, "full": full, "cpu": cpu,
             "quick": quick}
    n = sizes[kind]
    if verbose:
        label = {"paper": "the paper's size" if paper is not None else "full size", "t4": "a smaller GPU's size",
                 "full": "full size", "cpu": "reduced for the CPU", "quick": "quick checks"}[kind]
        hint = ""
        if paper is not None and paper != n:
            hint = f"; the paper's {paper} on a large GPU or with TUTORIAL_SIZE=paper"
        elif kind == "cpu" and full != n:
            hint = f"; {full} with a GPU or TUTORIAL_SIZE=full"
        print(f"using {n} {what} ({label}: {why}{hint})")
    return n
