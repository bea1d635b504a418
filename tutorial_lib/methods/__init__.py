"""methods: the interpretability methods. Each returns a result object and draws nothing.

Activation patching (``patching``), path patching and the discovery steps (``path_patching``,
``path_discovery``), circuit evaluation (``circuit_eval``), the lens and probes (``lens``), EAP
(``attribution``), consistency and specificity (``consistency``), the spectral signals and their
training monitor (``spectral``, ``spectral_monitor``), selectivity (``selectivity``) and head
ablation (``head_ablation``).

Imports ``core`` and ``tasks`` only; a result's ``.plot()`` is a one-line delegate to ``viz``.
"""
