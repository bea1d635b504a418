"""core: the vocabulary and mechanics every other layer builds on.

Component names (``components``), hooks as context managers (``hooks``), circuits and ablations
(``circuits``), random controls and tests (``controls``), the device (``device``), where the course's
files live (``paths``), and ``forward``: running part of a model from a cache, the final LayerNorm plus
unembedding, which architectures the engines support, and checking a metric's output.

Imports nothing from the other layers (core <- tasks <- methods, zoo <- viz <- studies <- course).
"""
