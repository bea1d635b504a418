"""tutorial_lib: the small library under the circuits course notebooks."""
__version__ = "0.1.0"
