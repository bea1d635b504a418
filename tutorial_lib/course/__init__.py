"""course: what the notebooks call around the science.

``setup`` (the first cell: environment, renderer, seeds), ``exercises`` (builds the learner's and the
solution notebooks from ``notebooks/src``: ``python -m tutorial_lib.course.exercises build``),
``checks`` (the inline exercise checks), ``claims`` (claims a cell states and checks), ``sizes`` (the
paper's or the course's size), ``colab`` (the repository address and Colab install lines).

The top layer: it may import every other layer; nothing imports it but ``tutorial_lib`` itself.
"""
