"""studies: the glue each notebook uses, one module per study.

``greater_than`` (notebook 01: year tables, the circuit search, the panel) and ``spectral``
(notebook 03: train-or-load with a live monitor, candidate circuits, the panel).

Imports every layer below it (core, tasks, methods, zoo, viz), never ``course``.
"""
