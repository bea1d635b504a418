"""Progress bars that end in their final state wherever a notebook is read.

``tqdm.auto`` draws an ipywidgets bar in a notebook. A widget's state is not in the saved notebook, so an
executed copy (nbconvert, nbval, an HTML export, a notebook opened later) shows the text it had when it was
first displayed -- ``0%`` -- and looks hung. Here, inside an IPython kernel, the bar is one plain-text
display output updated in place through its display id: JupyterLab, Colab and VS Code redraw it live, and
nbclient rewrites the stored output on every update, so a saved copy holds the last state
(``100%|██████████| 40/40 [00:03<00:00, ...]``) -- or nothing, for a bar made with ``leave=False``. It
needs no widget front end. Outside a kernel it is tqdm's ordinary terminal bar.

Use :func:`tqdm` exactly like ``tqdm.auto.tqdm``.
"""
from __future__ import annotations

import sys

from tqdm.std import tqdm as _std_tqdm

__all__ = ["tqdm", "in_kernel", "DisplayBar"]


def in_kernel() -> bool:
    """Whether code runs inside an IPython kernel (a notebook), not a terminal or plain Python."""
    ip = sys.modules.get("IPython")
    if ip is None:
        return False
    try:
        shell = ip.get_ipython()
    except Exception:  # pragma: no cover - a broken IPython install
        return False
    return shell is not None and getattr(shell, "kernel", None) is not None


class _Discard:
    def write(self, s):  # the text goes to the display output instead
        pass

    def flush(self):
        pass


class DisplayBar(_std_tqdm):
    """A tqdm bar drawn as one ``text/plain`` display output, updated in place (see the module docstring)."""

    def __init__(self, *args, **kwargs):
        self._handle = None
        kwargs["file"] = _Discard()
        kwargs.setdefault("mininterval", 0.5)
        kwargs.setdefault("ascii", False)  # block characters, as in a terminal (the discarded file has no encoding)
        super().__init__(*args, **kwargs)
        if not self.disable:
            from IPython.display import display
            self._handle = display({"text/plain": self._text()}, raw=True, display_id=True)

    def _text(self) -> str:
        return self.format_meter(**self.format_dict)

    def display(self, msg=None, pos=None):
        if self._handle is not None:
            self._handle.update({"text/plain": self._text() if msg is None else msg}, raw=True)
        return True


def tqdm(*args, **kwargs):
    """``tqdm.auto.tqdm``'s drop-in: a :class:`DisplayBar` in a notebook kernel, tqdm's terminal bar elsewhere."""
    if in_kernel():
        return DisplayBar(*args, **kwargs)
    return _std_tqdm(*args, **kwargs)
