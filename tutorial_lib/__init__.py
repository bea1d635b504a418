"""tutorial_lib: the small library under the circuits course notebooks.

>>> from tutorial_lib import setup, load_model, checks
>>> env = setup()                 # first cell of every notebook
>>> model = load_model("auto")    # GPT-2 small if the hub can be reached, else the offline zoo model

The package is in layers, one folder each; imports point one way only
(core <- tasks <- methods, zoo <- viz <- studies <- course; ``tests/test_layers.py`` enforces it):
``core`` (components, hooks, circuits, controls, forward, device, paths), ``tasks`` (datasets, word
lists, tokenizers), ``methods`` (patching, EAP, consistency, spectral, ...), ``zoo`` (the offline models
and model loading), ``viz`` (figures, widgets), ``studies`` (each notebook's glue), ``course`` (set-up,
exercise builder, checks). This module only re-exports what the notebooks' first cells use.
"""
from .core.circuits import Circuit, ablation_effect, run_with_ablation  # noqa: F401
from .core.device import get_device  # noqa: F401
from .course import checks  # noqa: F401
from .course.setup import setup  # noqa: F401
from .zoo.loading import load_model, valid_names  # noqa: F401

from .core.version import VERSION as __version__  # noqa: F401,E402
