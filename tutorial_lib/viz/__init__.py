"""viz: plotly figures, circuitsvis views and widgets.

``figures`` (general heatmaps, bars, lines, the attention view), ``patching`` (activation and path
patching, the lens), ``consistency`` (EAP scores and the consistency study), ``spectral`` (the
spectral recipe and the live training figure), ``widgets`` (the ablation panel).

Imports ``core``, ``tasks`` and ``methods`` (never ``studies`` or ``course``).
"""
