"""The first cell of every notebook: ``from tutorial_lib import setup; env = setup()``.

It finds out where the notebook runs (Colab, JupyterLab, VS Code, CI, plain Python), and then

* on Colab, installs only the packages that are missing -- pinned so that Colab's own torch and numpy
  are never replaced -- and enables Colab's custom widget manager (ipywidgets need it there);
* picks a plotly renderer that draws without internet (the plotly.js bundle is embedded, not fetched);
* makes circuitsvis inline its JavaScript bundle instead of probing google.com and using a CDN, so an
  offline learner still sees the attention view and no request leaves the machine;
* silences the DeprecationWarning TransformerLens 3.9 prints on every model construction;
* seeds torch, numpy and random;
* sets ``TOKENIZERS_PARALLELISM=false`` unless already set (the one environment variable it touches: it
  stops the tokenizers library warning, or deadlocking, when a notebook forks after tokenizing).
"""
from __future__ import annotations

import importlib.util
import os
import random
import subprocess
import sys
import warnings
from dataclasses import dataclass
from typing import Callable, Optional

from ..core.device import get_device

# Packages the course imports, and the pip requirement that provides each (pinned like pyproject.toml).
REQUIRED = {
    "transformer_lens": "transformer-lens==3.9.0",
    "circuitsvis": "circuitsvis>=1.43",
    "jaxtyping": "jaxtyping>=0.2.25",
    "safetensors": "safetensors>=0.4",
    "plotly": "plotly>=5.24",
    "ipywidgets": "ipywidgets>=7.7",
    "sklearn": "scikit-learn>=1.3",
    "tqdm": "tqdm>=4.60",
}
# Never upgraded or replaced by setup(): Colab's builds are matched to its CUDA and its other packages.
PROTECTED = ("torch", "numpy")


@dataclass
class Environment:
    """What :func:`setup` found and did."""

    where: str  # 'colab' | 'vscode' | 'ci' | 'jupyter' | 'python'
    installed: list
    plotly_renderer: str
    device: str
    seed: int

    def __str__(self) -> str:
        extra = f", installed {self.installed}" if self.installed else ""
        return f"running in {self.where} on {self.device}, plotly renderer {self.plotly_renderer!r}, seed {self.seed}{extra}"


def detect_environment() -> str:
    """'colab', 'ci', 'vscode', 'jupyter' or 'python'."""
    if "google.colab" in sys.modules or os.environ.get("COLAB_RELEASE_TAG"):
        return "colab"
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        return "ci"
    if os.environ.get("VSCODE_PID") or os.environ.get("VSCODE_CWD") and "ipykernel" in sys.modules:
        return "vscode"
    if "ipykernel" in sys.modules:
        return "jupyter"
    return "python"


def missing_packages(required: Optional[dict] = None) -> list[str]:
    """The pip requirements of ``required`` (default :data:`REQUIRED`) whose import name cannot be found."""
    required = REQUIRED if required is None else required
    return [req for mod, req in required.items() if importlib.util.find_spec(mod) is None]


def _installed_version(dist: str) -> Optional[str]:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return None


def pip_install_command(requirements: list[str], constraints_path: str) -> list[str]:
    """The pip command setup() runs: ``requirements`` under a constraints file pinning torch and numpy."""
    return [sys.executable, "-m", "pip", "install", "-q", "-c", constraints_path, *requirements]


def installed_pins() -> list[str]:
    """``name==version`` for every distribution installed (torch and numpy first), so that pip can only add
    packages, never replace one (Colab's own builds stay); versions pip cannot read are left out."""
    from importlib.metadata import distributions

    from packaging.version import InvalidVersion, Version

    seen, pins = set(), [f"{p}=={v}" for p in PROTECTED if (v := _installed_version(p))]
    seen.update(PROTECTED)
    for dist in distributions():
        name = (dist.metadata["Name"] or "").lower()
        if not name or name in seen:
            continue
        try:
            Version(dist.version)
        except InvalidVersion:
            continue
        seen.add(name)
        pins.append(f"{name}=={dist.version}")
    return pins


def install_missing(runner: Callable[[list[str]], int] = None) -> list[str]:
    """Install missing packages, pinning every installed distribution (torch and numpy included) so pip can only
    add packages, never replace one.

    ``runner`` runs a command list and returns its exit code (``subprocess.call`` by default; tests
    pass a fake). Returns the requirements that were installed.
    """
    import tempfile

    todo = missing_packages()
    if not todo:
        return []
    runner = runner or subprocess.call
    pins = installed_pins()
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write("\n".join(pins) + "\n")
        cons = f.name
    code = runner(pip_install_command(todo, cons))
    if code != 0:
        raise RuntimeError(f"pip could not install {todo} (exit code {code}); run the command by hand to see why")
    return todo


def choose_plotly_renderer(where: str) -> str:
    """A renderer that draws offline: Colab's own, else embedded plotly.js (no CDN)."""
    if where == "colab":
        return "colab"
    if where == "vscode":
        return "vscode+notebook"
    if where in ("jupyter", "ci"):
        return "plotly_mimetype+notebook"
    return "png" if importlib.util.find_spec("kaleido") else "json"


def make_circuitsvis_offline() -> None:
    """Make circuitsvis inline its bundled JavaScript and never probe the internet.

    By default its ``_repr_html_`` fetches http://google.com (1 s timeout) to decide between a CDN
    script and the inline bundle; the inline bundle works everywhere, so always use it.
    """
    try:
        import circuitsvis.utils.render as render
    except ImportError:
        return
    render.internet_on = lambda: False


def quiet_warnings() -> None:
    """Hide known, harmless warnings (TransformerLens 3.9 deprecation notices, tqdm's widget notice)."""
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    warnings.filterwarnings("ignore", category=FutureWarning)
    warnings.filterwarnings("ignore", message=".*IProgress not found.*")


def seed_everything(seed: int) -> None:
    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def setup(seed: int = 0, install: Optional[bool] = None, verbose: bool = True) -> Environment:
    """Prepare the notebook; call it in the first cell. Returns an :class:`Environment`.

    Args:
        seed: seeds torch, numpy and random.
        install: install missing packages (default: only on Colab). Torch and numpy are never touched.
        verbose: print one line saying what was found.
    """
    where = detect_environment()
    installed = []
    if install is None:
        install = where == "colab"
    if install:
        installed = install_missing()
    if where == "colab":
        try:
            from google.colab import output  # type: ignore

            output.enable_custom_widget_manager()
        except Exception as err:  # pragma: no cover - only on Colab
            print(f"could not enable Colab's widget manager: {err}")
    quiet_warnings()
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import plotly.io as pio

    renderer = choose_plotly_renderer(where)
    pio.renderers.default = renderer
    make_circuitsvis_offline()
    seed_everything(seed)

    env = Environment(where, installed, renderer, str(get_device()), seed)
    if verbose:
        print(f"tutorial_lib setup: {env}")
    return env
