"""tutorial_lib: the small library under the circuits course notebooks.

>>> from tutorial_lib import setup, load_model
>>> env = setup()                 # first cell of every notebook
>>> model = load_model("auto")    # GPT-2 small if the hub can be reached, else the offline zoo model
"""
from . import checks  # noqa: F401
from .circuits import Circuit, ablation_effect, run_with_ablation  # noqa: F401
from .device import get_device  # noqa: F401
from .models import load_model, valid_names  # noqa: F401
from .notebook_setup import setup  # noqa: F401

__version__ = "0.1.0"
