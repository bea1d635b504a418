"""Choose the compute device once: CUDA, then Apple's MPS, then the CPU.

Every function in the course that needs a device calls :func:`get_device` instead of
hard-coding ``"cuda"`` or ``"cpu"``, so a notebook written on a laptop runs unchanged on Colab.
"""
from __future__ import annotations

import os

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
